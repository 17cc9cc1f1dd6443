"""Measure the reader's own device: matmul FLOP/s per dtype and copy bandwidth, to place it on a roofline.

Every number is timed here, on this machine, with the package's timing harness
(:func:`aihw.runtime.timing.time_op`): median of ``repeats`` samples, each at least ``MIN_SAMPLE_S`` long, with a
device synchronise before reading the clock on GPUs. Whatever cannot run (a dtype this device lacks, a size that
would overrun ``max_seconds``) is skipped and the reason recorded.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import partial
from typing import Literal, get_args

import torch

from aihw._validate import require_choice, require_positive
from aihw.formats.precision import bytes_per_element
from aihw.measure import cuda_ops
from aihw.runtime.device import DEVICE_CHOICES, describe_device, fp8_matmul_support, pick_device, torch_dtype
from aihw.runtime.timing import time_op

# The matmul dtypes measured: names of the registry of number formats (aihw.formats.precision); "fp8" is E4M3.
Dtype = Literal["fp32", "tf32", "bf16", "fp16", "fp8"]
DTYPES: tuple[str, ...] = get_args(Dtype)
MIN_SAMPLE_S = 0.01  # each timed sample lasts at least this long (seconds), to average out timer noise


def _require_tuple(name: str, values: object, check: Callable[[str, object], object]) -> None:
    if not isinstance(values, tuple) or not values:
        raise ValueError(f"{name} must be a non-empty tuple, got {values!r}")
    for index, value in enumerate(values):
        check(f"{name}[{index}]", value)
    if len(set(values)) != len(values):
        raise ValueError(f"{name} must not repeat values, got {values!r}")


@dataclass(frozen=True)
class MeasureConfig:
    """What to time on one device and how long it may take."""

    device: str = "auto"  # "auto" | "cpu" | "cuda" | "cuda:N" | "mps"
    dtypes: tuple[Dtype, ...] = ("fp32", "bf16")  # any of DTYPES
    matmul_sizes: tuple[int, ...] = (128, 256, 512, 1024)  # n for n x n @ n x n
    copy_mib: tuple[float, ...] = (1, 16, 64)  # buffer sizes for the copy test, MiB (2**20 bytes)
    repeats: int = 5  # timed samples per point; the median is reported
    warmup: int = 2  # untimed calls before timing (the first also estimates cost against the budget)
    max_seconds: float = 20.0  # wall-clock budget; points that would overrun it are skipped, with a reason

    def __post_init__(self) -> None:
        if not isinstance(self.device, str) or not re.fullmatch(r"auto|cpu|mps|cuda(:\d+)?",
                                                                self.device.strip().lower()):
            require_choice("device", self.device, DEVICE_CHOICES)
            raise ValueError(f"device {self.device!r}: write N as a GPU index, e.g. 'cuda:0'")
        _require_tuple("dtypes", self.dtypes, lambda name, v: require_choice(name, v, DTYPES))
        _require_tuple("matmul_sizes", self.matmul_sizes,
                       lambda name, v: _require_int(name, v, 1, 65_536))
        _require_tuple("copy_mib", self.copy_mib, require_positive)
        _require_int("repeats", self.repeats, 1, 10_000)
        _require_int("warmup", self.warmup, 0, 10_000)
        require_positive("max_seconds", self.max_seconds)


def _require_int(name: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}], got {value!r}")
    return value


@dataclass(frozen=True)
class MatmulPoint:
    """One n x n @ n x n matmul: 2 n^3 FLOP in ``seconds`` (median)."""

    dtype: str
    n: int
    seconds: float  # per matmul
    flops_per_s: float  # 2 n^3 / seconds
    intensity: float  # FLOP per byte if A, B and C each cross memory once: 2 n^3 / (3 n^2 bytes_per_element)


@dataclass(frozen=True)
class CopyPoint:
    """One device-to-same-device copy of ``mib`` MiB; bandwidth counts read + write (2 x size bytes)."""

    mib: float
    seconds: float  # per copy
    bytes_per_s: float  # 2 * mib * 2**20 / seconds


@dataclass(frozen=True)
class DeviceMeasurement:
    """All points measured on one device, what the device is, and what was skipped and why."""

    device: str
    description: dict
    matmul: tuple[MatmulPoint, ...]
    copy: tuple[CopyPoint, ...]
    skipped: tuple[str, ...] = ()  # one sentence per skipped dtype or point
    notes: tuple[str, ...] = ()  # caveats about the conditions, e.g. a busy machine

    @property
    def label(self) -> str:
        """A readable name: the GPU's name, or the CPU model with its core count."""
        d = self.description
        if d.get("cuda_device_name") and self.device.startswith("cuda"):
            return str(d["cuda_device_name"])
        cores = f", {d['cpu_cores']} cores" if d.get("cpu_cores") else ""
        return f"{d.get('cpu_model', 'CPU')} (CPU{cores})"

    def best_flops(self, dtype: str) -> float:
        """Highest measured matmul FLOP/s for ``dtype``."""
        points = [p.flops_per_s for p in self.matmul if p.dtype == dtype]
        if not points:
            measured = sorted({p.dtype for p in self.matmul}) or ["none"]
            raise ValueError(f"no matmul was measured for dtype {dtype!r}; measured: {', '.join(measured)}")
        return max(points)

    def best_bandwidth(self) -> float:
        """Highest measured copy bandwidth, bytes/s (read + write counted)."""
        if not self.copy:
            raise ValueError("no copy bandwidth was measured")
        return max(p.bytes_per_s for p in self.copy)

    def to_dict(self) -> dict:
        """Plain dict (lists, numbers, strings) ready for json.dumps."""
        return {"device": self.device, "description": dict(self.description),
                "matmul": [asdict(p) for p in self.matmul], "copy": [asdict(p) for p in self.copy],
                "skipped": list(self.skipped), "notes": list(self.notes)}


