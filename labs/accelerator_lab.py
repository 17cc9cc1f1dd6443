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
# # Lab: Inside the accelerator
#
# **Question.** Where does the time and the energy of a neural network go inside a chip: which memory level holds
# the data, how much does fusing kernels save, what does FlashAttention's tiling change, and how much energy does a
# multiply-accumulate cost once its operands have been fetched?
#
# You will (1) sweep the working set on this machine and find its cache plateaus, (2) predict and measure a fused
# and an unfused chain of element-wise ops, (3) profile one training step of a small GPT, (4) compare three
# attention implementations with a sequence-length slider, (5) use the energy calculator, and (6) check yourself
# in four exercises. Every number printed here is measured on this machine or computed from sourced data.

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
# Triton's interpreter (to run the custom kernel on a CPU) must be chosen before anything imports Triton:
import torch

from aihw.accel import triton_kernels

if not torch.cuda.is_available():
    print("Triton:", triton_kernels.use_interpreter())

import matplotlib.pyplot as plt

from aihw.accel import fusion, hierarchy, power, profile
from aihw.catalogue import compare
from aihw.chips import systolic
from aihw.exercises import check, compare_prediction, expected, reveal
from aihw.plots import accelerator as plots
from aihw.widgets import accelerator_lab

torch.set_num_threads(2)

# %% [markdown]
# ## The memory hierarchy
#
# **Predict** (record it in `my_ratio_prediction` below): how many times faster is reading a 16 KiB working set
# than a 64 MiB one? How many plateaus, and where do they drop? The OS's cache sizes are marked; each point is the best of 3 samples, the bar their spread.

# %%
my_ratio_prediction = None  # predicted bandwidth at 16 KiB / bandwidth at 64 MiB

sweep = hierarchy.bandwidth_sweep(hierarchy.SweepConfig(min_bytes=16 << 10, max_bytes=64 << 20,
                                                        bytes_per_point=16 << 20, repeats=3))
caches = hierarchy.os_cache_sizes()
plateaus = hierarchy.detect_plateaus([r["bytes"] for r in sweep], [r["gbps"] for r in sweep])
print("caches the OS reports:", {k: f"{v / 1024:,.0f} KiB" for k, v in caches.items()} or "none")
for p in plateaus:
    print(f"plateau {p['start'] / 1024:>9,.0f} - {p['end'] / 1024:>9,.0f} KiB: {p['bandwidth']:6.1f} GB/s")
plots.plot_bandwidth_sweep(sweep, caches=caches, plateaus=plateaus)
plt.show()
display(compare_prediction("bandwidth ratio, 16 KiB / 64 MiB", my_ratio_prediction, sweep[0]["gbps"] / sweep[-1]["gbps"]))
assert all(r["gbps"] > 0 for r in sweep) and len(plateaus) >= 1

# %% [markdown]
# ## Fusion, predicted then measured
#
# The chain `tanh(relu(x * 1.5 + 0.5) * x)` is five element-wise ops: 11 tensor passes eagerly, 2 when fused.
# The prediction is bytes / the copy bandwidth measured at the same size. `torch.compile` fuses it (the first call
# compiles: a few seconds).

# %%
fuse = fusion.fusion_experiment(fusion.FusionConfig(elements=1 << 21, repeats=5))
for r in fuse["rows"]:
    print(f"{r['variant']:24} predicted {r['predicted_s'] * 1e3:7.2f} ms   measured {r['measured_s'] * 1e3:7.2f} ms "
          f"(min {r['low'] * 1e3:.2f}, max {r['high'] * 1e3:.2f})")
gain = fuse["rows"][0]["measured_s"] / fuse["rows"][1]["measured_s"]
print(f"measured speed-up {gain:.2f}x:", "fusion wins, as predicted" if gain >= 1.2 else
      "no measurable gain or a loss, against the prediction: the machine may be busy (re-run), or tanh's arithmetic"
      " and the cache hide the saved passes")
plots.plot_predicted_measured(fuse["rows"])
plt.show()
assert len(fuse["rows"]) == 2  # both variants equal the reference (assert_close inside)

# %% [markdown]
# The custom Triton kernel (a fused softmax), run by Triton's interpreter on a CPU, compiled on a GPU:

# %%
if triton_kernels.triton_status().startswith("ok") and (torch.cuda.is_available()
                                                         or triton_kernels.use_interpreter() == "interpreter on"):
    x = torch.randn(32, 200, device="cuda" if torch.cuda.is_available() else "cpu")
    torch.testing.assert_close(triton_kernels.softmax(x), torch.softmax(x, -1))
    print("Triton softmax equals torch.softmax:", triton_kernels.triton_status())
