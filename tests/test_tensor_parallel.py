"""Megatron tensor parallelism on 2 and 3 gloo ranks equals the dense block; all-reduces match the formula."""

import pytest
import torch

from aihw.models.tinygpt import TinyGPTConfig
from aihw.parallel.launch import LaunchConfig, launch
from aihw.parallel.tensor_parallel import (
    TensorParallelConfig,
    check_tp,
    tensor_parallel_worker,
    tp_comm_per_layer,
)


@pytest.mark.distributed
@pytest.mark.parametrize("tp, model", [(2, TinyGPTConfig(width=32, heads=4, seq_len=16)),
                                       (3, TinyGPTConfig(width=48, heads=6, seq_len=16))])
def test_parallel_block_equals_dense(tp, model):
    cfg = TensorParallelConfig(model=model, batch=2, repeats=1)
    results = launch(tensor_parallel_worker, cfg, config=LaunchConfig(world_size=tp, backend="gloo"))
    formula = tp_comm_per_layer(batch=2, seq=16, hidden=model.width, tp=tp)
    for r in results:
        assert {"output", "input_grad", "grad:attn.qkv.weight", "grad:mlp.proj.bias"} <= r["pairs"].keys()
        for name, (parallel, dense) in r["pairs"].items():
            torch.testing.assert_close(parallel, dense, rtol=1e-4, atol=1e-5, msg=name)
        comm = r["comm"]
        assert comm["forward"]["count"] == formula["forward_all_reduces"]
        assert comm["backward"]["count"] == formula["backward_all_reduces"]
        assert comm["forward"]["bytes"] + comm["backward"]["bytes"] == formula["bytes_per_step"]
    shard = results[0]["pairs"]["grad:mlp.fc.weight"][0]
    assert shard.shape == (4 * model.width // tp, model.width)


def test_formula():
    f = tp_comm_per_layer(batch=4, seq=1024, hidden=4096, tp=8, bytes_per_value=2)
    assert f["payload_bytes"] == 4 * 1024 * 4096 * 2
    assert f["ring_bytes_per_rank"] == pytest.approx(4 * f["payload_bytes"] * 2 * 7 / 8)


@pytest.mark.parametrize("tp, match", [(3, "tp=3 must divide the attention heads=4"),
                                       (0, "tp must be a positive integer")])
def test_tp_must_divide(tp, match):
    with pytest.raises(ValueError, match=match):
        check_tp(TinyGPTConfig(width=32, heads=4), tp)

