"""Naive, bucketed and DDP data parallelism on 2 and 3 gloo ranks equal one process on the global batch."""

from __future__ import annotations

import multiprocessing
import time

import pytest
import torch

from aihw.parallel import data_parallel as dp
from aihw.parallel.launch import LaunchConfig, WorkerError, launch

pytestmark = pytest.mark.distributed
STEPS = 10


@pytest.fixture(scope="module")
def reference() -> dict:
    return dp.train_single(dp.DPConfig(steps=STEPS))


@pytest.mark.parametrize("world_size", [2, 3])
def test_every_mode_matches_the_single_process_run(world_size, reference):
    configs = tuple(dp.DPConfig(mode=m, steps=STEPS, bucket_bytes=32 * 1024) for m in dp.MODES)
    runs = dp.run_modes(configs, world_size=world_size, timeout_s=180)
    assert not multiprocessing.active_children()
    for config, per_rank in zip(configs, runs, strict=True):
        assert [r["rank"] for r in per_rank] == list(range(world_size))
        assert len({r["weights_sha256"] for r in per_rank}) == 1, config.mode  # bit-identical on every rank
        for r in per_rank:
            assert r["mode"] == config.mode and r["threads"] == 1 and r["backend"] == "gloo"
            assert r["backend_reason"].startswith("gloo: ")  # says why not NCCL (no GPU per rank here)
            for name, tensor in reference["state"].items():
                torch.testing.assert_close(r["state"][name], tensor, msg=f"{config.mode} {name}")
        # the mean of the local losses is the loss of the global batch the single process saw
        mean_loss = [sum(r["losses"][s] for r in per_rank) / world_size for s in range(STEPS)]
        assert mean_loss == pytest.approx(reference["losses"], rel=1e-5)
        assert per_rank[0]["losses"] != per_rank[1]["losses"]  # each rank saw different samples
        assert all(len(r["comm_s"]) == STEPS and min(r["step_s"]) > 0 for r in per_rank)
    assert reference["losses"][-1] < 0.97 * reference["losses"][0]  # it learns


def test_batches_are_disjoint_slices_of_one_global_batch():
    cfg = dp.DPConfig(global_batch=12)
    whole, _ = dp.digits_batch(3, cfg)
    parts = [dp.digits_batch(3, cfg, rank=r, world_size=3)[0] for r in range(3)]
    torch.testing.assert_close(torch.cat(parts), whole)


def test_bucketing_groups_parameters_in_reverse_order():
    model = dp.make_model(dp.DPConfig(hidden=32))
    sizes = [p.numel() * 4 for p in model.parameters()]
    sync = dp.BucketedGradSync.__new__(dp.BucketedGradSync)  # inspect the bucket plan without a process group
    dp.BucketedGradSync.__init__(sync, model, bucket_bytes=max(sizes))
    flat = [p for bucket in sync.buckets for p in bucket]
    assert flat == list(reversed(list(model.parameters())))
    assert all(sum(p.numel() * 4 for p in b) <= max(sizes) for b in sync.buckets)
    for hook in sync.hooks:
        hook.remove()


@pytest.mark.parametrize(("kwargs", "pattern"), [
    ({"mode": "zero"}, r"unknown mode 'zero'; allowed: naive, bucketed, ddp"),
    ({"steps": 0}, r"steps must be a positive integer"),
    ({"momentum": 1.0}, r"momentum must be in \[0, 1\)"),
    ({"dtype": "float16"}, r"unknown dtype 'float16'"),
])
def test_bad_config(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        dp.DPConfig(**kwargs)


def test_global_batch_must_split_evenly():
    with pytest.raises(ValueError, match="global_batch=10 must be divisible by world_size=3"):
        dp.DPConfig(global_batch=10).local_batch(3)


def train_with_fault(ctx, config: dp.DPConfig, bad_rank: int, hung_rank: int) -> dict:
    """The data-parallel loop, but at step 2 ``bad_rank`` raises and ``hung_rank`` never reaches the all-reduce."""
    model = dp.make_model(config)
    steps = iter(range(config.steps))

    def sync() -> None:
        if next(steps) == 2:
            if ctx.rank == bad_rank:
                raise RuntimeError(f"injected fault on rank {ctx.rank} at step 2")
            if ctx.rank == hung_rank:
                time.sleep(3600)
        dp.all_reduce_gradients(model)  # the other ranks wait here for the two that never come

    return dp._train(model, config, rank=ctx.rank, world_size=ctx.world_size, sync=sync)


def test_a_failing_rank_and_a_hung_rank_stop_the_run_with_the_failing_rank_error():
    start = time.monotonic()
    with pytest.raises(WorkerError, match=r"(?s)rank 1 failed:.*injected fault on rank 1 at step 2") as caught:
        launch(train_with_fault, dp.DPConfig(mode="naive", steps=5, global_batch=24), 1, 2,
               config=LaunchConfig(world_size=3, timeout_s=60))
    assert caught.value.rank == 1
    assert time.monotonic() - start < 45  # well within the timeout: the error is reported as soon as it happens
    assert not multiprocessing.active_children()  # the hung rank and the waiting rank were stopped


@pytest.mark.parametrize(("world_size", "pattern"), [
    (0, r"world_size must be an integer in \[1, 16\].*got 0"),
    (17, r"world_size must be an integer in \[1, 16\].*got 17"),
    (2.5, r"world_size must be an integer"),
])
def test_bad_world_size_is_refused_before_starting(world_size, pattern):
    with pytest.raises(ValueError, match=pattern):
        dp.run(dp.DPConfig(steps=1), world_size=world_size)
    assert not multiprocessing.active_children()
