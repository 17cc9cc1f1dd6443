"""Which device and which distributed backend this machine can use, and a plain description of it.

Every CUDA-only call is guarded by ``torch.cuda.is_available()``, so this module runs unchanged on a
CPU-only laptop, a Mac (MPS) or a GPU runtime.
"""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass
from typing import Literal, get_args

import torch
import torch.distributed as dist

from aihw._validate import require_choice, require_positive
from aihw.catalogue.detect import Detection, match_device
from aihw.chips.capability import Capability
from aihw.formats.precision import get_format

DEVICE_CHOICES = ("auto", "cpu", "cuda", "cuda:N", "mps")  # "cuda:N" stands for any GPU index
Backend = Literal["auto", "gloo", "nccl"]
BACKEND_CHOICES: tuple[str, ...] = get_args(Backend)


def torch_dtype(precision: str) -> torch.dtype:
    """The torch dtype holding a number format of the registry (:mod:`aihw.formats.precision`; aliases accepted).

    Raises ValueError for a format torch has no dtype for (int4, fp4).
    """
    fmt = get_format(precision)
    dtype = getattr(torch, fmt.torch_dtype, None) if fmt.torch_dtype else None
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"torch {torch.__version__} has no dtype for {fmt.name}")
    return dtype


def fp8_matmul_support(device: torch.device | str = "cuda") -> str | None:
    """None if ``device`` can run real FP8 matmuls (torch._scaled_mm on CUDA, capability ≥ 8.9), else why not.

    The one FP8-capability check: the roofline measurement and the FP8 quantized model both ask it.
    """
    device = torch.device(device)
    if device.type != "cuda":
        return f"no FP8 matmul kernel on {device.type}: FP8 tensor cores need an NVIDIA GPU of compute capability ≥ 8.9"
    if not torch.cuda.is_available():
        return "no CUDA GPU is available"
    if not hasattr(torch, "_scaled_mm"):
        return f"this torch ({torch.__version__}) has no torch._scaled_mm"
    reason = gpu_capability(device).skip_reason("fp8")  # type: ignore[union-attr]
    return None if reason is None else f"{torch.cuda.get_device_name(device)}: {reason}"


def roofline_dtype(device: torch.device | str) -> str:
    """The dtype whose roofline a lab draws for ``device``: the GPU's tensor-core 16-bit float (bf16, or fp16 on a
    T4, whose bf16 is emulated at fp32 speed), fp32 off CUDA."""
    cap = gpu_capability(device)
    return "fp32" if cap is None else cap.half_dtype


def gpu_capability(device: torch.device | str) -> Capability | None:
    """The compute capability of a CUDA ``device`` (rules in :mod:`aihw.chips.capability`); None off CUDA."""
    device = torch.device(device)
    if device.type != "cuda" or not torch.cuda.is_available():
        return None
    major, minor = torch.cuda.get_device_capability(device)
    return Capability(int(major), int(minor))


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def _available_summary() -> str:
    """One phrase saying which devices exist here, for error messages."""
    found = ["cpu"]
    if torch.cuda.is_available():
        found.append(f"cuda:0..cuda:{torch.cuda.device_count() - 1}")
    if _mps_available():
        found.append("mps")
    return ", ".join(found)


def pick_device(preference: str = "auto") -> torch.device:
    """Resolve ``preference`` ("auto" | "cpu" | "cuda" | "cuda:N" | "mps") to a torch.device.

    "auto" takes CUDA, then MPS, then the CPU. Asking for a device that is not here raises ValueError
    naming it and what is available.
    """
    if not isinstance(preference, str):
        raise ValueError(f"device preference must be a string, one of {', '.join(DEVICE_CHOICES)}; "
                         f"got {preference!r}")
    pref = preference.strip().lower()
    if pref == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", 0)
        return torch.device("mps") if _mps_available() else torch.device("cpu")
    if pref == "cpu":
        return torch.device("cpu")
    if pref == "mps":
        if not _mps_available():
            raise ValueError(f"device 'mps' was requested but MPS is not available; available: "
                             f"{_available_summary()}")
        return torch.device("mps")
    match = re.fullmatch(r"cuda(?::(\d+))?", pref)
    if match is None:
        if pref != "cuda:n":
            require_choice("device", preference, DEVICE_CHOICES)  # raises, listing close matches
        raise ValueError(f"device {preference!r}: write N as a GPU index, e.g. 'cuda:0'")
    index = int(match.group(1) or 0)
    if not torch.cuda.is_available():
        raise ValueError(f"device {preference!r} was requested but no CUDA GPU is available; available: "
                         f"{_available_summary()}")
    count = torch.cuda.device_count()
    if index >= count:
        raise ValueError(f"device {preference!r} was requested but this machine has {count} CUDA GPU(s); "
                         f"available: {_available_summary()}")
    return torch.device("cuda", index)


@dataclass(frozen=True)
class BackendChoice:
    """A process-group backend and the sentence that explains why it was chosen."""

    backend: str  # "gloo" or "nccl"
    reason: str  # one sentence, shown to the reader
    device_type: str  # "cpu" for gloo, "cuda" for nccl: where each rank keeps its tensors


def _nccl_blocker(world_size: int) -> str | None:
    """Why NCCL cannot run ``world_size`` ranks here, or None if it can."""
    if not torch.cuda.is_available():
        return "no CUDA GPU is available"
    if not (dist.is_available() and dist.is_nccl_available()):
        return "this torch build has no NCCL support"
    gpus = torch.cuda.device_count()
    if gpus < world_size:
        return f"{world_size} ranks but {gpus} GPU{'s' if gpus != 1 else ''}; NCCL needs one GPU per rank"
    return None