else:
    print("Triton kernel not run here:", triton_kernels.triton_status())

# %% [markdown]
# ## A profile of one training step
#
# One forward, backward and AdamW step of a TinyGPT under `torch.profiler`. The trace is written to
# `tinygpt_step.json` beside this notebook: open it at https://ui.perfetto.dev and find the biggest blocks.

# %%
prof = profile.profile_step(profile.ProfileConfig(trace_path="tinygpt_step.json"))
for name in sorted(prof.class_seconds, key=prof.class_seconds.get, reverse=True):
    print(f"{name:24} {100 * prof.share(name):5.1f} %")
peak = profile.cpu_peak_flops()
print(f"{prof.flops / 1e9:.2f} GFLOP in {prof.step_seconds * 1e3:.0f} ms; MFU against the estimated peak "
      f"({peak['isa']}, {(peak['flops'] or 0) / 1e9:,.0f} GFLOP/s): {100 * prof.mfu(peak['flops']):.2f} %")
plots.plot_profile(prof.class_seconds)
plt.show()

# %% [markdown]
# ## Attention: naive, SDPA, tiled
#
# Move the slider and press **Measure**: forward+backward time, bytes saved for backward (measured with the
# saved-tensor hooks) and HBM traffic (computed). Below, a fixed sweep drawn as a figure.

# %%
accelerator_lab.attention_explorer()

# %%
from aihw.accel.attention import compare_attention  # noqa: E402

att_rows = compare_attention((64, 128, 256), heads=2, head_dim=32, repeats=3)
plots.plot_attention(att_rows)
plt.show()
naive_growth = next(r for r in att_rows if r["kind"] == "naive" and r["seq"] == 256)["saved_bytes"] / \
    next(r for r in att_rows if r["kind"] == "naive" and r["seq"] == 64)["saved_bytes"]
assert naive_growth > 8  # the seq^2 term

# %% [markdown]
# ## The energy calculator
#
# Energy per MAC of each design from its access counts and Horowitz's 45 nm prices; the band takes every price at
# its low or high end. `on-chip scale` shrinks arithmetic and on-chip SRAM energy for a newer process node (off-chip
# energy is left alone). Power counters on this machine:

# %%
print(power.counter_status())
accelerator_lab.energy_calculator()

# %%
view = accelerator_lab.energy_view(n=256)
plots.plot_energy(view["bands"], on_chip=view["on_chip"])
plt.show()

# %% [markdown]
# ## Exercises
#
# **Exercise 1.** What share (%) of the H100 SXM's dense FLOP/s comes from its tensor cores (bf16) rather than its
# fp32 CUDA cores? (`aihw hardware show h100`)
#
# **Exercise 2.** A 128×128 weight-stationary array multiplies two 1024×1024 matrices with double-buffered
# weights. What is its mean utilisation (%)?
#
# **Exercise 3.** Eager `tanh(relu(x * 1.5 + 0.5) * x)` on 2²⁰ fp32 elements: how many MB does it move?
#
# **Exercise 4.** In the profile above, most of the step's time was in element-wise and normalisation ops. Is that
# step "compute"-bound or "memory"-bound?

# %%
answer_1 = None  # %
answer_2 = None  # %
answer_3 = None  # MB (1e6 bytes)
answer_4 = None  # "compute" or "memory"

share = compare.tensor_core_share("H100 SXM")["share"] * 100
util = systolic.utilisation_sweep([1024], size=128, double_buffered=True)[0]["utilisation"] * 100
moved = fusion.UNFUSED_PASSES * 4 * 2**20 / 1e6
display(check(answer_1, share, rel_tol=0.01, unit="%", hint="Which two peaks does the catalogue give for the H100?"),
        check(answer_2, util, rel_tol=0.01, unit="%",
              hint="Utilisation = useful MACs / (cycles x PEs); `systolic.predicted_cycles` counts the cycles."),
        check(answer_3, moved, rel_tol=0.02, unit="MB", hint="Count each op's reads and writes of a whole tensor."),
        check(answer_4, expected(accelerator_lab.CHOICES, 4), choices=("compute", "memory"),
              hint="Compare the FLOP an element-wise op does with the bytes it moves."))

# %% [markdown]
# ### Worked solutions, on request
#
# Try every exercise first. Then `reveal(accelerator_lab.SOLUTIONS, n)` shows a worked solution for exercise `n`;
# nothing is shown until you ask.

# %%
# reveal(accelerator_lab.SOLUTIONS, 1)
assert all(str(reveal(accelerator_lab.SOLUTIONS, n)) for n in accelerator_lab.SOLUTIONS)  # they exist, not shown
