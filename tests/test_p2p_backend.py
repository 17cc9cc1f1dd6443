"""The pipeline's lone isend-then-recv helpers refuse NCCL, where that order can hang; gloo runs them."""

import pytest
import torch
import torch.distributed as dist

from aihw.parallel import p2p


def test_pipeline_send_and_recv_refuse_an_nccl_group(monkeypatch):
    monkeypatch.setattr(dist, "get_backend", lambda group=None: "nccl")
    with pytest.raises(ValueError, match="gloo only, not 'nccl'"):
        p2p.send_forward(torch.zeros(2), rank=0, micro_batch=0)
    with pytest.raises(ValueError, match="gloo only"):
        p2p.recv_backward((2,), rank=0, micro_batch=0)


def test_pipeline_is_launched_on_gloo(monkeypatch):
    from aihw.parallel import pipeline

    seen = {}

    def fake_launch(worker, configs, *, config):
        seen["backend"] = config.backend
        return [[None] * len(configs) for _ in range(config.world_size)]

    monkeypatch.setattr(pipeline, "launch", fake_launch)
    pipeline.run_pipeline(pipeline.PipelineConfig(), stages=2)
    assert seen["backend"] == "gloo"
