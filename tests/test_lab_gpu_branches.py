"""The labs' GPU-branch decisions with CUDA mocked as a T4, an L4, an A100 and two H100s: what runs, what is
skipped, and why. Nothing runs on a GPU here; these are the choices the labs and the report make before they do."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from aihw.cheaper.quantize_model import LOW_PRECISION_ROWS, low_precision_skip_reason
from aihw.runtime import device as dev

MACHINES = {  # name -> (GPU count, compute capability, device name)
    "T4": (1, (7, 5), "Tesla T4"),
    "L4": (1, (8, 9), "NVIDIA L4"),
    "A100": (1, (8, 0), "NVIDIA A100-SXM4-80GB"),
    "2xH100": (2, (9, 0), "NVIDIA H100 80GB HBM3"),
}

# lab decision -> per machine: the value, or for a skipped row the phrase its reason holds
EXPECT = {
    "roofline dtype": {"T4": "fp16", "L4": "bf16", "A100": "bf16", "2xH100": "bf16"},
    "int8 weight-only": {m: None for m in MACHINES},
    "int4 weight-only": {"T4": "compute capability >= 8.0", "L4": None, "A100": None, "2xH100": None},
    "fp8 (e4m3, per-tensor)": {"T4": "compute capability >= 8.9", "L4": None, "A100": "compute capability >= 8.9",
                               "2xH100": None},
    "2:4 sparse": {"T4": "compute capability >= 8.0", "L4": None, "A100": None, "2xH100": None},
    "2-rank backend": {"T4": "gloo", "L4": "gloo", "A100": "gloo", "2xH100": "nccl"},
}


@pytest.fixture
def machine(monkeypatch):
    def as_machine(name: str) -> None:
        count, cap, gpu = MACHINES[name]
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: cap)
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: gpu)
        monkeypatch.setattr(dist, "is_nccl_available", lambda: True)
        if not hasattr(torch, "_scaled_mm"):
            pytest.skip("this torch has no torch._scaled_mm")

    return as_machine


@pytest.mark.parametrize("name", sorted(MACHINES))
def test_each_lab_gpu_branch_runs_or_skips_as_the_chip_allows(machine, name):
    machine(name)
    # gpus_vs_tpus lab: the roofline drawn is the tensor-core half type (a T4's own fp16 roofline)
    assert dev.roofline_dtype("cuda:0") == EXPECT["roofline dtype"][name]
    assert dev.roofline_dtype("cpu") == "fp32"
    # cheaper lab and the report: each low-precision row runs, or is skipped with its reason
    for row in LOW_PRECISION_ROWS:
        reason, expected = low_precision_skip_reason(row, "cuda"), EXPECT[row][name]
        assert (reason is None) == (expected is None), (row, reason)
        if expected is not None:
            assert expected in reason, (row, reason)
    # data-parallel lab: two ranks take NCCL only with a GPU per rank; else gloo, saying why
    choice = dev.pick_backend(2)
    assert choice.backend == EXPECT["2-rank backend"][name], choice
    if choice.backend == "gloo":
        assert "2 ranks but 1 GPU" in choice.reason
    else:
        assert dev.rank_device(choice.device_type, 1) == torch.device("cuda", 1)
