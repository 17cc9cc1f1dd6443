"""Speed targets of the memory chapter: an estimate <= 1 ms, a widget update <= 100 ms, the lab <= 60 s.

Run: ``.venv/bin/python bench/bench_memory.py`` (prints one line per target and exits 1 if one is missed).
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from aihw.memory.estimator import estimate_memory  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]


def per_call(fn, repeats: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def main() -> int:
    from aihw.widgets import memory_lab

    def widget_update():  # what a control change does: estimate, verdict, chips needed, HTML bars
        memory_lab.html_bars(memory_lab.memory_view(model="llama-3-70b", zero=3, dp=32, tp=8, seq=8192))

    def static_figure():  # the matplotlib figure the book shows (not redrawn on control changes)
        fig = memory_lab.draw(memory_lab.memory_view(model="llama-3-70b", zero=3, dp=32, tp=8, seq=8192))
        fig.canvas.draw()
        plt.close(fig)

    est = per_call(lambda: estimate_memory("llama-3-70b", zero=3, dp=8, tp=8, pp=4, recompute="selective"), 2000)
    upd = per_call(widget_update, 50)
    print(f"(static matplotlib figure, not part of a live update: {per_call(static_figure, 5) * 1e3:.0f} ms)")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "--nbval-lax", "-p", "no:cacheprovider",
                           str(ROOT / "labs" / "memory_lab.ipynb")], capture_output=True, text=True, cwd=ROOT)
    lab = time.perf_counter() - start
    results = [("estimate", est, 1e-3), ("widget update", upd, 0.1), ("lab top to bottom", lab, 60.0)]
    ok = proc.returncode == 0
    for name, value, target in results:
        status = "ok" if value <= target else "TOO SLOW"
        ok &= value <= target
        print(f"{name:<18} {value * 1e3 if value < 1 else value:10.3f} {'ms' if value < 1 else 's '}"
              f"  (target <= {target * 1e3 if target < 1 else target:g} {'ms' if target < 1 else 's'})  {status}")
    if proc.returncode:
        print(proc.stdout[-2000:])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
