# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Lab: Data parallelism and collectives
#
# **Question.** When several workers train one model, how long does averaging their gradients take — on your
# machine, and on a real cluster — and do the workers really end with the same weights as one process would?
#
# You will (1) predict all-reduce times with the alpha-beta model, (2) measure your own machine and fit the model,
# (3) train a small network with several worker processes and compare it with a single process, (4) extrapolate to
# GPU and TPU clusters, and (5) check three answers of your own. Widgets need a running kernel; below each widget
# the default result is also drawn as an ordinary figure. Every run uses one thread per worker process: with more
# workers than CPU cores, workers take turns on the cores and the timings say so.

# %%
# Set-up: without the course package (a fresh Colab runtime, say) this installs the version this book was
# built with, from the book's own site or else the repository; the runtime's torch, numpy, matplotlib and
# ipywidgets are pinned as they are, so nothing of theirs is replaced.
try:
    import aihw  # noqa: F401  (imported to check it is installed)
except ImportError:
    import importlib
    import subprocess
    import sys
    import tempfile
    from importlib import metadata
    BOOK = "https://aihw-course.github.io/aihw"  # where this book is published (html.baseurl in _config.yml)
    SOURCES = [f"{BOOK}/_static/wheels/aihw-0.1.0-py3-none-any.whl", "git+https://github.com/aihw-course/aihw@v0.1.0"]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as keep:
        for name in ("torch", "numpy", "matplotlib", "ipywidgets"):
            try:
                keep.write(f"{name}=={metadata.version(name)}\n")
            except metadata.PackageNotFoundError:
                pass
    for source in SOURCES:
        pip = [sys.executable, "-m", "pip", "install", "-q", "-c", keep.name, f"aihw[labs] @ {source}"]
        done = subprocess.run(pip, capture_output=True, text=True)
        if done.returncode == 0:
            break
        print(f"Could not install from {source}:", (done.stderr.strip().splitlines() or ["?"])[-1])
    importlib.invalidate_caches()
    import aihw  # noqa: F401
from aihw.measure.environment import environment

display(environment())  # this runtime in one block: versions, device, GPU and its catalogue chip
import os

import matplotlib.pyplot as plt
import torch

from aihw.comm import collectives as cc
from aihw.exercises import check, compare_prediction, expected, reveal
from aihw.memory import MemoryConfig, estimate
from aihw.parallel import collectives_bench
from aihw.parallel import data_parallel as dp
from aihw.plots.data_parallel import plot_cluster_estimates, plot_loss_curves, plot_time_vs_size
from aihw.widgets import data_parallel_lab

print(f"aihw {aihw.__version__}, torch {torch.__version__}, {os.cpu_count()} CPU cores")
from aihw.plots.style import setup_book

setup_book()  # the book's figure style: column width, legible text, SVG

# %% [markdown]
# ## Predict: naive vs ring
#
# In the alpha-beta model a message of $n$ bytes costs $\alpha + n/B$. The naive all-reduce (everything to rank 0
# and back) pushes $2(p-1)\,n$ bytes through rank 0's link; the ring pushes $2\frac{p-1}{p}\,n$ through every
# link at once. With a made-up link (α = 50 µs, B = 1 GB/s), what does the model predict for 2 and 4 ranks?

# %%
guess = cc.LinkModel(alpha_s=50e-6, bandwidth_bytes_per_s=1e9, name="a guess for loopback")
for p in (2, 4):
    for algorithm in ("naive", "ring", "tree", "recursive-doubling"):
        t = cc.all_reduce_time(4 * 2**20, p, link=guess, algorithm=algorithm)
        print(f"{p} ranks, {algorithm:>18}: {t * 1e3:6.2f} ms for 4 MiB")
assert cc.all_reduce_time(2**22, 4, link=guess, algorithm="ring") < cc.all_reduce_time(2**22, 4, link=guess,
                                                                                         algorithm="naive")

# %% [markdown]
# ## Measure: all-reduce on your machine
#
# The panel starts worker processes (gloo backend), times each algorithm for message sizes up to the one you pick,
# fits α and B per algorithm, and draws measurement (solid) against model (dashed). The cell also runs one
# measurement directly: 2 ranks, naive, ring and built-in, 1 KiB to 16 MiB.

