"""Sweep times of the accelerator chapter: how long each experiment takes here, and what it measured.

Run: ``.venv/bin/python bench/bench_accelerator.py`` (prints one line per experiment: wall and CPU seconds, the
headline result with its spread). Nothing is asserted about speed: the numbers are for reading. The machine's
load average is printed first, since on a shared machine wall time and bandwidth depend on it.
"""

from __future__ import annotations

import os
import time

import torch

from aihw.accel import attention, fusion, hierarchy, profile
from aihw.chips import energy


def timed(label: str, fn):
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    print(f"{label:34} wall {time.perf_counter() - wall:6.2f} s   cpu {time.process_time() - cpu:6.2f} s")
    return result


def main() -> None:
    torch.set_num_threads(2)
    print(f"load average (1, 5, 15 min): {os.getloadavg()}")
    sweep = timed("working-set sweep 16 KiB-256 MiB", lambda: hierarchy.bandwidth_sweep(
        hierarchy.SweepConfig(min_bytes=16 << 10, max_bytes=256 << 20, bytes_per_point=32 << 20, repeats=3)))
    for r in sweep:
        print(f"    {r['bytes'] / 1024:>10,.0f} KiB  best {r['gbps']:7.1f} GB/s  (min {r['low']:.1f}, "
              f"median {r['median_gbps']:.1f})")
    plateaus = hierarchy.detect_plateaus([r["bytes"] for r in sweep], [r["gbps"] for r in sweep])
    print(f"    plateaus: {[round(p['bandwidth'], 1) for p in plateaus]}; OS caches: {hierarchy.os_cache_sizes()}")
    launch = timed("dispatch overhead", fusion.dispatch_overhead)
    print(f"    smallest op {launch['overhead_s'] * 1e6:.2f} us")
    fuse = timed("fusion (incl. torch.compile)", lambda: fusion.fusion_experiment(fusion.FusionConfig()))
    for r in fuse["rows"]:
        print(f"    {r['variant']:24} measured/predicted {r['ratio']:.2f} (min {r['low'] * 1e3:.2f} ms, "
              f"max {r['high'] * 1e3:.2f} ms)")
    rows = timed("attention 64/128/256", lambda: attention.compare_attention((64, 128, 256), heads=2))
    for r in rows:
        print(f"    seq {r['seq']:4} {r['kind']:6} {r['seconds'] * 1e3:8.2f} ms (min {r['low'] * 1e3:.2f}, "
              f"max {r['high'] * 1e3:.2f})  saved {r['saved_bytes'] / 1e6:.2f} MB")
    prof = timed("profile one TinyGPT step", profile.profile_step)
    print(f"    matmul {100 * prof.share('matmul'):.0f} %, memory-bound {100 * prof.memory_bound_share:.0f} %")
    timed("energy view n=256 (simulator)", lambda: energy.design_counts(256))


if __name__ == "__main__":
    main()
