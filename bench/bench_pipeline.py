"""Measured vs theoretical pipeline bubble for p = 2, 3 stages and m = 1..8 micro-batches (gloo, CPU).

Run: ``python bench/bench_pipeline.py [--schedule 1f1b] [--width 128]``. One launch per p runs every m.
Each rank uses one thread. With p ranks on fewer cores than p (e.g. p=3 on 2 cores) the ranks share cores:
a stage computes more slowly while its neighbours compute too, so compute stretches in the steady state and
the measured bubble comes out *below* the equal-stage theory. The table says how many cores this machine has.
Also times the same step under torch.distributed.pipelining and the lab's run.
"""

from __future__ import annotations

import argparse
import os
import time

from aihw.pipeline import PipelineConfig, run_pipeline, summary, torch_pipelining_worker
from aihw.tinygpt import TinyGPTConfig


def bench_bubble(schedule: str, width: int, micro_batch_size: int, steps: int) -> None:
    model = TinyGPTConfig(width=width, depth=6, heads=4, seq_len=128)
    print(f"\nschedule {schedule}; TinyGPT width {width}, 6 blocks, seq 128, micro-batch {micro_batch_size}; "
          f"{os.cpu_count()} CPU cores, 1 thread per rank; fastest of {steps} steps")
    print(f"{'p':>2} {'m':>2} {'fwd ms':>7} {'bwd ms':>7} {'step ms':>8} {'measured':>9} {'theory':>7} "
          f"{'sim(measured t)':>15} {'meas/theory':>11}")
    for p in (2, 3):
        t0 = time.perf_counter()
        configs = [PipelineConfig(model=model, micro_batches=m, micro_batch_size=micro_batch_size,
                                  schedule=schedule, steps=steps) for m in range(1, 9)]
        for runs in run_pipeline(configs, stages=p, timeout_s=600):
            s = summary(runs)
            print(f"{p:>2} {s['m']:>2} {1e3 * sum(s['forward_s']) / p:>7.1f} {1e3 * sum(s['backward_s']) / p:>7.1f} "
                  f"{1e3 * s['step_s']:>8.1f} {s['bubble_measured']:>9.1%} {s['bubble_theory']:>7.1%} "
                  f"{s['bubble_simulated']:>15.1%} {s['bubble_measured'] / s['bubble_theory']:>11.2f}")
        note = " (oversubscribed: more ranks than cores)" if p > (os.cpu_count() or 1) else ""
        print(f"   p={p}: {time.perf_counter() - t0:.1f} s wall, launch included{note}")


def bench_torch_pipelining(width: int, micro_batch_size: int) -> None:
    from aihw.launch import LaunchConfig, launch

    model = TinyGPTConfig(width=width, depth=6, heads=4, seq_len=128)
    print("\naihw schedules vs torch.distributed.pipelining (p=2, m=4, gloo), fastest step:")
    for schedule in ("gpipe", "1f1b"):
        cfg = PipelineConfig(model=model, micro_batches=4, micro_batch_size=micro_batch_size, schedule=schedule)
        ours = summary(run_pipeline(cfg, stages=2)[0])["step_s"]
        theirs = max(r["step_s"] for r in launch(torch_pipelining_worker, cfg,
                                                 config=LaunchConfig(world_size=2, backend="gloo")))
        print(f"  {schedule:>5}: aihw {1e3 * ours:.1f} ms, torch.distributed.pipelining {1e3 * theirs:.1f} ms")


def bench_lab() -> None:
    import subprocess
    import sys

    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "--nbval-lax", "labs/model_parallel_lab.ipynb"],
                   check=True)
    print(f"\nlab labs/model_parallel_lab.ipynb ran in {time.perf_counter() - t0:.1f} s (target <= 90 s)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedule", default="both", choices=("gpipe", "1f1b", "both"))
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--micro-batch-size", type=int, default=4)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--skip-lab", action="store_true")
    args = parser.parse_args()
    for name in (("gpipe", "1f1b") if args.schedule == "both" else (args.schedule,)):
        bench_bubble(name, args.width, args.micro_batch_size, args.steps)
    bench_torch_pipelining(args.width, args.micro_batch_size)
    if not args.skip_lab:
        bench_lab()
