"""Decode measured: time per token against weight bytes / bandwidth, batch sweeps, prefill, KV-cache bytes.

On a GPU, decoding one token at batch 1 reads every weight from HBM once and does two FLOP per weight: its time
is bytes / bandwidth. A CPU has a last-level cache (LLC) of tens of MiB; a model that fits in it is read from the
cache, much faster than DRAM. So the experiments here use a **decode-bound configuration**: a GenGPT whose weights
are several times the LLC (read from ``/sys/devices/system/cpu/cpu0/cache`` where the OS exposes it), so every
token streams the weights from DRAM, as on a GPU.

All timings go through :func:`aihw.runtime.timing.time_op` (warm-up, repeats, median, device sync) and keep their
samples, so the callers show intervals, not single numbers.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import torch

from aihw._validate import require_positive
from aihw.inference.model import GenConfig, GenGPT
from aihw.runtime.timing import Timing, time_op
from aihw.transformer.flops import forward_flops_per_token

CACHE_SYSFS = Path("/sys/devices/system/cpu/cpu0/cache")
ASSUMED_LLC_BYTES = 32 * 2**20  # used, and said, when the OS does not expose the cache size


def _parse_size(text: str) -> int:
    text = text.strip().upper()
    units = {"K": 2**10, "M": 2**20, "G": 2**30}
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def last_level_cache(root: Path = CACHE_SYSFS) -> tuple[int | None, str]:
    """(bytes, sentence): the largest level-3 (else level-2) data/unified cache of CPU 0, or (None, why not)."""
    found: dict[int, int] = {}
    try:
        for index in sorted(root.glob("index*")):
            kind = (index / "type").read_text().strip()
            if kind == "Instruction":
                continue
            level = int((index / "level").read_text())
            found[level] = max(found.get(level, 0), _parse_size((index / "size").read_text()))
    except (OSError, ValueError) as err:
        return None, f"the cache size is not readable here ({err}); assuming {ASSUMED_LLC_BYTES / 2**20:g} MiB"
    for level in (3, 2):
        if level in found:
            return found[level], f"L{level} cache {found[level] / 2**20:g} MiB (read from {root})"
    return None, f"no level-2 or level-3 cache listed under {root}; assuming {ASSUMED_LLC_BYTES / 2**20:g} MiB"


def decode_bound_config(*, width: int = 1024, heads: int = 16, over_llc: float = 2.0,
                        bytes_per_weight: float = 4.0, llc_bytes: int | None = None, seq_len: int = 256,
                        kv_heads: int | None = None) -> GenConfig:
    """A GenGPT deep enough that its block weights are ``over_llc`` x the last-level cache at ``bytes_per_weight``
    (about 12 width² weights per layer)."""
    require_positive("over_llc", over_llc)
    llc = llc_bytes if llc_bytes is not None else (last_level_cache()[0] or ASSUMED_LLC_BYTES)
    per_layer = 12 * width * width * bytes_per_weight
    depth = max(1, math.ceil(over_llc * llc / per_layer))
    return GenConfig(vocab=256, width=width, depth=depth, heads=heads, kv_heads=kv_heads, seq_len=seq_len)


def decode_step(model: GenGPT, *, batch: int = 1, context: int = 16, seed: int = 0):
    """A prefilled cache and a function that runs one decode step (the same position each call) for timing."""
    require_positive("batch", batch, integer=True)
    require_positive("context", context, integer=True)
    if context >= model.cfg.seq_len:
        raise ValueError(f"context={context} must be below the model's {model.cfg.seq_len} positions")
    device = next(model.parameters()).device
    g = torch.Generator().manual_seed(seed)
    prompt = torch.randint(0, model.cfg.vocab, (batch, context), generator=g).to(device)
    cache = model.new_cache(batch, context + 1)
    with torch.no_grad():
        model.step(prompt, torch.arange(context, device=device).expand(batch, -1), cache)
    token = prompt[:, -1:]
    pos = torch.full((batch, 1), context, device=device)

    def step() -> torch.Tensor:
        with torch.no_grad():
            return model.step(token, pos, cache)

    return step


def time_decode(model: GenGPT, *, batch: int = 1, context: int = 16, repeats: int = 5, warmup: int = 2) -> Timing:
    """Seconds per decode step (one token for each of ``batch`` sequences)."""
    device = next(model.parameters()).device
    return time_op(decode_step(model, batch=batch, context=context), device=device, repeats=repeats,
                   warmup=warmup, min_sample_s=0.02)


def time_prefill(model: GenGPT, *, batch: int = 1, tokens: int = 64, repeats: int = 3) -> Timing:
    """Seconds to prefill ``tokens`` prompt tokens for ``batch`` sequences (one pass, filling a fresh cache)."""
    device = next(model.parameters()).device
    prompt = torch.randint(0, model.cfg.vocab, (batch, tokens), generator=torch.Generator().manual_seed(0))
    prompt = prompt.to(device)
    pos = torch.arange(tokens, device=device).expand(batch, -1)

    def run() -> torch.Tensor:
        with torch.no_grad():
            return model.step(prompt, pos, model.new_cache(batch, tokens))

    return time_op(run, device=device, repeats=repeats, warmup=1, min_sample_s=0.02)


def weights_read_per_step(model: GenGPT) -> int:
    """Bytes of the weights one decode step reads: every parameter except the position table (one row is read)
    and the token table's unused rows (the tied head reads the whole table anyway, so it counts once)."""
    pos = model.embed.pos.weight
    return sum(p.numel() * p.element_size() for p in model.parameters()) - pos.numel() * pos.element_size()


