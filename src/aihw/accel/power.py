"""Power counters, where the machine exposes them: RAPL on Linux CPUs, NVML on NVIDIA GPUs.

RAPL's ``/sys/class/powercap/intel-rapl:*/energy_uj`` is a cumulative energy counter in microjoules (it wraps at
``max_energy_range_uj``); inside containers and VMs it is usually absent or unreadable. NVML gives a GPU's total
energy since driver load (``nvmlDeviceGetTotalEnergyConsumption``, millijoules, Volta and newer) through
``pynvml`` when installed. :func:`read_energy` never invents a number: it says why none can be read.
"""

from __future__ import annotations

import glob
import os
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class EnergyReading:
    """Joules spent while ``op`` ran ``calls`` times, or ``None`` with ``reason``."""

    joules: float | None
    seconds: float
    calls: int
    source: str
    reason: str = ""


def _rapl_files() -> tuple[list[str], str]:
    files = sorted(glob.glob("/sys/class/powercap/intel-rapl:[0-9]*/energy_uj"))
    if not files:
        return [], "no RAPL counter: /sys/class/powercap/intel-rapl:*/energy_uj does not exist on this machine"
    unreadable = [f for f in files if not os.access(f, os.R_OK)]
    if unreadable:
        return [], f"RAPL counter exists but is not readable ({unreadable[0]}: permission denied)"
    return files, ""


def counter_status() -> dict[str, str]:
    """Which counters can be read here: {"rapl": "ok" or why not, "nvml": "ok" or why not}."""
    files, why = _rapl_files()
    status = {"rapl": "ok" if files else why}
    try:
        import pynvml  # noqa: F401
        status["nvml"] = "ok"
    except ImportError:
        status["nvml"] = "pynvml is not installed (NVIDIA GPUs only)"
    try:
        import torch
        if not torch.cuda.is_available():
            status["nvml"] = "no NVIDIA GPU here"
    except ImportError:
        pass
    return status


def _read_rapl(files: list[str]) -> float:
    total = 0
    for path in files:
        with open(path) as f:
            total += int(f.read())
    return total * 1e-6


def nvml_uuid(device: int) -> str:
    """NVML's name (``GPU-…``) of CUDA device ``device``, from the CUDA device's own UUID.

    NVML numbers every GPU of the machine, CUDA only the visible ones, renumbered (``CUDA_VISIBLE_DEVICES=2``
    makes NVML's GPU 2 CUDA's device 0): an NVML index is not a CUDA index, the UUID is the same in both.
    """
    import torch

    uuid = str(getattr(torch.cuda.get_device_properties(device), "uuid", "") or "")
    if not uuid:
        raise ValueError(f"torch {torch.__version__} does not report CUDA device {device}'s UUID, so its NVML "
                         "counter cannot be told apart from the machine's other GPUs")
    return uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"


def nvml_handle(pynvml, device: int):
    """The NVML handle of CUDA device ``device``, found by UUID (never by NVML index)."""
    uuid = nvml_uuid(device)
    try:
        return pynvml.nvmlDeviceGetHandleByUUID(uuid)
    except TypeError:  # older pynvml wants bytes
        return pynvml.nvmlDeviceGetHandleByUUID(uuid.encode())


def _nvml_energy(op: Callable[[], object], calls: int, device: int) -> EnergyReading:
    try:
        import pynvml
        import torch
    except ImportError:
        return EnergyReading(None, 0.0, calls, "nvml", "pynvml is not installed (pip install nvidia-ml-py)")
    if not torch.cuda.is_available():
        return EnergyReading(None, 0.0, calls, "nvml", "no NVIDIA GPU here")
    try:
        uuid = nvml_uuid(device)
    except ValueError as error:
        return EnergyReading(None, 0.0, calls, "nvml", str(error))
    try:
        pynvml.nvmlInit()
        handle = nvml_handle(pynvml, device)
        torch.cuda.synchronize(device)
        start, before = time.perf_counter(), pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        for _ in range(calls):
            op()
        torch.cuda.synchronize(device)
        after, seconds = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle), time.perf_counter() - start
    except pynvml.NVMLError as error:
        return EnergyReading(None, 0.0, calls, "nvml", f"NVML cannot read the energy counter of {uuid}: {error}")
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass
    return EnergyReading((after - before) * 1e-3, seconds, calls, "nvml")


def read_energy(op: Callable[[], object], *, calls: int = 10, source: str = "rapl", device: int = 0) -> EnergyReading:
    """Run ``op`` ``calls`` times between two reads of an energy counter: ``source`` "rapl" (the CPU package)
    or "nvml" (NVIDIA GPU ``device``; the GPU is synchronised before each read). NVML's counter updates every
    few tens of milliseconds, so give it calls that last well over a second."""
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 1:
        raise ValueError(f"calls must be a positive integer, got {calls!r}")
    if source not in ("rapl", "nvml"):
        raise ValueError(f"source must be 'rapl' or 'nvml', got {source!r}")
    if source == "nvml":
        return _nvml_energy(op, calls, device)
    files, why = _rapl_files()
    start = time.perf_counter()
    if not files:
        return EnergyReading(None, 0.0, calls, "rapl", why)
    before = _read_rapl(files)
    for _ in range(calls):
        op()
    after = _read_rapl(files)
    seconds = time.perf_counter() - start
    if after < before:
        return EnergyReading(None, seconds, calls, "rapl", "the RAPL counter wrapped during the run; run again")
    return EnergyReading(after - before, seconds, calls, "rapl")
