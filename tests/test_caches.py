"""Caches: weights verified by the sha256 digest stored beside them, cached JSON checked by shape, temporary
files unique per call and never left behind."""

from __future__ import annotations

import json
import threading

import pytest
import torch

from aihw.models.digits import cached_json, load_weights, save_weights


def _state() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    return {"w": torch.randn(8, 8), "b": torch.zeros(8)}


def test_weights_round_trip_with_their_digest(tmp_path):
    path = tmp_path / "m.pt"
    assert save_weights(_state(), path)
    assert (tmp_path / "m.pt.sha256").is_file()
    loaded = load_weights(path)
    assert loaded is not None and torch.equal(loaded["w"], _state()["w"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.pt", "m.pt.sha256"]  # no temp file left


@pytest.mark.parametrize("damage", ["flip", "truncate", "no-digest", "nan"])
def test_damaged_weights_are_not_loaded(tmp_path, damage):
    path = tmp_path / "m.pt"
    state = _state()
    if damage == "nan":
        state["w"][0, 0] = float("nan")
    save_weights(state, path)
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    elif damage == "truncate":
        path.write_bytes(bytes(data[: len(data) // 2]))
    elif damage == "no-digest":
        (tmp_path / "m.pt.sha256").unlink()
    assert load_weights(path) is None


def test_a_directory_at_the_cache_path_is_a_warning_and_leaves_nothing(tmp_path):
    path = tmp_path / "m.pt"
    path.mkdir()
    with pytest.warns(RuntimeWarning, match="not cached"):
        assert not save_weights(_state(), path)
    assert load_weights(path) is None
    assert [p.name for p in tmp_path.iterdir()] == ["m.pt"]


def test_threads_saving_at_once_all_succeed(tmp_path):
    path = tmp_path / "m.pt"
    errors: list[BaseException] = []

    def save() -> None:
        try:
            save_weights(_state(), path)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=save) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and load_weights(path) is not None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.pt", "m.pt.sha256"]


@pytest.mark.parametrize("content", ["[]", '{"a": 1}', "not json", '{"key": "x", "sha256": "0", "result": {}}'])
def test_cached_json_of_the_wrong_shape_is_recomputed(tmp_path, content):
    calls = []

    def compute() -> dict:
        calls.append(1)
        return {"value": 3}

    assert cached_json("t", {"a": 1}, compute, cache_dir=tmp_path) == {"value": 3}
    (cached,) = tmp_path.glob("t-*.json")
    assert cached_json("t", {"a": 1}, compute, cache_dir=tmp_path) == {"value": 3} and len(calls) == 1
    cached.write_text(content)
    assert cached_json("t", {"a": 1}, compute, cache_dir=tmp_path) == {"value": 3} and len(calls) == 2
    assert json.loads(cached.read_text())["result"] == {"value": 3}
    edited = json.loads(cached.read_text())
    edited["result"]["value"] = 4  # digest no longer matches
    cached.write_text(json.dumps(edited))
    assert cached_json("t", {"a": 1}, compute, cache_dir=tmp_path) == {"value": 3} and len(calls) == 3
