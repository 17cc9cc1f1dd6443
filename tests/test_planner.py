"""Planner: what it proposes fits (per the memory estimator), the ranking follows the time terms, bad input."""

import json

import pytest

from aihw.catalogue.hardware import get_chip
from aihw.cli import main
from aihw.memory import MemoryConfig, estimate
from aihw.pipeline_sim import bubble_fraction
from aihw.planner import Cluster, PlanConfig, flops_per_token, plan

CFG = PlanConfig(model="llama-2-13b", cluster=Cluster(chip="H100 SXM", chips_per_node=8, nodes=2),
                 global_batch=64, seq=2048)


@pytest.fixture(scope="module")
def result():
    return plan(CFG)


def test_never_proposes_what_does_not_fit(result):
    capacity = CFG.memory_fraction * get_chip("H100 SXM").memory_bytes
    assert result.ranked and result.too_big
    for x in result.ranked:
        est = estimate(MemoryConfig(model=CFG.model, batch=CFG.micro_batch, seq=2048, recompute=x.recompute,
                                    zero=x.zero, dp=x.dp, tp=x.tp, pp=x.pp))
        assert x.memory_bytes == pytest.approx(est.per_device_bytes)  # the memory chapter's estimator
        assert x.memory_bytes <= capacity
        assert x.dp * x.tp * x.pp == 16 and x.micro_batches * x.dp * CFG.micro_batch == 64
    assert all(x.memory_bytes > capacity for x in result.too_big)


def test_ranked_by_step_time_and_terms(result):
    steps = [x.step_s for x in result.ranked]
    assert steps == sorted(steps)
    for x in result.ranked:
        assert x.times["bubble"] == pytest.approx(
            x.times["compute"] * bubble_fraction(x.pp, x.micro_batches, convention="of_ideal"))
        assert (x.times["tp_comm"] == 0) == (x.tp == 1) and (x.times["dp_comm"] == 0) == (x.dp == 1)
        assert 0 < x.mfu_achieved <= CFG.mfu
    assert "Best: " in result.to_dict()["why"][0]


def test_tensor_parallel_across_nodes_costs_more():
    def tp8(cluster):
        cfg = PlanConfig(model="llama-2-13b", cluster=cluster, global_batch=8, seq=2048, zero_stages=(0,),
                         recompute=("full",))
        return next(x for x in plan(cfg).ranked + plan(cfg).too_big if (x.tp, x.pp) == (8, 1))
    inside, across = tp8(Cluster(chips_per_node=8, nodes=1)), tp8(Cluster(chips_per_node=1, nodes=8))
    assert inside.times["compute"] == pytest.approx(across.times["compute"])
    assert across.times["tp_comm"] > 5 * inside.times["tp_comm"]  # InfiniBand NDR vs NVLink 4 per chip: ~9x


def test_flops_per_token_recompute():
    m = CFG.model
    none, executed = flops_per_token(m, 2048, "none")
    assert none == executed and none > 6 * m.layers * m.layer_params()
    _, full = flops_per_token(m, 2048, "full")
    _, selective = flops_per_token(m, 2048, "selective")
    assert none < selective < full


def test_nothing_fits_is_explained():
    small = plan(PlanConfig(model="llama-2-70b", cluster=Cluster(chips_per_node=2, nodes=1), global_batch=8))
    assert small.best is None and "No layout fits" in small.to_dict()["why"][0]


def test_config_is_frozen():
    with pytest.raises(AttributeError):
        CFG.mfu = 0.5  # type: ignore[misc]


@pytest.mark.parametrize("make, match", [
    (lambda: Cluster(nodes=0), "nodes must be a positive integer"),
    (lambda: Cluster(chip="H10"), "unknown chip"),
    (lambda: Cluster(network="infiniband xdr"), "unknown network"),
    (lambda: PlanConfig(mfu=0), "mfu must be in \\(0, 1\\]"),
    (lambda: PlanConfig(mfu=1.2), "mfu must be in \\(0, 1\\]"),
    (lambda: PlanConfig(model="llama-3"), "did you mean"),
    (lambda: PlanConfig(zero_stages=(4,)), "zero_stages"),
    (lambda: PlanConfig(precision="int8"), "precision"),
    (lambda: PlanConfig(tp=3), "tp=3 must divide the 40 attention heads and the hidden size 5120"),
    (lambda: PlanConfig(pp=3), "pp=3 stages must divide the 40 layers"),
    (lambda: PlanConfig(pp=0), "pp must be a positive integer"),
    (lambda: PlanConfig(micro_batches=0), "micro_batches \\(m\\) must be a positive integer"),
    (lambda: PlanConfig(tp=5, cluster=Cluster(nodes=1)), "tp x pp = 5 must divide the cluster's 8 chips"),
])
def test_bad_input(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_cli_json_and_errors(capsys):
    assert main(["plan", "--model", "gpt2-small", "--nodes", "1", "--global-batch", "64", "--seq", "1024",
                 "--top", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["ranked"]) == 3 and out["ranked"][0]["step_s"] <= out["ranked"][1]["step_s"]
    assert out["assumptions"] and out["why"]
    assert main(["plan", "--model", "gpt2-small", "--nodes", "1"]) == 0
    assert "Best:" in capsys.readouterr().out
    for bad, words in ((["--nodes", "0"], "nodes"), (["--mfu", "1.5"], "mfu"), (["--mfu", "0"], "mfu"),
                       (["--zero", "x"], "--zero"), (["--top", "0"], "--top"), (["--pp", "3"], "40 layers"),
                       (["--tp", "3"], "40 attention heads"), (["--micro-batches", "0"], "--micro-batches")):
        assert main(["plan", *bad]) == 2
        err = capsys.readouterr().err
        assert err.startswith("aihw: error:") and words in err and err.count("\n") == 1


def test_pinned_degrees_and_micro_batches():
    pinned = plan(PlanConfig(model="llama-2-13b", cluster=Cluster(nodes=2), global_batch=64, seq=2048, tp=4,
                             pp=2, micro_batches=32))
    assert pinned.ranked and {(x.dp, x.tp, x.pp, x.micro_batches) for x in pinned.ranked} == {(2, 4, 2, 32)}
    free = {(x.dp, x.tp, x.pp, x.zero, x.recompute): x.step_s for x in plan(CFG).ranked}
    for x in pinned.ranked:  # pinning only filters: the same layouts cost the same
        assert x.step_s == pytest.approx(free[(x.dp, x.tp, x.pp, x.zero, x.recompute)])
