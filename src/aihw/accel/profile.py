"""Profile one training step of the course's TinyGPT with ``torch.profiler`` and summarise it by operator class.

The trace is exported as a Chrome/Perfetto JSON file (open it at ui.perfetto.dev or chrome://tracing). The
summary adds each operator's *self* time (time not spent in the operators it calls, so nothing is counted twice)
into classes: matmul, element-wise (memory-bound), softmax/normalisation/loss (reductions, memory-bound),
optimizer, communication, other. Model-FLOP utilisation (MFU) = the step's counted FLOPs (PyTorch's
``FlopCounterMode``) / (step time x peak FLOP/s), against the peak you pass (measured or datasheet).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field

import torch
from torch.utils.flop_counter import FlopCounterMode

from aihw._validate import require_positive
from aihw.measure.memory import _quiet_native_stderr
from aihw.models.tinygpt import TinyGPT, TinyGPTConfig, random_batch

CLASSES: dict[str, str] = {
    "matmul": r"aten::(mm|addmm|bmm|baddbmm|matmul|linear|_scaled_dot_product|scaled_dot_product|einsum)",
    "communication": r"(c10d|nccl|gloo|all_reduce|allreduce|all_gather|reduce_scatter|broadcast)",
    "optimizer": r"(_foreach|adam|sgd|Optimizer)",
    "softmax / norm / loss": r"aten::(_?softmax|_?log_softmax|native_layer_norm|layer_norm|nll_loss|cross_entropy"
                             r"|_softmax_backward|_log_softmax_backward|native_layer_norm_backward|sum|mean)",
    "element-wise": r"aten::(add|mul|div|sub|gelu|relu|tanh|exp|where|masked_fill|copy_|fill_|zero_|clone|"
                    r"neg|pow|sqrt|rsqrt|threshold|gelu_backward|embedding|embedding_dense_backward|"
                    r"index|cat|contiguous|_to_copy|to|addcmul|addcdiv|lerp|ones_like|zeros_like|empty_like)",
}
MEMORY_BOUND = ("element-wise", "softmax / norm / loss")


@dataclass(frozen=True)
class ProfileConfig:
    """Which TinyGPT, batch and optimizer step to profile, and where to write the trace."""

    model: TinyGPTConfig = TinyGPTConfig(width=128, depth=2, heads=4, seq_len=128)
    batch: int = 8
    trace_path: str | None = None   # a .json path for the Chrome/Perfetto trace; None: no file
    warmup_steps: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        require_positive("batch", self.batch, integer=True)
        if self.warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {self.warmup_steps!r}")
        if self.trace_path is not None and not str(self.trace_path).endswith(".json"):
            raise ValueError(f"trace_path must end in .json, got {self.trace_path!r}")


@dataclass(frozen=True)
class ProfileSummary:
    """Self time per operator class (seconds), the step's wall time, counted FLOPs and the busiest operators."""

    class_seconds: dict[str, float]
    step_seconds: float
    flops: int
    top_ops: list[tuple[str, float]] = field(default_factory=list)
    trace_path: str | None = None

    @property
    def total_seconds(self) -> float:
        return sum(self.class_seconds.values())

    def share(self, name: str) -> float:
        return self.class_seconds.get(name, 0.0) / max(self.total_seconds, 1e-12)

    @property
    def memory_bound_share(self) -> float:
        return sum(self.share(n) for n in MEMORY_BOUND)

    def mfu(self, peak_flops: float) -> float:
        """Counted FLOPs / (step wall time x ``peak_flops``)."""
        return self.flops / (self.step_seconds * require_positive("peak_flops", peak_flops))


def classify(op_name: str) -> str:
    """The class of an operator name (see ``CLASSES``); "other" if none matches."""
    for name, pattern in CLASSES.items():
        if re.search(pattern, op_name):
            return name
    return "other"


def profile_step(cfg: ProfileConfig = ProfileConfig()) -> ProfileSummary:
    """Profile forward, backward and an AdamW step of a TinyGPT on the CPU (and CUDA kernels on a GPU)."""
    torch.manual_seed(cfg.seed)
    model = TinyGPT(cfg.model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx, targets = random_batch(cfg.model, cfg.batch, seed=cfg.seed)

    def step() -> None:
        _, loss = model(idx, targets)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(cfg.warmup_steps):
        step()
    with FlopCounterMode(display=False) as counter:
        step()
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with _quiet_native_stderr(), torch.profiler.profile(activities=activities) as prof:  # no C++ start/stop lines
        start = time.perf_counter()
        step()
        seconds = time.perf_counter() - start
    if cfg.trace_path is not None:
        os.makedirs(os.path.dirname(os.path.abspath(cfg.trace_path)), exist_ok=True)
        prof.export_chrome_trace(cfg.trace_path)
    classes: dict[str, float] = {}
    ops = []
    for event in prof.key_averages():
        self_s = event.self_cpu_time_total * 1e-6
        if self_s <= 0 or not event.key.startswith("aten::") and classify(event.key) == "other":
            continue
        name = classify(event.key)
        classes[name] = classes.get(name, 0.0) + self_s
        ops.append((event.key, self_s))
    ops.sort(key=lambda item: -item[1])
    return ProfileSummary(class_seconds=classes, step_seconds=seconds, flops=int(counter.get_total_flops()),
                          top_ops=ops[:8], trace_path=cfg.trace_path)


def cpu_peak_flops(threads: int | None = None) -> dict:
    """An estimate of this CPU's fp32 peak: threads x clock x FLOP per cycle from its vector flags.

    FLOP/cycle/core: 2 FMA pipes x lanes x 2 (AVX-512: 16 lanes, AVX2+FMA: 8, else SSE 4 and no FMA).
    The clock is /proc/cpuinfo's current "cpu MHz" (turbo may be higher). An assumption, stated as such.
    """
    threads = threads or torch.get_num_threads()
    mhz, flags = 0.0, ""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
        clock, flag_line = re.search(r"cpu MHz\s*:\s*([\d.]+)", text), re.search(r"flags\s*:(.*)", text)
        if clock is None or flag_line is None:
            raise ValueError("no clock or flags line")
        mhz, flags = float(clock.group(1)), flag_line.group(1)
    except (OSError, ValueError):
        return {"flops": None, "reason": "/proc/cpuinfo does not give a clock and vector flags here"}
    if " avx512f" in flags:
        per_cycle, isa = 2 * 16 * 2, "AVX-512"
    elif " avx2" in flags and " fma" in flags:
        per_cycle, isa = 2 * 8 * 2, "AVX2 + FMA"
    else:
        per_cycle, isa = 4 * 2, "SSE"
    return {"flops": threads * mhz * 1e6 * per_cycle, "threads": threads, "ghz": mhz / 1e3,
            "flop_per_cycle": per_cycle, "isa": isa, "reason": ""}
