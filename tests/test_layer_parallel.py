"""Layer (model) parallelism: 2 and 3 gloo ranks and a one-process device split equal the unsplit model."""

import pytest
import torch

from aihw.models.tinygpt import TinyGPTConfig, random_batch
from aihw.parallel.launch import LaunchConfig, launch
from aihw.parallel.layer_parallel import (
    DeviceSplitModel,
    LayerParallelConfig,
    boundary_costs,
    layer_parallel_worker,
    reference_step,
    split_layers,
)

CFG = TinyGPTConfig(width=32, depth=6, heads=4, seq_len=16)


def _assert_grads_equal(grads, ref):
    assert grads.keys() == ref.keys()
    for name in ref:
        torch.testing.assert_close(grads[name], ref[name], rtol=1e-4, atol=1e-6, msg=name)


def test_split_layers():
    assert split_layers(6, 3) == [range(0, 2), range(2, 4), range(4, 6)]
    assert split_layers(6, 4) == [range(0, 1), range(1, 3), range(3, 5), range(5, 6)]  # uneven, ends lighter
    with pytest.raises(ValueError, match="stages=7 exceeds the 6 layers"):
        split_layers(6, 7)
    with pytest.raises(ValueError, match="stages"):
        split_layers(6, 0)


@pytest.mark.parametrize("devices", [["cpu"], ["cpu", "cpu"], ["cpu", "cpu", "cpu"]])
def test_device_split_equals_unsplit(devices):
    loss_ref, ref = reference_step(CFG, 4)
    model = DeviceSplitModel(CFG, devices)
    loss, costs = model.step(*random_batch(CFG, 4))
    assert loss == pytest.approx(loss_ref, rel=1e-6)
    _assert_grads_equal(model.grads(), ref)
    assert len(costs) == 2 * (len(devices) - 1)
    assert all(c["bytes"] == 4 * 16 * 32 * 4 for c in costs)  # batch x seq x width x fp32


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_cpu_split_equals_unsplit():
    _, ref = reference_step(CFG, 4)
    model = DeviceSplitModel(CFG, ["cuda:0", "cpu"])
    _, costs = model.step(*random_batch(CFG, 4))
    _assert_grads_equal(model.grads(), ref)
    assert all(c["seconds"] > 0 for c in costs)


@pytest.mark.distributed
@pytest.mark.parametrize("ranks", [2, 3])
def test_ranks_equal_unsplit(ranks):
    cfg = LayerParallelConfig(model=CFG, batch=4)
    results = launch(layer_parallel_worker, cfg, config=LaunchConfig(world_size=ranks, backend="gloo"))
    loss_ref, ref = reference_step(CFG, 4)
    assert results[-1]["loss"] == pytest.approx(loss_ref, rel=1e-6)
    grads = {}
    for r in results:
        grads.update(r["grads"])
    _assert_grads_equal(grads, ref)
    costs = boundary_costs([r["transfers"] for r in results])
    assert [(c["cut"], c["direction"]) for c in costs] == [
        (k, d) for k in range(ranks - 1) for d in ("forward", "backward")]
    assert all(c["bytes"] == 4 * 16 * 32 * 4 and c["seconds"] > 0 for c in costs)
