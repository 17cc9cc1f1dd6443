"""The shared subject: the digits data, the MLP, its cache and the three measurements."""


import pytest
import torch

from aihw.models import digits


@pytest.fixture(scope="module")
def data():
    return digits.load_digits()


SMALL = digits.TrainConfig(hidden=(32,), epochs=8)


def test_data_split(data):
    assert data.x_train.shape == (1347, 64) and data.x_test.shape == (450, 64)
    assert data.x_train.dtype == torch.float32 and data.y_train.dtype == torch.int64
    assert 0 <= float(data.x_train.min()) and float(data.x_train.max()) <= 1
    assert set(data.y_test.tolist()) == set(range(10))
    again = digits.load_digits()
    assert torch.equal(again.x_test, data.x_test)


def test_training_is_seeded_and_accurate(data):
    a, b = digits.train_mlp(data, SMALL), digits.train_mlp(data, SMALL)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    assert digits.accuracy(a, data.x_test, data.y_test) > 0.9
    assert torch.get_num_threads() >= 1


def test_cache_reuses_and_never_mixes_configs(data, tmp_path):
    first, _ = digits.trained_mlp(SMALL, data=data, cache_dir=tmp_path)
    files = list(tmp_path.glob("digits-mlp-*.pt"))
    assert len(files) == 1
    second, _ = digits.trained_mlp(SMALL, data=data, cache_dir=tmp_path)
    assert all(torch.equal(p, q) for p, q in zip(first.parameters(), second.parameters(), strict=True))
    other = digits.TrainConfig(hidden=(32,), epochs=9)
    digits.trained_mlp(other, data=data, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("digits-mlp-*.pt"))) == 2  # (training time: bench/bench_cheaper.py)


def test_cache_key_covers_every_field():
    base = digits.cache_key(SMALL, test_fraction=0.25, split_seed=0)
    changed = [digits.TrainConfig(hidden=(33,), epochs=8), digits.TrainConfig(hidden=(32,), epochs=8, lr=1e-3),
               digits.TrainConfig(hidden=(32,), epochs=8, batch_size=32), digits.TrainConfig(hidden=(32,), epochs=8,
                                                                                          seed=1),
               digits.TrainConfig(hidden=(32,), epochs=8, weight_decay=0.0)]
    keys = {digits.cache_key(c, test_fraction=0.25, split_seed=0) for c in changed}
    keys |= {digits.cache_key(SMALL, test_fraction=0.2, split_seed=0), digits.cache_key(SMALL, test_fraction=0.25,
                                                                                        split_seed=1)}
    assert base not in keys and len(keys) == 7


def test_sizes_flops_and_latency(data):
    model = digits.make_mlp((32,))
    params = 64 * 32 + 32 + 32 * 10 + 10
    assert digits.param_bytes(model) == 4 * params
    assert 4 * params < digits.size_bytes(model) < 4 * params + 4000
    assert digits.linear_flops(model, 2) == 2 * 2 * (64 * 32 + 32 * 10) + 2 * (32 + 10)
    with torch.no_grad():
        model[0].weight.zero_()
    assert digits.linear_flops(model, 1, count_zeros=False) == 2 * 32 * 10 + 42
    threads = torch.get_num_threads()
    t = digits.latencies({"a": model, "b": model}, data.x_test[:16], repeats=3, warmup=1)
    assert set(t) == {"a", "b"} and all(v > 0 for v in t.values())
    assert torch.get_num_threads() == threads
    card = digits.scorecard({"m": model}, data, batch=8, repeats=2)
    assert card[0]["name"] == "m" and 0 <= card[0]["accuracy"] <= 1 and card[0]["latency_s"] > 0


def test_bad_input():
    with pytest.raises(ValueError, match="hidden must be a non-empty tuple"):
        digits.TrainConfig(hidden=())
    with pytest.raises(ValueError, match="hidden width"):
        digits.TrainConfig(hidden=(0,))
    with pytest.raises(ValueError, match="epochs"):
        digits.TrainConfig(epochs=0)
    with pytest.raises(ValueError, match="lr"):
        digits.TrainConfig(lr=-1.0)
    with pytest.raises(ValueError, match="test_fraction"):
        digits.load_digits(test_fraction=1.0)
    with pytest.raises(ValueError, match="at least one model"):
        digits.latencies({}, torch.zeros(1, 64))
    with pytest.raises(ValueError, match="threads"):
        with digits.torch_threads(0):
            pass


def test_unreadable_cache_file_is_replaced(data, tmp_path):
    model, _ = digits.trained_mlp(SMALL, data=data, cache_dir=tmp_path)
    path = next(tmp_path.glob("digits-mlp-*.pt"))
    path.write_bytes(b"not a checkpoint")
    again, _ = digits.trained_mlp(SMALL, data=data, cache_dir=tmp_path)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), again.parameters(), strict=True))
    assert path.stat().st_size > 1000


def test_trained_mlps_one_cached_model_per_seed(data, tmp_path):
    models, same = digits.trained_mlps(SMALL, (0, 1, 2), data=data, cache_dir=tmp_path)
    assert same is data and len(models) == 3
    assert len(list(tmp_path.glob("digits-mlp-*.pt"))) == 3
    firsts = [m[0].weight.detach() for m in models]
    assert not torch.equal(firsts[0], firsts[1]) and not torch.equal(firsts[1], firsts[2])  # the seeds differ
    again, _ = digits.trained_mlps(SMALL, (0, 1, 2), data=data, cache_dir=tmp_path)
    assert all(torch.equal(a[0].weight, b[0].weight) for a, b in zip(models, again, strict=True))
    for bad in ((0,), (1, 1)):
        with pytest.raises(ValueError, match="two distinct seeds"):
            digits.trained_mlps(SMALL, bad, data=data, cache_dir=tmp_path)


def test_cached_json_computes_once_per_spec(tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"accuracies": [0.5, 0.75]}

    first = digits.cached_json("demo", {"a": 1}, compute, cache_dir=tmp_path)
    second = digits.cached_json("demo", {"a": 1}, compute, cache_dir=tmp_path)
    assert first == second == {"accuracies": [0.5, 0.75]} and len(calls) == 1
    digits.cached_json("demo", {"a": 2}, compute, cache_dir=tmp_path)
    assert len(calls) == 2 and len(list(tmp_path.glob("demo-*.json"))) == 2
    for path in tmp_path.glob("demo-*.json"):
        path.write_text("{truncated")
    assert digits.cached_json("demo", {"a": 1}, compute, cache_dir=tmp_path) == first and len(calls) == 3
