"""Speed targets of the inference chapter: a serving estimate <= 1 ms, a widget update <= 100 ms, the lab <= 60 s.

Also prints the fidelity numbers the chapter relies on: decode time vs bytes / bandwidth on this machine (median
and min-max of repeated runs) and the KV bytes measured from tensors vs the formula.
Run: ``.venv/bin/python bench/bench_inference.py [--no-lab]`` (one line per target; exit 1 if one is missed).
The lab's first run also trains the draft and target models (cached under ~/.cache/aihw afterwards).
"""

from __future__ import annotations

import pathlib
import statistics
import subprocess
import sys
import time

from aihw.serving.estimator import estimate_serving

ROOT = pathlib.Path(__file__).resolve().parents[1]


def per_call(fn, repeats: int) -> list[float]:
    fn()
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        samples.append((time.perf_counter() - start) / repeats)
    return samples


def main() -> int:
    from aihw.widgets import inference_lab

    est = per_call(lambda: estimate_serving("llama-2-70b", chip="H100 SXM", batch=32, context=4096, tp=8), 200)
    upd = per_call(lambda: inference_lab.serving_view(model="llama-3-70b", batch=64, context=8192, tp=8), 50)
    results = [("serving estimate", est, 1e-3), ("widget update", upd, 0.1)]
    if "--no-lab" not in sys.argv:
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "--nbval-lax", "-p", "no:cacheprovider",
                               str(ROOT / "labs" / "inference_lab.ipynb")], capture_output=True, text=True, cwd=ROOT)
        results.append(("lab top to bottom", [time.perf_counter() - start], 60.0))
        if proc.returncode:
            print(proc.stdout[-3000:])
    ok = True
    for name, samples, target in results:
        value = statistics.median(samples)
        unit, scale = ("ms", 1e3) if target < 1 else ("s", 1.0)
        status = "ok" if value <= target else "TOO SLOW"
        ok &= value <= target
        print(f"{name:<18} median {value * scale:9.3f} {unit} [min {min(samples) * scale:.3f}, max "
              f"{max(samples) * scale:.3f}]  (target <= {target * scale:g} {unit})  {status}")
    fidelity()
    return 0 if ok else 1


def fidelity() -> None:
    import torch

    from aihw.inference import decode
    from aihw.inference.model import GenConfig
    from aihw.serving.estimator import kv_bytes_per_token

    torch.set_num_threads(2)
    bandwidth, peak, machine = decode.measure_machine(max_seconds=10)
    llc, message = decode.last_level_cache()
    print(f"{machine.label}: copy {bandwidth / 1e9:.2f} GB/s, fp32 {peak / 1e9:.1f} GFLOP/s; {message}")
    cfg = decode.decode_bound_config(width=768, heads=12, over_llc=2.0, llc_bytes=llc, seq_len=64)
    p = decode.measure_point(decode.random_model(cfg), "decode-bound", bandwidth=bandwidth, peak_flops=peak,
                             repeats=7)
    lo, hi = p.timing.spread
    print(f"decode {cfg.width}x{cfg.depth} ({p.weight_bytes / 1e6:.0f} MB): measured {p.seconds * 1e3:.2f} ms "
          f"[{lo * 1e3:.2f}, {hi * 1e3:.2f}] vs bytes/bandwidth {p.predicted_s * 1e3:.2f} ms: ratio {p.ratio:.2f}")
    m = decode.random_model(GenConfig(width=256, depth=2, heads=8, kv_heads=2, seq_len=64))
    cache = m.new_cache(4, 64)
    print(f"KV bytes measured {cache.nbytes()} vs formula {kv_bytes_per_token(m.cfg.shape(), 4) * 64 * 4}")


if __name__ == "__main__":
    sys.exit(main())
