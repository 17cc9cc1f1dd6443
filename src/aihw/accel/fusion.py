"""Dispatch overhead and kernel fusion, measured: a chain of element-wise ops run op by op and fused.

The chain ``y = tanh(relu(x * 1.5 + 0.5) * x)`` is five element-wise ops. Run eagerly, each op is its own kernel
that reads its inputs from memory and writes its output back: 11 tensor passes of N elements (mul 2, add 2,
relu 2, mul 3, tanh 2). Fused (``torch.compile``'s Inductor, or, on a GPU, the hand-written Triton kernel
:func:`aihw.accel.triton_kernels.fused_chain`) it reads ``x`` once and writes ``y`` once: 2 passes. The prediction is bytes moved / the copy bandwidth measured here at the same
size; the measurement is :func:`aihw.runtime.timing.time_op`'s median with its spread.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

import torch

from aihw._validate import require_positive
from aihw.runtime.timing import time_op, time_ops

UNFUSED_PASSES = 11  # tensor-sized reads + writes of the eager chain
FUSED_PASSES = 2     # read x, write y
MAX_ELEMENTS = 1 << 28


def chain(x: torch.Tensor) -> torch.Tensor:
    """The element-wise chain, written as a reader would: five ops, five kernels when run eagerly."""
    return torch.tanh(torch.relu(x * 1.5 + 0.5) * x)


def _check_elements(name: str, n: int) -> int:
    n = int(require_positive(name, n, integer=True))
    if n > MAX_ELEMENTS:
        raise ValueError(f"{name}={n} is beyond what this experiment allows (at most {MAX_ELEMENTS} fp32 "
                         f"elements, {MAX_ELEMENTS * 4 / 2**30:.0f} GiB)")
    return n


def dispatch_overhead(sizes: tuple[int, ...] = (1, 16, 256, 4096, 65536, 1 << 20), *, device: str = "cpu",
                      repeats: int = 7) -> dict:
    """Time ``torch.add(x, 1, out=y)`` across sizes; fit t = overhead + n / rate on the two ends.

    Returns ``rows`` (elements, seconds, low, high) and ``overhead_s`` (the time of the smallest op, where the
    work is nil: what every eager op pays to be dispatched, in Python and in the library).
    """
    rows = []
    for n in sizes:
        n = _check_elements("size", n)
        x, y = torch.rand(n, device=device), torch.empty(n, device=device)
        def add_one(x: torch.Tensor = x, y: torch.Tensor = y) -> torch.Tensor:
            return torch.add(x, 1, out=y)

        t = time_op(add_one, device=device, repeats=repeats)
        rows.append({"elements": n, "seconds": t.median, "low": t.spread[0], "high": t.spread[1]})
    return {"rows": rows, "overhead_s": rows[0]["seconds"]}


@dataclass(frozen=True)
class FusionConfig:
    """Elements of the fp32 input, timing repeats and whether to compile the fused version."""

    elements: int = 1 << 22       # 4 Mi fp32 elements = 16 MiB per tensor
    repeats: int = 5
    compile: bool = True          # torch.compile the chain (needs a C++ compiler on CPU)
    device: Literal["cpu", "cuda"] = "cpu"

    def __post_init__(self) -> None:
        _check_elements("elements", self.elements)
        require_positive("repeats", self.repeats, integer=True)
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda', got {self.device!r}")
        if self.device == "cuda" and not torch.cuda.is_available():
            raise ValueError("device='cuda' but no CUDA GPU is available here; use device='cpu'")


def compiled_chain():
    """``torch.compile(chain)``: Inductor fuses the five ops into one loop (C++ on CPU, Triton on a GPU)."""
    return torch.compile(chain, dynamic=False)


def fusion_experiment(cfg: FusionConfig = FusionConfig()) -> dict:
    """Predict and measure the chain unfused (eager) and fused (compiled); returns rows and the bandwidth used."""
    n = cfg.elements
    x = torch.rand(n, device=cfg.device)
    y = torch.empty_like(x)
    copy = time_op(lambda: y.copy_(x), device=cfg.device, repeats=cfg.repeats)
    bandwidth = 2 * 4 * n / copy.median
    variants = {"eager (unfused)": (chain, UNFUSED_PASSES)}
    if cfg.compile:
        variants["torch.compile (fused)"] = (compiled_chain(), FUSED_PASSES)
    if cfg.device == "cuda":  # the hand-written kernel is timed only where it is compiled, not interpreted
        from aihw.accel import triton_kernels

        if triton_kernels.triton_status().startswith("ok"):
            variants["Triton by hand (fused)"] = (triton_kernels.fused_chain, FUSED_PASSES)
    rows = []
    reference = chain(x)
    for fn, _ in variants.values():
        torch.testing.assert_close(fn(x), reference)
    # interleaved, round after round, so that a slow spell of a shared machine hits every variant alike
    timings = time_ops({name: functools.partial(fn, x) for name, (fn, _) in variants.items()}, device=cfg.device,
                       repeats=cfg.repeats)
    for name, (_, passes) in variants.items():
        t = timings[name]
        predicted = passes * 4 * n / bandwidth
        rows.append({"variant": name, "bytes": passes * 4 * n, "predicted_s": predicted, "measured_s": t.median,
                     "low": t.spread[0], "high": t.spread[1], "ratio": t.median / predicted})
    return {"rows": rows, "bandwidth": bandwidth, "copy_spread": copy.spread, "elements": n}

