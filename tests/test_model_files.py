"""Model files (TOML with ModelShape's fields) are accepted wherever a preset name is; bad files get one line."""

import pytest

from aihw.transformer.shapes import get_preset, load_model_file, resolve_model

LLAMA_7B = """name = "llama-2-7b-file"
hidden = 4096
layers = 32
heads = 32
kv_heads = 32
ffn = 11008
vocab = 32000
max_seq = 4096
gated_mlp = true
biases = false
norm = "rmsnorm"
learned_positions = false
tied_embeddings = false
"""


def test_a_model_file_gives_the_same_shape_as_the_preset(tmp_path):
    path = tmp_path / "llama.toml"
    path.write_text(LLAMA_7B)
    shape = resolve_model(str(path))
    assert shape.param_count() == get_preset("llama-2-7b").param_count() == 6_738_415_616
    assert resolve_model("LLAMA-2-7B") == get_preset("llama-2-7b")


@pytest.mark.parametrize("text, message", [
    ("hidden = 64\nlayers = 2\nheads = 4\nvocab = 10\n", "missing field"),
    ("hidden = 64\nlayers = 2\nheads = 5\nvocab = 10\nmax_seq = 8\n", "heads=5 must divide hidden=64"),
    ("hidden = 64\nlayers = 2\nheads = 4\nvocab = 10\nmax_seq = 8\nwidth = 3\n", "unknown field"),
    ("hidden = 64.5\nlayers = 2\nheads = 4\nvocab = 10\nmax_seq = 8\n", "whole number"),
    ("hidden = 64\nlayers = 2\nheads = 4\nvocab = 10\nmax_seq = 8\ngated_mlp = 1\n", "true or false"),
    ("hidden = [\n", "not valid TOML"),
])
def test_bad_model_files_are_one_clear_error(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_model_file(path)


def test_missing_file_and_unknown_name(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        resolve_model(str(tmp_path / "none.toml"))
    with pytest.raises(ValueError, match="model preset"):
        resolve_model("llama-9")
