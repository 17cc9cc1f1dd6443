"""Pruning: masks have the asked sparsity, 2:4 patterns, structured removal, and what each does to latency."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from aihw.cheaper import prune
from aihw.models import digits


@pytest.fixture(scope="module")
def setup():
    data = digits.load_digits()
    return digits.train_mlp(data, digits.TrainConfig(hidden=(64, 64), epochs=8)), data


def _mlp(hidden=(64, 64), seed=0):
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return digits.make_mlp(hidden).eval()


@settings(max_examples=40, deadline=None)
@given(st.floats(0.0, 0.99), st.sampled_from(["global", "layer"]))
def test_magnitude_prune_has_the_asked_sparsity(amount, scope):
    model = _mlp()
    pruned = prune.make_permanent(prune.magnitude_prune(model, amount, scope=scope))
    weights = [m.weight for m in pruned.modules() if isinstance(m, torch.nn.Linear)]
    if scope == "global":
        total = sum(w.numel() for w in weights)
        assert sum(int((w == 0).sum()) for w in weights) == round(amount * total)
    else:
        for w in weights:
            assert int((w == 0).sum()) == round(amount * w.numel())
    assert all(not hasattr(m, "weight_mask") for m in pruned.modules())
    assert prune.sparsity(_mlp()) == 0.0  # the original is untouched


def test_magnitude_prune_removes_the_smallest():
    model = _mlp()
    pruned = prune.make_permanent(prune.magnitude_prune(model, 0.5))
    kept = torch.cat([m.weight.detach()[m.weight != 0].abs() for m in pruned.modules() if isinstance(m, torch.nn.Linear)])
    dropped = torch.cat([o.weight.detach()[p.weight == 0].abs() for o, p in zip(model.modules(), pruned.modules(), strict=True)
                         if isinstance(o, torch.nn.Linear)])
    assert float(dropped.max()) <= float(kept.min())


def test_two_four_mask():
    w = torch.randn(8, 16, generator=torch.Generator().manual_seed(0))
    mask = prune.two_four_mask(w)
    assert torch.equal(mask.reshape(-1, 4).sum(dim=1), torch.full((32,), 2.0))
    groups, kept = w.abs().reshape(-1, 4), mask.reshape(-1, 4).bool()
    assert bool((groups[kept].reshape(-1, 2).min(dim=1).values >= groups[~kept].reshape(-1, 2).max(dim=1).values).all())
    model = prune.make_permanent(prune.semi_structured_prune(_mlp()))
    assert prune.sparsity(model) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="multiple of 4"):
        prune.two_four_mask(torch.randn(3, 6))


def test_prune_neurons_gives_a_smaller_dense_model_and_zero_is_identity():
    model = _mlp()
    same = prune.prune_neurons(model, 0.0)
    x = torch.randn(5, 64)
    assert torch.equal(same(x), model(x))
    small = prune.prune_neurons(model, 0.75)
    assert [m.out_features for m in small if isinstance(m, torch.nn.Linear)] == [16, 16, 10]
    assert digits.linear_flops(small, 1) < digits.linear_flops(model, 1) / 3
    tiny = prune.prune_neurons(model, 0.99)
    assert [m.out_features for m in tiny if isinstance(m, torch.nn.Linear)] == [1, 1, 10]
    with pytest.raises(ValueError, match="make_permanent"):
        prune.prune_neurons(prune.magnitude_prune(model, 0.5), 0.5)


def test_fine_tuning_keeps_zeros_and_recovers(setup):
    model, data = setup
    pruned = prune.magnitude_prune(model, 0.9)
    before = digits.accuracy(prune.make_permanent(prune.magnitude_prune(model, 0.9)), data.x_test, data.y_test)
    tuned = prune.fine_tune(pruned, data, epochs=3)
    assert prune.sparsity(tuned) >= 0.9 - 1e-6
    assert digits.accuracy(tuned, data.x_test, data.y_test) >= before - 0.02


def test_sweep_rows(setup):
    model, data = setup
    rows = prune.sparsity_sweep(model, data, levels=(0.5,), fine_tune_epochs=1)
    assert {(r["structure"], r["fine_tuned"]) for r in rows} == {("unstructured", False), ("unstructured", True),
                                                                   ("neurons", False), ("neurons", True)}
    by = {r["structure"]: r for r in rows}
    assert by["unstructured"]["flops"] == digits.linear_flops(model, 1)  # zeros are still multiplied
    assert by["neurons"]["flops"] < by["unstructured"]["flops"] / 2


def test_unstructured_zeros_do_not_speed_up_a_dense_kernel_but_removing_neurons_does():
    model = _mlp((512, 512))
    sparse = prune.make_permanent(prune.magnitude_prune(model, 0.9))
    slim = prune.prune_neurons(model, 0.75)
    for _ in range(3):  # timing on a shared machine: up to three tries, each the median of interleaved repeats
        t = digits.latencies({"dense": model, "sparse": sparse, "slim": slim}, torch.randn(128, 64), repeats=9)
        same = 0.6 < t["sparse"] / t["dense"] < 1.6  # same kernel, same work: zeros are multiplied too
        faster = t["slim"] < t["dense"] / 2  # ~13x fewer FLOP
        if same and faster:
            break
    assert same and faster, t


@pytest.mark.parametrize("call, match", [
    (lambda m: prune.magnitude_prune(m, 1.0), r"sparsity must be in \[0, 1\)"),
    (lambda m: prune.magnitude_prune(m, -0.1), "sparsity"),
    (lambda m: prune.prune(m, 0.3, structure="2:4"), "always 0.5"),
    (lambda m: prune.prune(m, 0.5, structure="neuron"), "did you mean 'neurons'"),
    (lambda m: prune.magnitude_prune(m, 0.5, scope="local"), "scope"),
    (lambda m: prune.prune_neurons(m[0], 0.5), "nn.Sequential"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call(_mlp())


def test_removing_half_the_neurons_of_the_chapters_mlp_removes_69_4_percent_of_weights():
    # 64 -> 256 -> 256 -> 10: 84,480 weights; halving both hidden layers leaves 25,856 (-69.4%, not -75%).
    from aihw.cheaper.prune import prune_neurons
    from aihw.models.digits import make_mlp

    model = make_mlp((256, 256))
    weights = lambda m: sum(layer.weight.numel() for layer in m if hasattr(layer, "weight"))  # noqa: E731
    assert weights(model) == 84_480 and weights(prune_neurons(model, 0.5)) == 25_856
    assert 1 - 25_856 / 84_480 == pytest.approx(0.694, abs=0.0005)


def test_sparsity_sweep_seeds_gives_paired_intervals_and_caches(tmp_path, monkeypatch):
    from aihw.stats import mean_ci95, paired_difference_ci95

    data = digits.load_digits()
    config = digits.TrainConfig(hidden=(16, 16), epochs=2)
    kwargs = dict(seeds=(0, 1, 2), levels=(0.5, 0.9), structures=("unstructured", "neurons"), fine_tune_epochs=1,
                  cache_dir=tmp_path)
    result = prune.sparsity_sweep_seeds(config, data, **kwargs)
    assert result["seeds"] == [0, 1, 2] and len(result["rows"]) == 2 * 2 * 2
    assert len(list(tmp_path.glob("digits-mlp-*.pt"))) == 3  # one base model per seed, cached
    assert len(list(tmp_path.glob("prune-seeds-*.json"))) == 1
    models, _ = digits.trained_mlps(config, (0, 1, 2), data=data, cache_dir=tmp_path)
    assert result["dense"] == [digits.accuracy(m, data.x_test, data.y_test) for m in models]
    for row in result["rows"]:
        assert len(row["accuracies"]) == 3
        assert row["ci"] == mean_ci95(row["accuracies"])  # the interval comes from the per-seed values
        assert row["vs_dense"] == paired_difference_ci95(row["accuracies"], result["dense"])
        assert row["ci"].low <= row["ci"].mean <= row["ci"].high
    # each seed's row is that seed's own single-seed sweep (base model and fine-tuning seeded alike)
    single = prune.sparsity_sweep(models[1], data, levels=(0.5, 0.9), fine_tune_epochs=1, seed=1)
    assert [r["accuracy"] for r in single] == [r["accuracies"][1] for r in result["rows"]]
    assert len({tuple(r["accuracies"]) for r in result["rows"]}) > 1
    assert any(len(set(r["accuracies"])) > 1 for r in result["rows"])  # the seeds really differ

    def no_training(*_a, **_k):
        raise AssertionError("the second call must read the cache")

    monkeypatch.setattr(prune, "sparsity_sweep", no_training)
    again = prune.sparsity_sweep_seeds(config, data, **kwargs)
    assert [r["accuracies"] for r in again["rows"]] == [r["accuracies"] for r in result["rows"]]
    with pytest.raises(ValueError, match="structure"):
        prune.sparsity_sweep_seeds(config, data, **{**kwargs, "structures": ("diagonal",)})
