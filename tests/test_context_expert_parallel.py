"""Ring attention (context parallelism) and an expert-parallel MoE layer on gloo ranks equal one process.

Each world size is one launch (aihw.parallel.launch.run mixes workers), to keep process start-up rare.
"""

import pytest
import torch

from aihw.parallel import context_parallel as cp
from aihw.parallel import expert_parallel as ep
from aihw.parallel.collectives import compare_more_with_builtin
from aihw.parallel.launch import run

RING = cp.RingConfig()
MOE = (ep.MoEConfig(), ep.MoEConfig(all_to_all="p2p"), ep.MoEConfig(skew=3.0, capacity_factor=1.25))


@pytest.fixture(scope="module")
def results():
    two = run(((cp.ring_worker, RING),) + tuple((ep.moe_worker, c) for c in MOE), world_size=2, backend="gloo")
    three = run(((cp.ring_worker, RING), (compare_more_with_builtin, (1, 5, 64, 1000))), world_size=3,
                backend="gloo")
    four = run(tuple((ep.moe_worker, c) for c in MOE), world_size=4, backend="gloo")
    return {"ring": {2: two[0], 3: three[0]}, "moe": {2: two[1:], 4: four}, "collectives": three[1]}


@pytest.mark.parametrize("world", [2, 3])
def test_ring_attention_equals_one_process(results, world):
    for r in results["ring"][world]:
        torch.testing.assert_close(r["logits"], r["reference"])
        # 2 layers x (cp - 1) steps x K and V x batch 2 x 24/cp tokens x width 32 x 4 bytes
        assert r["bytes_sent"] == r["bytes_formula"] == 2 * (world - 1) * 2 * 2 * (24 // world) * 32 * 4


def test_ring_attention_bad_split():
    with pytest.raises(ValueError, match="cp=5 must divide the sequence of 24"):
        cp.run((RING,), world_size=5)


@pytest.mark.parametrize("world", [2, 4])
def test_moe_expert_parallel_equals_unsplit_layer(results, world):
    exact, p2p, skewed = results["moe"][world]
    for r, q in zip(exact, p2p, strict=True):
        torch.testing.assert_close(r["output"], r["reference"])
        torch.testing.assert_close(q["output"], r["output"])
        assert sum(r["tokens_per_expert"]) == world * 24 * 2  # every token reaches top_k = 2 experts
        remote = r["assignments"] - r["local_assignments"]
        assert r["dispatch_bytes_sent"] == remote * 16 * 4
    counts = skewed[0]["tokens_per_expert"]
    assert counts[0] == world * 24  # the skewed router sends every token to expert 0
    assert skewed[0]["imbalance"] == pytest.approx(max(counts) / (sum(counts) / 4)) == 2
    assert sum(r["dropped"] for r in skewed) > 0  # capacity 1.25 x fair share cannot hold them all


def test_send_recv_collectives_match_torch_distributed(results):
    rows = [row for rank_rows in results["collectives"] for row in rank_rows]
    assert {r["collective"] for r in rows} == {"all_gather", "reduce_scatter", "all_to_all"}
    assert all(r["exact"] for r in rows)


def test_moe_config_bad_input():
    with pytest.raises(ValueError, match="top_k=5 cannot exceed experts=4"):
        ep.MoEConfig(top_k=5)
    with pytest.raises(ValueError, match="all_to_all"):
        ep.MoEConfig(all_to_all="mpi")
