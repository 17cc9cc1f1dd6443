"""Fuzz model files: special files (FIFO, devices, directories, loops, over-long names) refused at once, and
random TOML text read or refused with one ValueError, each case under a time limit."""

from __future__ import annotations

import fuzz_support as F
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aihw.cli import main


def test_model_files_of_every_kind(tmp_path, capsys):
    paths = F.special_model_paths(tmp_path)
    violations = [(p[-40:], kind) for p in paths if (kind := F.check_model_file(p))]
    violations += [(p[-40:], kind) for p in paths if (kind := F.check_cli(["memory", "--model", p]))]
    violations += [(p[-40:], kind) for p in paths if (kind := F.check_cli(["plan", "--model", p, "--json"]))]
    assert not violations, violations
    assert main(["memory", "--model", paths[0]]) == 2  # the FIFO, refused rather than waited on
    assert "not a regular file" in capsys.readouterr().err


toml_values = st.one_of(st.integers(min_value=-10**20, max_value=10**20), st.floats(), st.booleans(),
                        st.text(max_size=10).map(lambda s: '"' + s.replace("\\", "").replace('"', "") + '"'))
fields = st.sampled_from(["hidden", "layers", "heads", "vocab", "max_seq", "kv_heads", "ffn", "experts", "top_k",
                          "name", "norm", "biases", "junk"])


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow,
                                                                                      HealthCheck.function_scoped_fixture])
@given(st.dictionaries(fields, toml_values, max_size=8), st.binary(max_size=40))
def test_random_model_files(tmp_path, table, garbage):
    text = "\n".join(f"{k} = {str(v).lower() if isinstance(v, bool) else v}" for k, v in table.items())
    path = tmp_path / "random.toml"
    path.write_bytes(text.encode() + (b"\n" + garbage if garbage and garbage[0] % 2 else b""))
    assert F.check_model_file(str(path)) is None, text
    assert F.check_cli(["memory", "--model", str(path), "--json"]) is None, text


@pytest.mark.parametrize("limit_exceeded", [True, False])
def test_size_limit_is_stated_and_enforced(tmp_path, limit_exceeded):
    from aihw._validate import MODEL_FILE_LIMIT
    from aihw.transformer.shapes import load_model_file

    body = 'hidden = 64\nlayers = 2\nheads = 4\nvocab = 100\nmax_seq = 128\n'
    path = tmp_path / "m.toml"
    path.write_text(body + "#" * (MODEL_FILE_LIMIT - len(body) + (1 if limit_exceeded else -100)))
    if limit_exceeded:
        with pytest.raises(ValueError, match="limit is 1,048,576 bytes"):
            load_model_file(path)
    else:
        assert load_model_file(path).hidden == 64