GLOO_CUDA_COLLECTIVES = ("all_reduce", "broadcast", "barrier")  # what gloo does with CUDA tensors (and so DDP)
GPU_COMPUTE_LABEL = "compute on GPU, communication through gloo"


def pick_backend(world_size: int, *, preference: Backend = "auto", gpu_compute: bool = False) -> BackendChoice:
    """Choose "nccl" (one GPU per rank) or "gloo" for ``world_size`` ranks on this machine.

    preference "auto" takes NCCL when CUDA and NCCL are available and there is a GPU per rank, else gloo;
    "nccl" raises ValueError saying why it cannot be honoured; "gloo" is always possible.

    With gloo, tensors stay on the CPU unless ``gpu_compute`` is True and a CUDA GPU is visible: then each rank
    computes on ``cuda:{rank % gpus}`` (ranks share GPUs round-robin) and gloo carries the CUDA tensors. Only a
    worker that communicates through ``all_reduce``/``broadcast``/``barrier`` (so DDP) may ask for it: torch's
    documented gloo backend supports those on CUDA tensors, not send/recv, all_gather, reduce_scatter or
    all_to_all (https://docs.pytorch.org/docs/stable/distributed.html#backends, read 2026-12-01), so the
    course's teaching rings, built on send/recv, keep CPU tensors.
    """
    world_size = require_positive("world_size", world_size, integer=True)
    preference = require_choice("backend", preference, BACKEND_CHOICES)
    if not isinstance(gpu_compute, bool):
        raise ValueError(f"gpu_compute must be True or False, got {gpu_compute!r}")
    if not dist.is_available():
        raise ValueError("torch.distributed is not available in this torch build, so no backend can run")
    blocker = _nccl_blocker(world_size)
    if preference == "nccl":
        if blocker is not None:
            raise ValueError(f"backend 'nccl' cannot be used: {blocker}; use backend='gloo' or 'auto'")
        return BackendChoice("nccl", f"nccl: {world_size} ranks on {torch.cuda.device_count()} GPUs, "
                                     "as requested", "cuda")
    if preference == "auto" and blocker is None:
        return BackendChoice("nccl", f"nccl: {world_size} ranks, {torch.cuda.device_count()} GPUs, "
                                     "one GPU per rank", "cuda")
    why = "requested explicitly" if preference == "gloo" else blocker
    if gpu_compute and torch.cuda.is_available() and torch.cuda.device_count() > 0:
        gpus = torch.cuda.device_count()
        return BackendChoice("gloo", f"gloo, {GPU_COMPUTE_LABEL}: {why}; {world_size} ranks share {gpus} GPU"
                                     f"{'s' if gpus != 1 else ''} (rank r on cuda:r % {gpus}); gloo carries "
                                     f"CUDA tensors for {', '.join(GLOO_CUDA_COLLECTIVES)} only", "cuda")
    return BackendChoice("gloo", f"gloo: {why}; tensors stay on the CPU", "cpu")


def rank_device(device_type: str, local_rank: int) -> torch.device:
    """The device of local rank ``local_rank``: the CPU, or ``cuda:{local_rank % gpus}`` (one GPU per rank with
    NCCL, shared round-robin with gloo + ``gpu_compute``). Does not change the current CUDA device."""
    if device_type != "cuda":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ValueError("a CUDA device was chosen for the ranks but no CUDA GPU is available")
    return torch.device("cuda", local_rank % torch.cuda.device_count())


def _cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo (Linux), else what platform reports."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def describe_device(device: str | torch.device = "auto") -> dict:
    """What this machine is: device, CPU model, core count, torch version and, on CUDA, GPU name/memory.

    Memory is in bytes. Values are plain str/int/float so the dict can be saved as JSON.
    """
    resolved = device if isinstance(device, torch.device) else pick_device(device)
    info: dict = {
        "device": str(resolved),
        "platform": platform.platform(),
        "cpu_model": _cpu_model(),
        "cpu_cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch_version": torch.__version__,
        "cuda_available": torch.cuda.is_available(),
    }
    if hasattr(os, "getloadavg"):  # other busy processes make every timing slower: record how busy
        info["load_average_1min"] = round(os.getloadavg()[0], 2)
    if torch.cuda.is_available():
        index = resolved.index if resolved.type == "cuda" and resolved.index is not None else 0
        props = torch.cuda.get_device_properties(index)
        info.update({
            "cuda_device_name": props.name,
            "cuda_memory_bytes": int(props.total_memory),
            "cuda_capability": f"{props.major}.{props.minor}",
            "cuda_device_count": torch.cuda.device_count(),
            "cuda_version": torch.version.cuda,
        })
    return info


def detect_chip(device: str | torch.device = "auto") -> Detection:
    """The catalogue chip of ``device`` (a CUDA GPU), or ``Detection(None, reason)`` on a CPU or an unknown GPU."""
    resolved = device if isinstance(device, torch.device) else pick_device(device)
    if resolved.type != "cuda":
        return Detection(None, f"{resolved} is not a GPU: the labs compare this machine with catalogue chips "
                               "instead of predicting it from a datasheet")
    index = resolved.index if resolved.index is not None else 0
    props = torch.cuda.get_device_properties(index)
    return match_device(props.name, (props.major, props.minor))
