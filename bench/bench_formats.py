"""Speed targets of the formats chapter: a bit-explorer update <= 50 ms, the encoders' throughput, the lab <= 60 s.

Run: ``.venv/bin/python bench/bench_formats.py`` (prints one line per target and exits 1 if one is missed).
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time

import numpy as np

from aihw.formats import numerics

ROOT = pathlib.Path(__file__).resolve().parents[1]


def per_call(fn, repeats: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def main() -> int:
    from aihw.widgets import formats_lab

    x = np.random.default_rng(0).standard_normal(1_000_000)
    upd = per_call(lambda: formats_lab.bit_view("0.1", "fp8_e4m3"), 50)
    enc = per_call(lambda: numerics.encode(x, "bf16"), 3)
    blk = per_call(lambda: numerics.block_quantize(x.reshape(-1, 32), "nvfp4"), 3)
    print(f"(encode 1e6 values to bf16: {enc * 1e3:.0f} ms; NVFP4 block-quantize 1e6 values: {blk * 1e3:.0f} ms)")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "--nbval-lax", "-p", "no:cacheprovider",
                           str(ROOT / "labs" / "formats_lab.ipynb")], capture_output=True, text=True, cwd=ROOT)
    lab = time.perf_counter() - start
    ok = proc.returncode == 0
    for name, value, target in (("explorer update", upd, 0.05), ("lab top to bottom", lab, 60.0)):
        status = "ok" if value <= target else "TOO SLOW"
        ok &= value <= target
        print(f"{name:<18} {value * 1e3 if value < 1 else value:10.3f} {'ms' if value < 1 else 's '}"
              f"  (target <= {target * 1e3 if target < 1 else target:g} {'ms' if target < 1 else 's'})  {status}")
    if proc.returncode:
        print(proc.stdout[-2000:])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