# %%
display(data_parallel_lab.collectives_panel(world_size=2, algorithms=("naive", "ring", "builtin"), max_bytes=2**22))

# Before running: predict how many times longer the naive all-reduce takes than the ring at the largest size.
my_naive_over_ring = None  # ratio (the model says 2 for 2 ranks)

config = collectives_bench.BenchConfig(sizes_bytes=tuple(2**k for k in range(10, 25, 2)),
                                       algorithms=("naive", "ring", "builtin"), budget_s=0.1)
rows = collectives_bench.measure(config, world_size=2)
fits, table = data_parallel_lab.measurement_summary(rows)
plot_time_vs_size(rows, fits=fits)
plt.show()
for name, link in fits.items():
    r2 = collectives_bench.fit_rows(rows, name)[1]
    print(f"{name:>8}: alpha = {link.alpha_s * 1e6:7.1f} us, B = {link.bandwidth_bytes_per_s / 1e9:6.3f} GB/s, R2 = {r2:.3f}"
          f"  {cc.fit_flag(r2)}")
print("no fit (times did not grow with size; was the machine busy?):", set(config.algorithms) - set(fits) or "none")
largest = max(r["size_bytes"] for r in rows)
at_largest = {r["algorithm"]: r["time_s"] for r in rows if r["size_bytes"] == largest}
display(compare_prediction(f"naive / ring time at {largest / 2**20:g} MiB", my_naive_over_ring,
                           at_largest["naive"] / at_largest["ring"]))
assert all(r["time_s"] > 0 and r["busbw"] == r["algbw"] for r in rows)  # 2 ranks: busbw = algbw x 2(2-1)/2
assert fits and all(link.bandwidth_bytes_per_s > 0 and link.alpha_s >= 0 for link in fits.values())

# %% [markdown]
# **Compare.** Is the ring faster than the naive scheme for the largest message, by the factor of 2 the model
# predicts for 2 ranks? How does your ring compare with the built-in all-reduce? For small messages, which term
# of the model dominates?
#
# ## Train with several workers
#
# Each worker takes its own slice of every batch of handwritten digits; after backward the workers average their
# gradients (`naive`: one all-reduce per tensor; `bucketed`: buckets sent while backward is still running; `ddp`:
# PyTorch's `DistributedDataParallel`). The thin lines are each rank's loss on its own slice; the thick line their
# mean; the dashed line a single process training on the whole batch.

# %%
display(data_parallel_lab.training_panel(world_size=2, mode="bucketed", steps=30))

config = dp.DPConfig(mode="bucketed", steps=30)
reference = dp.train_single(config)
per_rank = dp.run(config, world_size=2)
plot_loss_curves(per_rank, reference=reference)
plt.show()
summary = data_parallel_lab.training_summary(per_rank, reference)
print(summary)
assert summary["ranks_identical"]  # every rank holds bit-identical weights
for r in per_rank:
    for name, tensor in reference["state"].items():
        torch.testing.assert_close(r["state"][name], tensor)  # equal to one process on the global batch

# %% [markdown]
# **On a GPU runtime with one GPU** the cell below trains the same two ranks on the GPU: both compute on `cuda:0`
# and their gradients travel through gloo, which carries CUDA tensors for all-reduce (NCCL wants a GPU per rank).
# The ranks still end bit-identical; against the single CPU process the weights agree to float rounding only
# (different kernels sum in a different order). On a CPU it says why it does not run.

# %%
if torch.cuda.is_available():
    on_gpu = dp.run(config, world_size=2, gpu_compute=True)
    print(on_gpu[0]["backend_reason"])
    assert data_parallel_lab.training_summary(on_gpu, reference)["ranks_identical"]
    for r in on_gpu:
        for name, tensor in reference["state"].items():
            torch.testing.assert_close(r["state"][name], tensor, rtol=1e-3, atol=1e-4)
else:
    print("skipped: no CUDA GPU here, so the ranks above computed on the CPU")

