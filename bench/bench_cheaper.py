"""Dynamic INT8 against fp32 on this CPU, and the run time of the "Making models cheaper" lab.

Run: .venv/bin/python bench/bench_cheaper.py [--skip-lab]

Target from the issue: INT8 dynamic at least 1.5× faster than fp32, at most 1 point of accuracy lost, 4× smaller.
On the chapter's small 256-wide digits MLP, fixed costs can dominate at small batches, so the bench also trains
a 1024-wide MLP on the same data (cached under ~/.cache/aihw) and reports every batch size, with one torch
thread and with torch's default; nothing is hidden. Sizes are serialized state_dicts (kB = 1e3 bytes).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
import warnings
from pathlib import Path

import torch

from aihw.cheaper import quantize_model
from aihw.models import digits

TARGET_SPEEDUP, TARGET_DROP_POINTS, TARGET_SIZE_RATIO = 1.5, 1.0, 4.0
BATCHES = (1, 16, 64, 256, 1024)


def bench_model(hidden: tuple[int, ...]) -> list[dict]:
    start = time.perf_counter()
    model, data = digits.trained_mlp(digits.TrainConfig(hidden=hidden))
    load_s = time.perf_counter() - start
    int8, backend = quantize_model.dynamic_int8(model)
    acc = {k: 100 * digits.accuracy(m, data.x_test, data.y_test) for k, m in (("fp32", model), ("int8", int8))}
    size = {k: digits.size_bytes(m) for k, m in (("fp32", model), ("int8", int8))}
    print(f"\nMLP 64→{'→'.join(map(str, hidden))}→10 (trained or loaded in {load_s:.1f} s), INT8 via {backend}")
    print(f"  accuracy fp32 {acc['fp32']:.2f}%  int8 {acc['int8']:.2f}%  (drop {acc['fp32'] - acc['int8']:+.2f} points)")
    print(f"  size fp32 {size['fp32'] / 1e3:.1f} kB  int8 {size['int8'] / 1e3:.1f} kB  "
          f"({size['fp32'] / size['int8']:.2f}× smaller; Linear weights alone: exactly 4×)")
    print(f"  {'threads':>7} {'batch':>6} {'fp32 µs':>10} {'int8 µs':>10} {'speed-up':>9}")
    rows = []
    for threads in (1, None):
        for batch in BATCHES:
            x = data.x_test.repeat(-(-batch // len(data.x_test)), 1)[:batch]
            t = digits.latencies({"fp32": model, "int8": int8}, x, repeats=15, threads=threads)
            rows.append({"hidden": hidden, "threads": threads or torch.get_num_threads(), "batch": batch,
                         "speedup": t["fp32"] / t["int8"], "drop": acc["fp32"] - acc["int8"],
                         "size_ratio": size["fp32"] / size["int8"]})
            print(f"  {rows[-1]['threads']:>7} {batch:>6} {t['fp32'] * 1e6:>10.1f} {t['int8'] * 1e6:>10.1f} "
                  f"{rows[-1]['speedup']:>8.2f}×")
    return rows


def verdict(rows: list[dict]) -> None:
    print("\nTarget: ≥ 1.5× faster, ≤ 1 point lost, 4× smaller (size: ≥ 3.9×, allowing fp32 biases and headers)")
    for hidden in dict.fromkeys(r["hidden"] for r in rows):
        mine = [r for r in rows if r["hidden"] == hidden]
        met = [r for r in mine if r["speedup"] >= TARGET_SPEEDUP]
        ok_acc, ok_size = mine[0]["drop"] <= TARGET_DROP_POINTS, mine[0]["size_ratio"] >= 0.975 * TARGET_SIZE_RATIO
        where = ", ".join(f"batch {r['batch']}/{r['threads']}t" for r in met) or "nowhere"
        print(f"  width {hidden[0]}: speed-up ≥ 1.5× at {where}; accuracy {'OK' if ok_acc else 'MISSED'}; "
              f"size {'OK' if ok_size else 'MISSED'} ({mine[0]['size_ratio']:.2f}×)")


def time_lab() -> None:
    import nbformat
    from nbclient import NotebookClient

    path = Path(__file__).resolve().parents[1] / "labs" / "cheaper_lab.ipynb"
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    print(f"\nlab {path.name}: ran top to bottom in {time.perf_counter() - start:.1f} s (target ≤ 60 s on 2 cores; "
          "the model came from the cache if it was there)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-lab", action="store_true", help="do not time the lab notebook")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{platform.processor() or platform.machine()} | {os.cpu_count()} cores | torch {torch.__version__} | "
          f"default threads {torch.get_num_threads()} | quantized engine {torch.backends.quantized.engine} | "
          f"load average {load:.1f} (timings on a busy machine are noisy)")
    start = time.perf_counter()
    data = digits.load_digits()
    digits.train_mlp(data, digits.TrainConfig())
    print(f"training the chapter's model from scratch (no cache): {time.perf_counter() - start:.1f} s (target ≤ 30 s)")
    rows = bench_model((256, 256)) + bench_model((1024, 1024))
    verdict(rows)
    if not args.skip_lab:
        time_lab()


if __name__ == "__main__":
    main()