class _Budget:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.start = time.perf_counter()

    def left(self) -> float:
        return self.seconds - (time.perf_counter() - self.start)


def _time(op: Callable[[], object], device: torch.device, config: MeasureConfig, budget: _Budget) -> float | str:
    """Median seconds per call of ``op``, or a reason string if it would overrun the budget."""
    try:
        return time_op(op, device=device, warmup=config.warmup, repeats=config.repeats, min_sample_s=MIN_SAMPLE_S,
                       max_seconds=budget.left()).median
    except ValueError as exc:
        return f"skipped: {exc} (what is left of max_seconds={config.max_seconds:g})"


def _unsupported_reason(dtype: str, device: torch.device) -> str | None:
    """Why ``dtype`` matmul is not measured on ``device``, or None."""
    capability = torch.cuda.get_device_capability(device) if device.type == "cuda" else None
    if dtype == "tf32":
        if capability is None:
            return f"tf32 is a CUDA tensor-core mode (compute capability >= 8.0); not available on {device}"
        if capability < (8, 0):
            return f"tf32 needs compute capability >= 8.0; this GPU is {capability[0]}.{capability[1]}"
    if dtype == "fp8":
        reason = fp8_matmul_support(device)
        if reason is not None:
            return (f"fp8 matmul is measured only on CUDA GPUs with FP8 tensor cores, via torch._scaled_mm ({reason}); "
                    "elsewhere torch would run an emulated kernel that says nothing about fp8 hardware")
    return None


@contextmanager
def _fp32_mode(dtype: str, device: torch.device) -> Iterator[None]:
    """On CUDA, make fp32 matmuls run as IEEE fp32 ("fp32") or TF32 ("tf32"); restore the setting after."""
    if device.type != "cuda" or dtype not in ("fp32", "tf32"):
        yield
        return
    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):  # torch >= 2.9; mixing it with allow_tf32 is an error
        old = matmul.fp32_precision
        matmul.fp32_precision = "tf32" if dtype == "tf32" else "ieee"
        try:
            yield
        finally:
            matmul.fp32_precision = old
    else:
        old = matmul.allow_tf32
        matmul.allow_tf32 = dtype == "tf32"
        try:
            yield
        finally:
            matmul.allow_tf32 = old


def _matmul_op(dtype: str, n: int, device: torch.device) -> Callable[[], object]:
    a = torch.randn(n, n, device=device).to(torch_dtype(dtype))
    b = torch.randn(n, n, device=device).to(torch_dtype(dtype))
    if dtype == "fp8":  # _scaled_mm wants B column-major and n a multiple of 16
        if n % 16:
            raise ValueError(f"fp8 needs n to be a multiple of 16, got {n}")
        b_cols = b.t()  # a column-major view of the random B (the values do not matter for timing)
        one = torch.ones((), device=device)
        return lambda: cuda_ops.fp8_mm(a, b_cols, one, one, torch.bfloat16)
    out = torch.empty(n, n, device=device, dtype=a.dtype)
    return lambda: torch.matmul(a, b, out=out)


def _measure_matmuls(dtype: str, device: torch.device, config: MeasureConfig, budget: _Budget,
                     skipped: list[str]) -> list[MatmulPoint]:
    points = []
    with _fp32_mode(dtype, device):
        for n in config.matmul_sizes:
            try:
                seconds = _time(_matmul_op(dtype, n, device), device, config, budget)
            except (RuntimeError, ValueError) as exc:  # a dtype or size this device cannot run
                seconds = f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            if isinstance(seconds, str):
                skipped.append(f"{dtype} n={n}: {seconds}")
                continue
            points.append(MatmulPoint(dtype, n, seconds, 2 * n**3 / seconds,
                                      2 * n / (3 * bytes_per_element(dtype))))
    return points


