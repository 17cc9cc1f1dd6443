"""Wall time of the cycle-by-cycle systolic simulator (aihw.chips.systolic.simulate) on this machine.

Target: a 64 x 64 array on 256 x 256 matrices in <= 2 s. Run: python bench/bench_systolic.py
"""

from __future__ import annotations

import time

import numpy as np

from aihw.chips.systolic import DATAFLOWS, simulate

TARGET_S = 2.0
TARGET_CASE = (64, 256)      # (array size, matrix size) the target applies to
CASES = [(8, 64), (16, 128), (32, 256), (64, 256), (128, 256), (128, 512)]


def main() -> int:
    rng = np.random.default_rng(0)
    header = f"{'array':>9} {'matrices':>9} {'dataflow':>18} {'cycles':>8} {'mean util':>9} {'wall s':>7} " \
             f"{'target':>7} {'result':>6}"
    print(header)
    print("-" * len(header))
    failures = 0
    for size, n in CASES:
        A, B = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        for dataflow in DATAFLOWS:
            start = time.perf_counter()
            result = simulate(A, B, size=size, dataflow=dataflow)
            wall = time.perf_counter() - start
            np.testing.assert_allclose(result.C, A @ B, rtol=1e-9, atol=1e-9)
            is_target = (size, n) == TARGET_CASE
            verdict = ("PASS" if wall <= TARGET_S else "FAIL") if is_target else ""
            failures += verdict == "FAIL"
            target = f"<={TARGET_S:g} s" if is_target else ""
            print(f"{size:>4}x{size:<4} {n:>4}x{n:<4} {dataflow:>18} {result.cycles:>8} "
                  f"{result.mean_utilisation:>9.1%} {wall:>7.3f} {target:>7} {verdict:>6}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