# %% [markdown]
# ## Extrapolate: gradients of a real model on a real cluster
#
# Bandwidths come from the course's catalogues (NVLink and ICI per chip and direction; InfiniBand and Ethernet per
# GPU port). Change the model size, the network or the number of nodes: the table and the chart update at once.

# %%
display(data_parallel_lab.cluster_panel(params=7e9))

estimates, table = data_parallel_lab.cluster_report(7e9, bytes_per_value=2, nodes=4, tpu_chips=32)
plot_cluster_estimates(estimates, title="All-reduce of 7B bf16 gradients, alpha-beta model")
plt.show()
one_node, hierarchical, flat, tpu = estimates
assert one_node.time_s < hierarchical.time_s < flat.time_s

# %% [markdown]
# ## Exercises
#
# Replace `None` with your number and run the cell. The expected values come from the package's calculators.
#
# **Exercise 1.** How many milliseconds does a ring all-reduce of 100 MB (10⁸ bytes) take on 8 H100 SXM GPUs in
# one node? Use the catalogue's NVLink bandwidth per direction (`cc.link_from_chip("H100 SXM")`) and α = 5 µs.

# %%
answer_1 = None  # your answer, ms
expected_1 = cc.all_reduce_time(data_parallel_lab.RING_TIME_BYTES, 8,
                                link=cc.link_from_chip("H100 SXM", alpha_s=5e-6)) * 1e3
check(answer_1, expected_1, rel_tol=data_parallel_lab.RING_TIME_REL_TOL, unit="ms",
      hint="a latency term per ring step plus the bytes each link carries over its per-direction bandwidth.")

# %% [markdown]
# **Exercise 2.** nccl-tests reports an all-reduce of 1 GiB (2³⁰ bytes) on 16 GPUs in 12 ms. What is the
# bus bandwidth in GB/s?

# %%
answer_2 = None  # your answer, GB/s
expected_2 = cc.bus_bandwidth(cc.algorithm_bandwidth(2**30, 12e-3), 16) / 1e9
check(answer_2, expected_2, rel_tol=0.02, unit="GB/s", hint="busbw = (bytes / seconds) x 2(p-1)/p.")

# %% [markdown]
# **Exercise 3.** A 7B model is trained with mixed-precision AdamW (two fp32 moments, fp32 master weights)
# on 8 GPUs with ZeRO stage 1. How many GB of optimizer state and master weights does each GPU hold?

# %%
answer_3 = None  # your answer, GB (1 GB = 1e9 bytes)
zero1 = estimate(MemoryConfig(params=7e9, precision="bf16", optimizer="adamw", dp=8, zero=1)).per_device
expected_3 = (zero1["optimizer"] + zero1["master_weights"]) / 1e9
check(answer_3, expected_3, rel_tol=0.02, unit="GB", hint="which parts of model state does stage 1 shard, and how many bytes each?")

# %% [markdown]
# **Exercise 4.** How many bytes does each rank *send* during a ring all-reduce of a 64 MiB buffer on
# 4 ranks? (Count both halves: reduce-scatter and all-gather.)

# %%
answer_4 = None  # your answer, bytes
expected_4 = cc.all_reduce_terms(4, "ring")[1] * 64 * 2**20
check(answer_4, expected_4, rel_tol=0.001, unit="bytes", hint="count the steps of each half and the size of the chunk sent per step.")

# %% [markdown]
# **Exercise 5 (categorical).** In DDP, when are the gradients all-reduced: `"after forward"`,
# `"during backward"` or `"after the optimizer step"`?

# %%
answer_5 = None
check(answer_5, expected(data_parallel_lab.CHOICES, 5), choices=("after forward", "during backward", "after the optimizer step"),
      hint="when do gradients exist, and what does bucketing overlap with?")

# %% [markdown]
# ### Worked solutions, on request
#
# Try every exercise first. Then `reveal(data_parallel_lab.SOLUTIONS, n)` shows a worked solution for exercise `n`; nothing
# is shown until you ask.

# %%
# reveal(data_parallel_lab.SOLUTIONS, 1)
assert all(str(reveal(data_parallel_lab.SOLUTIONS, n)) for n in data_parallel_lab.SOLUTIONS)  # worked solutions exist, not shown
