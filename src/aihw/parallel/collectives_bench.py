"""Measure all-reduce time against message size for each teaching algorithm and the built-in one.

One launch measures every (algorithm, size) pair: per point a warm-up call, then enough calls to fill
``budget_s`` (at least ``min_iters``), each timed on its own; the time is the median call on the slowest rank
(nccl-tests reports the mean; the median resists a busy machine better). Reported per point: seconds, algbw = bytes / time and busbw (nccl-tests factors).
The buffers hold zeros, so repeated sums never overflow; the cost of sending and adding does not depend on
the values. From a terminal::

    torchrun --standalone --nproc-per-node 4 -m aihw.parallel.collectives_bench --max-bytes 16777216
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
import torch.distributed as dist

from aihw._validate import require_choice, require_positive
from aihw.comm.collectives import LinkModel, algorithm_bandwidth, bus_bandwidth, fit_alpha_beta
from aihw.parallel.collectives import ALGORITHM_NAMES, all_reduce
from aihw.parallel.launch import LaunchConfig, RankContext, launch, run_under_torchrun
from aihw.runtime.timing import time_op

CPU = torch.device("cpu")
DEFAULT_SIZES = tuple(2**k for k in range(10, 27, 2))  # 1 KiB, 4 KiB, ..., 64 MiB (bytes)


@dataclass(frozen=True)
class BenchConfig:
    """What one all-reduce measurement sweeps."""

    sizes_bytes: tuple[int, ...] = DEFAULT_SIZES  # message sizes in bytes (multiples of 4: float32 buffers)
    algorithms: tuple[str, ...] = ALGORITHM_NAMES  # teaching algorithms and/or "builtin"
    budget_s: float = 0.15  # seconds of timed calls per point (after one warm-up call)
    min_iters: int = 2  # at least this many timed calls per point
    max_iters: int = 200  # at most this many

    def __post_init__(self) -> None:
        object.__setattr__(self, "sizes_bytes", tuple(self.sizes_bytes))
        object.__setattr__(self, "algorithms", tuple(self.algorithms))
        if not self.sizes_bytes or not self.algorithms:
            raise ValueError("sizes_bytes and algorithms must each name at least one value")
        for size in self.sizes_bytes:
            require_positive("message size (bytes)", size, integer=True)
            if size % 4:
                raise ValueError(f"message size must be a multiple of 4 bytes (float32), got {size}")
        for name in self.algorithms:
            require_choice("algorithm", name, ALGORITHM_NAMES)
        require_positive("budget_s", self.budget_s)
        require_positive("min_iters", self.min_iters, integer=True)
        require_positive("max_iters", self.max_iters, integer=True)
        if self.max_iters < self.min_iters:
            raise ValueError(f"max_iters={self.max_iters} must be >= min_iters={self.min_iters}")


def _slowest(seconds: list[float], device: torch.device) -> list[float]:
    """Element-wise maximum over ranks: a collective is as slow as its slowest rank."""
    value = torch.tensor(seconds, dtype=torch.float64, device=device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return value.tolist()


def time_all_reduce(algorithm: str, size_bytes: int, config: BenchConfig,
                    device: torch.device = CPU) -> tuple[float, int]:
    """(median seconds per call on the slowest rank, calls timed) for one algorithm and size; call on every rank.

    Each call is timed on its own; the median, not the mean, so that a call delayed by another program on a
    busy machine does not move the result.
    """
    buffer = torch.zeros(size_bytes // 4, dtype=torch.float32, device=device)

    def call() -> None:
        all_reduce(buffer, algorithm)

    # inner=1: every call timed on its own, and every rank makes the same calls (a collective needs them all)
    dist.barrier()
    estimate = _slowest([time_op(call, device=device, warmup=0, repeats=1, inner=1).median], device)[0]
    iters = int(min(config.max_iters, max(config.min_iters, config.budget_s // max(estimate, 1e-9))))
    dist.barrier()
    seconds = time_op(call, device=device, warmup=0, repeats=iters, inner=1).samples
    return statistics.median(_slowest(list(seconds), device)), iters


def bench_worker(ctx: RankContext, config: BenchConfig) -> list[dict] | None:
    """Every (algorithm, size) point of ``config``; rank 0 returns the rows, the other ranks None."""
    rows = []
    for size in config.sizes_bytes:
        for algorithm in config.algorithms:
            seconds, iters = time_all_reduce(algorithm, size, config, ctx.device)
            algbw = algorithm_bandwidth(size, seconds)
            rows.append({"algorithm": algorithm, "world_size": ctx.world_size, "size_bytes": size,
                         "time_s": seconds, "iters": iters, "algbw": algbw,
                         "busbw": bus_bandwidth(algbw, ctx.world_size) if ctx.world_size > 1 else 0.0,
                         "backend": ctx.backend})
            ctx.progress(f"{algorithm} {size}")
    return rows if ctx.rank == 0 else None


def measure(config: BenchConfig = BenchConfig(), *, world_size: int = 2, timeout_s: float = 300.0,
            on_progress: Callable[[str], None] | None = None) -> list[dict]:
    """Run :func:`bench_worker` on ``world_size`` spawned ranks (one thread each); return rank 0's rows.

    ``on_progress(message)`` is called once per finished (algorithm, size) point."""
    return launch(bench_worker, config, config=LaunchConfig(world_size=world_size, timeout_s=timeout_s),
                  on_progress=on_progress)[0]


def rows_for(rows: list[dict], algorithm: str) -> list[dict]:
    """The rows of one algorithm, by increasing size."""
    return sorted((r for r in rows if r["algorithm"] == algorithm), key=lambda r: r["size_bytes"])


def fit_rows(rows: list[dict], algorithm: str) -> tuple[LinkModel, float]:
    """Fit the alpha-beta model of ``algorithm`` ("builtin" is fitted as a ring) to measured rows."""
    mine = rows_for(rows, algorithm)
    if not mine:
        raise ValueError(f"no measurements of algorithm {algorithm!r}")
    model = "ring" if algorithm == "builtin" else algorithm
    return fit_alpha_beta([r["size_bytes"] for r in mine], [r["time_s"] for r in mine],
                          mine[0]["world_size"], model)


def ratio_to_builtin(rows: list[dict], size_bytes: int, algorithm: str = "ring") -> float:
    """Throughput of ``algorithm`` as a fraction of the built-in all-reduce at ``size_bytes``."""
    times = {r["algorithm"]: r["time_s"] for r in rows if r["size_bytes"] == size_bytes}
    if algorithm not in times or "builtin" not in times:
        raise ValueError(f"need {algorithm!r} and 'builtin' measured at {size_bytes} bytes")
    return times["builtin"] / times[algorithm]


def format_rows(rows: list[dict]) -> str:
    """A plain-text table: algorithm, size, time, algbw and busbw (GB/s = 1e9 bytes/s)."""
    lines = [f"{'algorithm':>18} {'bytes':>10} {'time (us)':>11} {'algbw GB/s':>11} {'busbw GB/s':>11}"]
    for r in rows:
        lines.append(f"{r['algorithm']:>18} {r['size_bytes']:>10} {r['time_s'] * 1e6:>11.1f} "
                     f"{r['algbw'] / 1e9:>11.3f} {r['busbw'] / 1e9:>11.3f}")
    return "\n".join(lines)


def _main() -> None:
    parser = argparse.ArgumentParser(description="all-reduce time vs message size (run under torchrun)")
    parser.add_argument("--max-bytes", type=int, default=DEFAULT_SIZES[-1])
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHM_NAMES))
    args = parser.parse_args()
    config = BenchConfig(sizes_bytes=tuple(s for s in DEFAULT_SIZES if s <= args.max_bytes),
                         algorithms=tuple(args.algorithms))
    rows = run_under_torchrun(bench_worker, config)
    if rows is not None:
        print(format_rows(rows), flush=True)
        print({"config": asdict(config)}, flush=True)


if __name__ == "__main__":
    _main()
