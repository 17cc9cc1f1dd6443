"""Measure this machine with aihw.measure.roofline's default config and print what it found.

Run: .venv/bin/python bench/bench_measure.py  (GFLOP/s = 1e9 FLOP/s, GB/s = 1e9 bytes/s, copy counts
read + write bytes).
"""

from __future__ import annotations

import time

from aihw.measure.roofline import MeasureConfig, measure_device


def main() -> None:
    config = MeasureConfig()
    start = time.perf_counter()
    result = measure_device(config)
    total = time.perf_counter() - start
    info = result.description
    print(f"device {result.device} | {info['cpu_model']} | {info['cpu_cores']} cores | "
          f"{info['torch_threads']} torch threads | torch {info['torch_version']}")
    if "cuda_device_name" in info:
        print(f"GPU {info['cuda_device_name']}, {info['cuda_memory_bytes'] / 2**30:.1f} GiB")
    print(f"\n{'dtype':>6} {'n':>6} {'ms':>10} {'GFLOP/s':>10} {'FLOP/byte':>10}")
    for p in result.matmul:
        print(f"{p.dtype:>6} {p.n:>6} {p.seconds * 1e3:>10.3f} {p.flops_per_s / 1e9:>10.1f} "
              f"{p.intensity:>10.1f}")
    print(f"\n{'copy MiB':>8} {'ms':>10} {'GB/s':>10}")
    for c in result.copy:
        print(f"{c.mib:>8g} {c.seconds * 1e3:>10.3f} {c.bytes_per_s / 1e9:>10.1f}")
    for reason in result.skipped:
        print(f"skipped {reason}")
    for note in result.notes:
        print(f"note: {note}")
    print(f"\ntotal {total:.2f} s (budget max_seconds={config.max_seconds:g})")


if __name__ == "__main__":
    main()
