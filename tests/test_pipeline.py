"""GPipe and 1F1B as real gloo processes: gradients equal the unsplit model; timelines and activations add up."""

import pytest
import torch

from aihw.layout.schedules import schedule_order
from aihw.models.tinygpt import TinyGPTConfig
from aihw.parallel.launch import LaunchConfig, launch
from aihw.parallel.layer_parallel import reference_step
from aihw.parallel.pipeline import (
    PipelineConfig,
    merged_grads,
    run_pipeline,
    summary,
    timeline,
    torch_pipelining_worker,
)

MODEL = TinyGPTConfig(width=32, depth=6, heads=4, seq_len=16)
CONFIGS = {  # p -> configs run in one launch
    2: [PipelineConfig(model=MODEL, micro_batches=4, micro_batch_size=2, schedule="gpipe", steps=2),
        PipelineConfig(model=MODEL, micro_batches=4, micro_batch_size=2, schedule="1f1b", steps=2),
        PipelineConfig(model=MODEL, micro_batches=1, micro_batch_size=8, schedule="1f1b", steps=1)],
    3: [PipelineConfig(model=MODEL, micro_batches=3, micro_batch_size=2, schedule="gpipe", steps=1),
        PipelineConfig(model=MODEL, micro_batches=5, micro_batch_size=2, schedule="1f1b", steps=2)],
}


@pytest.fixture(scope="module", params=[2, 3])
def pipeline_runs(request):
    return request.param, run_pipeline(CONFIGS[request.param], stages=request.param)


@pytest.mark.distributed
def test_gradients_equal_unsplit(pipeline_runs):
    _, all_runs = pipeline_runs
    for runs in all_runs:
        cfg = runs[0].config
        loss_ref, ref = reference_step(cfg.model, cfg.batch, seed=cfg.seed)
        assert runs[-1].loss == pytest.approx(loss_ref, rel=1e-5)
        grads = merged_grads(runs)
        assert grads.keys() == ref.keys()
        for name in ref:
            torch.testing.assert_close(grads[name], ref[name], rtol=1e-4, atol=1e-6, msg=name)


@pytest.mark.distributed
def test_order_timeline_and_activations(pipeline_runs):
    p, all_runs = pipeline_runs
    for runs in all_runs:
        cfg = runs[0].config
        for run in runs:  # the processes ran exactly the simulator's order
            ops = [("F" if e.kind == "forward" else "B", e.micro_batch, 0) for e in run.events
                   if e.kind in ("forward", "backward")]
            assert ops == schedule_order(cfg.schedule, p, cfg.micro_batches, run.rank)
        events, step = timeline(runs)
        for rank in range(p):  # every rank's intervals tile [0, step] without overlap
            mine = sorted((e for e in events if e.stage == rank), key=lambda e: e.start)
            assert sum(e.duration for e in mine) == pytest.approx(step, rel=1e-6)
            assert all(a.end <= b.start + 1e-9 for a, b in zip(mine, mine[1:], strict=False))
        s = summary(runs)
        assert s["peak_in_flight_measured"] == s["peak_in_flight_predicted"]
        assert s["peak_saved_bytes_measured"] == s["peak_saved_bytes_predicted"]
        assert 0 < s["bubble_measured"] < 1 and s["bubble_theory"] == (p - 1) / (cfg.micro_batches + p - 1)
        assert s["imbalance"] >= 1 and 0 < s["cpu_per_wall"] <= 1.05  # CPU time cannot exceed wall time
        assert 0 < s["bubble_simulated_cpu"] < 1
    gpipe, one_f = (summary(r) for r in all_runs[:2])
    assert gpipe["peak_in_flight_measured"][0] > one_f["peak_in_flight_measured"][0] or p == 3


@pytest.mark.distributed
def test_torch_pipelining_gives_the_same_gradients():
    cfg = PipelineConfig(model=MODEL, micro_batches=4, micro_batch_size=2, schedule="1f1b", steps=1)
    results = launch(torch_pipelining_worker, cfg, config=LaunchConfig(world_size=2, backend="gloo"))
    loss_ref, ref = reference_step(MODEL, cfg.batch)
    assert results[-1]["loss"] == pytest.approx(loss_ref, rel=1e-5)
    grads = {}
    for r in results:
        grads.update(r["grads"])
    for name in ref:
        torch.testing.assert_close(grads[name], ref[name], rtol=1e-4, atol=1e-6, msg=name)


@pytest.mark.parametrize("kwargs, match", [
    (dict(micro_batches=0), "micro_batches \\(m\\)"),
    (dict(schedule="interleaved"), "allowed: gpipe, 1f1b"),
    (dict(micro_batch_size=-1), "micro_batch_size"),
])
def test_bad_config(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PipelineConfig(**kwargs)


def test_too_many_stages():
    with pytest.raises(ValueError, match="stages=7 exceeds the 6 layers"):
        run_pipeline(PipelineConfig(model=MODEL), stages=7)


@pytest.mark.distributed
def test_uneven_stages_equal_unsplit():
    """6 blocks on 4 stages split 1, 2, 2, 1 (the planner's stage_layers); gradients still equal one process's."""
    cfg = PipelineConfig(model=MODEL, micro_batches=4, micro_batch_size=2, schedule="1f1b", steps=1)
    (runs,) = run_pipeline(cfg, stages=4)
    loss_ref, ref = reference_step(cfg.model, cfg.batch, seed=cfg.seed)
    assert runs[-1].loss == pytest.approx(loss_ref, rel=1e-5)
    grads = merged_grads(runs)
    for name in ref:
        torch.testing.assert_close(grads[name], ref[name], rtol=1e-4, atol=1e-6, msg=name)