def _measure_copies(device: torch.device, config: MeasureConfig, budget: _Budget,
                    skipped: list[str]) -> list[CopyPoint]:
    points = []
    for mib in config.copy_mib:
        elements = max(1, int(mib * 2**20) // 4)
        # both buffers written before timing: a first-touch page fault is not memory bandwidth
        source = torch.ones(elements, device=device)
        target = torch.zeros_like(source)
        seconds = _time(partial(target.copy_, source), device, config, budget)
        if isinstance(seconds, str):
            skipped.append(f"copy {mib:g} MiB: {seconds}")
            continue
        points.append(CopyPoint(mib, seconds, 2 * elements * 4 / seconds))
    return points


def measure_device(config: MeasureConfig = MeasureConfig()) -> DeviceMeasurement:
    """Time copies, then matmuls for each dtype and size in ``config``, on one device, within max_seconds."""
    device = pick_device(config.device)
    budget = _Budget(config.max_seconds)
    skipped: list[str] = []
    copies = _measure_copies(device, config, budget, skipped)
    matmuls: list[MatmulPoint] = []
    for dtype in config.dtypes:
        reason = _unsupported_reason(dtype, device)
        if reason is not None:
            skipped.append(f"{dtype}: {reason}")
            continue
        matmuls.extend(_measure_matmuls(dtype, device, config, budget, skipped))
    description = describe_device(device)
    return DeviceMeasurement(str(device), description, tuple(matmuls), tuple(copies), tuple(skipped),
                             _busy_notes(description))


def _busy_notes(description: dict) -> tuple[str, ...]:
    """A caveat when other processes were competing for the CPU while we timed it."""
    load, cores = description.get("load_average_1min"), description.get("cpu_cores")
    if load is None or not cores or load <= 0.5 * cores:
        return ()
    return (f"the 1-minute load average was {load:g} on {cores} cores: other processes were competing for "
            "the CPU, so these timings understate this machine (multi-threaded kernels suffer most)",)


def lab_config(device: str = "auto", *, max_seconds: float | None = None) -> MeasureConfig:
    """The measurement the labs run on ``device``: small and fp32 on a CPU (seconds on a laptop); on a GPU every
    dtype the chip may have (fp32, tf32, fp16, bf16, fp8: unsupported ones are skipped with a reason), matmuls up
    to n = 8192 and copies of buffers several times larger than L2, so HBM, not L2, sets the copy rate."""
    resolved = pick_device(device)
    if resolved.type != "cuda":
        return MeasureConfig(device=str(resolved), dtypes=("fp32",), matmul_sizes=(64, 128, 256, 512),
                             copy_mib=(16,), repeats=3, max_seconds=max_seconds or 10.0)
    props = torch.cuda.get_device_properties(resolved)
    l2 = int(getattr(props, "L2_cache_size", 50 * 2**20))
    copy = float(max(4 * l2, 512 * 2**20) / 2**20)
    return MeasureConfig(device=str(resolved), dtypes=("fp32", "tf32", "fp16", "bf16", "fp8"),
                         matmul_sizes=(1024, 2048, 4096, 8192), copy_mib=(copy,), repeats=5,
                         max_seconds=max_seconds or 60.0)


def achieved_vs_peak(measurement: DeviceMeasurement, chip=None) -> list[dict]:
    """Per measured dtype: best measured TFLOP/s, the chip's datasheet dense peak and their ratio; then the copy
    bandwidth against the datasheet's. ``chip`` is a catalogue :class:`~aihw.catalogue.hardware.Chip` (the detected
    one) or None (an unknown GPU or a CPU): the datasheet columns are then None and the note says why."""
    rows = []
    for dtype in sorted({p.dtype for p in measurement.matmul}, key=DTYPES.index):
        measured = measurement.best_flops(dtype)
        peak = chip.peak_flops(dtype) if chip is not None and dtype in chip.flops else None
        note = ("" if peak else "no catalogue chip for this device" if chip is None
                else f"{chip.name} has no published dense {dtype} peak")
        rows.append({"quantity": f"{dtype} matmul", "measured": measured / 1e12, "datasheet": peak and peak / 1e12,
                     "unit": "TFLOP/s", "fraction": measured / peak if peak else None, "note": note})
    if measurement.copy:
        bandwidth = measurement.best_bandwidth()
        peak = chip.bandwidth_bytes_per_s if chip is not None else None
        rows.append({"quantity": "copy bandwidth (read + write)", "measured": bandwidth / 1e12,
                     "datasheet": peak and peak / 1e12, "unit": "TB/s", "fraction": bandwidth / peak if peak else None,
                     "note": "" if peak else "no catalogue chip for this device"})
    return rows