def step_flops(cfg: GenConfig, *, batch: int, context: int) -> float:
    """FLOP of one decode step: ``batch`` tokens, each attending to ``context + 1`` keys (the course's FLOP model)."""
    return batch * forward_flops_per_token(cfg.shape(), context + 1).forward


@dataclass(frozen=True)
class DecodePoint:
    """One measured decode configuration beside its roofline prediction."""

    label: str
    weight_bytes: float
    batch: int
    timing: Timing
    predicted_s: float  # max(bytes / bandwidth, FLOP / peak)
    memory_s: float  # bytes / bandwidth
    compute_s: float  # FLOP / peak

    @property
    def seconds(self) -> float:
        return self.timing.median

    @property
    def tokens_per_s(self) -> float:
        return self.batch / self.seconds

    @property
    def ratio(self) -> float:
        """measured / predicted."""
        return self.seconds / self.predicted_s


def measure_point(model: GenGPT, label: str, *, bandwidth: float, peak_flops: float, batch: int = 1,
                  context: int = 16, repeats: int = 5) -> DecodePoint:
    """Time one decode step and predict it from the weights and KV bytes it reads and the FLOPs it does."""
    cfg = model.cfg
    elem = next(model.parameters()).element_size()
    kv = 2 * cfg.depth * cfg.n_kv_heads * cfg.head_dim * (context + 1) * batch * elem
    nbytes = weights_read_per_step(model) + kv
    memory_s = nbytes / bandwidth
    compute_s = step_flops(cfg, batch=batch, context=context) / peak_flops
    timing = time_decode(model, batch=batch, context=context, repeats=repeats)
    return DecodePoint(label, float(weights_read_per_step(model)), batch, timing, max(memory_s, compute_s),
                       memory_s, compute_s)


def random_model(cfg: GenConfig, *, dtype: torch.dtype = torch.float32, seed: int = 0) -> GenGPT:
    """An untrained GenGPT (timing does not care what the weights say)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return GenGPT(cfg).to(dtype).eval()


MAX_COPY_MIB = 1024  # a copy of 4 x a very large LLC (hundreds of MiB on some servers) would take seconds


def dram_copy_mib(llc_bytes: int) -> float:
    """Size of a copy buffer that does not fit in a cache of ``llc_bytes``: 4 x the LLC, at most
    :data:`MAX_COPY_MIB` unless that is under 2 x the LLC."""
    llc_mib = require_positive("llc_bytes", llc_bytes) / 2**20
    return max(min(4 * llc_mib, MAX_COPY_MIB), 2 * llc_mib)


def measure_machine(*, device: str = "cpu", max_seconds: float = 15.0):
    """The reader's roofs: copy bandwidth on a buffer beyond the LLC (DRAM, not cache: :func:`dram_copy_mib`) and
    the best fp32 matmul rate, via :func:`aihw.measure.roofline.measure_device`. Returns (bandwidth bytes/s, peak FLOP/s, measurement)."""
    from aihw.measure.roofline import MeasureConfig, measure_device

    llc = last_level_cache()[0] or ASSUMED_LLC_BYTES
    cfg = MeasureConfig(device=device, dtypes=("fp32",), matmul_sizes=(256, 512), copy_mib=(dram_copy_mib(llc),),
                        repeats=3, max_seconds=max_seconds)
    m = measure_device(cfg)
    if not m.copy or not m.matmul:  # a loaded machine overran the budget: time what is missing once more, briefly
        again = measure_device(dataclasses.replace(cfg, repeats=1, warmup=1, max_seconds=600))
        m = dataclasses.replace(m, copy=m.copy or again.copy, matmul=m.matmul or again.matmul,
                                notes=m.notes + ("what overran its time budget was timed a second time, once "
                                                 "(a busy machine: read these roofs as rough)",))
    return m.best_bandwidth(), m.best_flops("fp32"), m
