"""Benchmark of the data-parallel chapter's targets; prints one line per number.

* own ring all-reduce throughput as a fraction of the built-in all-reduce at 16 MiB, 2 and 4 ranks (target >= 0.70);
* R² of the alpha-beta fit of the ring, 1 KiB..64 MiB (target >= 0.95);
* wall time of the lab notebook, executed top to bottom (target <= 90 s on 2 cores).

Usage: python bench/bench_collectives.py [--skip-lab] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import time

from aihw.parallel import collectives_bench as cb
from aihw.runtime.device import describe_device

SIXTEEN_MIB = 2**24
LAB = pathlib.Path(__file__).resolve().parents[1] / "labs" / "data_parallel_lab.ipynb"


def ring_vs_builtin(world_size: int, rounds: int) -> list[float]:
    """Ratio builtin_time / ring_time at 16 MiB, one launch with ``rounds`` interleaved measurements."""
    config = cb.BenchConfig(sizes_bytes=(SIXTEEN_MIB,) * rounds, algorithms=("ring", "builtin"), budget_s=1.0,
                            min_iters=5)
    rows = cb.measure(config, world_size=world_size, timeout_s=600)
    ring = [r["time_s"] for r in rows if r["algorithm"] == "ring"]
    builtin = [r["time_s"] for r in rows if r["algorithm"] == "builtin"]
    return [b / r for r, b in zip(ring, builtin, strict=True)]


def fit_quality(world_size: int) -> dict:
    rows = cb.measure(cb.BenchConfig(algorithms=("ring", "builtin"), budget_s=0.2), world_size=world_size,
                      timeout_s=600)
    out = {}
    for name in ("ring", "builtin"):
        link, r2 = cb.fit_rows(rows, name)
        out[name] = (r2, link.alpha_s, link.bandwidth_bytes_per_s)
    return out


def lab_seconds() -> float:
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(LAB, as_version=4)
    start = time.perf_counter()
    NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(LAB.parent)}}
                   ).execute()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-lab", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    info = describe_device("cpu")
    print(f"machine: {info['cpu_cores']} cores ({info['cpu_model']}), load {info.get('load_average_1min')}, "
          f"torch {info['torch_version']}, gloo, 1 thread per rank")
    for world_size in (2, 4):
        ratios = ring_vs_builtin(world_size, args.rounds)
        print(f"ring / builtin throughput at 16 MiB, {world_size} ranks: median {statistics.median(ratios):.2f} "
              f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)}; target >= 0.70)")
    for world_size in (2, 4):
        for name, (r2, alpha, bandwidth) in fit_quality(world_size).items():
            print(f"fit {name:>7}, {world_size} ranks, 1 KiB..64 MiB: R2 = {r2:.3f} (target >= 0.95), "
                  f"alpha = {alpha * 1e6:.1f} us, B = {bandwidth / 1e9:.3f} GB/s")
    if not args.skip_lab:
        print(f"lab {LAB.name}: {lab_seconds():.1f} s (target <= 90 s on {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
