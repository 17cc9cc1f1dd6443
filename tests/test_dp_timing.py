"""Data-parallel step phases are timed with the synchronising clock of the one timing harness."""

from __future__ import annotations

import torch

from aihw.parallel import data_parallel as dp


def test_train_reads_every_phase_boundary_after_a_device_sync(monkeypatch):
    events: list[str] = []
    now = [0.0]

    def fake_clock(device):
        assert torch.device(device) == torch.device("cpu")

        def read() -> float:
            events.append("sync+read")
            now[0] += 1.0
            return now[0]

        return read

    monkeypatch.setattr(dp, "synced_clock", fake_clock)
    config = dp.DPConfig(steps=2, global_batch=8, hidden=8)
    out = dp._train(dp.make_model(config), config, rank=0, world_size=1, sync=lambda: events.append("all-reduce"))
    # per step: start, after backward, [communication], after it, after the optimizer step
    assert events == ["sync+read", "sync+read", "all-reduce", "sync+read", "sync+read"] * 2
    assert out["compute_s"] == [1.0, 1.0] and out["comm_s"] == [1.0, 1.0] and out["step_s"] == [3.0, 3.0]
