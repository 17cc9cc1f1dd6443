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
# # Lab: Memory math, predicted and measured
#
# **Question.** How much memory does one training step of a transformer hold, component by component, and can a
# formula on paper predict it to the byte?
#
# You will (1) predict the bytes with the course's estimator, (2) measure a real step of a small GPT on this
# machine, (3) compare, then (4) size real models against real chips with the widget, and (5) check yourself in
# three exercises. Units: GB = 1e9 bytes, GiB = 2^30 bytes.

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

import matplotlib.pyplot as plt
import torch

from aihw.exercises import Predictions, reveal
from aihw.measure.memory import MeasureConfig, compare, predict
from aihw.models.tinygpt import TinyGPTConfig
from aihw.plots.memory import plot_predicted_vs_measured
from aihw.widgets import memory_lab

grader = memory_lab.ASSIGNMENT  # the lab's checked exercises (aihw.grading)
predictions = Predictions()  # your predictions, each recorded in its own cell before its measurement

torch.set_num_threads(2)
from aihw.plots.style import setup_book

setup_book()  # the book's figure style: column width, legible text, SVG

# %% [markdown]
# ## Predict
#
# A TinyGPT of width 128, 3 layers, 8 heads, 128 tokens, batch 4, trained in fp32 with AdamW. The estimator counts
# weights, gradients and AdamW's two moments from the parameter count, and the saved activations with the
# Korthikanti et al. (2022) counting adapted to this model: 64·s·b·h + 4·a·s²·b bytes per layer (fp32, no dropout)
# plus the head.

# %%
run = MeasureConfig(model=TinyGPTConfig(width=128, depth=3, heads=8, seq_len=128), batch=4, optimizer="adamw")
prediction = predict(run)
display({k: f"{v / 1e6:.3f} MB" for k, v in prediction.items()})
# Your prediction first: which component will be the largest in the measurement below?
my_largest_component = None  # "weights", "gradients", "optimizer" or "activations"
predictions.record("largest component", my_largest_component)

# %% [markdown]
# ## Measure and compare
#
# `compare` runs real training steps: it sums the bytes of the parameter, gradient and optimizer tensors, counts
# every tensor autograd saves for backward (each storage once) and reads the peak from the allocator (CUDA) or the
# profiler's allocator events (CPU). The prediction now includes torch Adam's 4-byte step counter per parameter
# tensor.

# %%
rows = compare(run)
for r in rows:
    print(f"{r['component']:12} predicted {r['predicted'] / 1e6:9.3f} MB   measured {r['measured'] / 1e6:9.3f} MB"
          f"   ratio {r['ratio']:.4f}")
by = {r["component"]: r for r in rows}
assert all(by[k]["measured"] == by[k]["predicted"] for k in ("weights", "gradients", "optimizer"))
assert abs(by["activations"]["ratio"] - 1) < 0.10
assert 0.95 < by["peak"]["ratio"] < 1.3  # the peak model; the plain sum is further off:
print(f"peak / sum of components: {by['peak']['ratio_to_sum']:.3f}")
measured_largest = max(("weights", "gradients", "optimizer", "activations"), key=lambda k: by[k]["measured"])
display(predictions.compare("largest component", measured_largest))
fig = plot_predicted_vs_measured(rows, title="TinyGPT 128x3, batch 4 (fp32, AdamW)")
plt.show()

# %% [markdown]
# Model state matches to the byte. Saved activations are a fraction of a percent above the formula: LayerNorm
# statistics and int64 token ids are the small terms the counting neglects. The peak differs from the sum of the
# components: gradients appear while activations are freed, and temporaries come and go (the loss's gradients, two
# batch × seq × vocab fp32 buffers; in attention backward, two heads × seq × seq buffers per sequence). The "peak"
# row compares the measurement with `predict_peak`, a model of the moment the step peaks built from those terms.
#
# ### Mixed precision: bf16 autocast
#
# Training in "bf16" usually means `torch.autocast(device_type, dtype=torch.bfloat16)` around the forward pass and
# the loss, with fp32 parameters, gradients and AdamW states. So model state stays 4 + 4 + 8 = 16 bytes per
# parameter: autocast saves only activation memory, and only part of it, because LayerNorm, softmax and the loss
# stay fp32 and each matmul weight gets a bf16 copy that backward keeps (`predict_autocast_activations` counts
# these tensor by tensor). Predict first: will bf16 halve the activations? On a GPU the run below uses the GPU and
# its allocator's peak; on a CPU a small run (CPU autocast supports bf16).

# %%
my_bf16_activation_ratio = None  # bf16-autocast activations ÷ fp32 activations, e.g. 0.5
predictions.record("bf16 ÷ fp32 activations", my_bf16_activation_ratio)

# %%
import dataclasses

import torch

mixed = dataclasses.replace(run, precision="bf16-autocast", device="cuda" if torch.cuda.is_available() else "cpu")
mixed_rows = {r["component"]: r for r in compare(mixed)}
for k, r in mixed_rows.items():
    print(f"bf16-autocast {k:12} predicted {r['predicted'] / 1e6:9.3f} MB   measured {r['measured'] / 1e6:9.3f} MB"
          f"   ratio {r['ratio']:.4f}")
print(f"measured on {mixed.device}; peak read by {mixed_rows['peak']['peak_method']}")
bf16_ratio = mixed_rows["activations"]["measured"] / by["activations"]["measured"]
display(predictions.compare("bf16 ÷ fp32 activations", bf16_ratio))
assert all(mixed_rows[k]["measured"] == by[k]["measured"] for k in ("weights", "gradients", "optimizer"))
# exact on CPU (tested); on CUDA autocast's op lists are the same for these ops, but that has not run here: 10%
assert abs(mixed_rows["activations"]["ratio"] - 1) < (0.02 if mixed.device == "cpu" else 0.10)
assert 0.5 < bf16_ratio < 1

# The textbook "bf16" line (aihw.memory with precision="bf16": every activation 2 bytes, bf16 weights and gradients
# plus an fp32 master copy) predicts the same 16 bytes per parameter in another split, but fewer activation bytes
# than autocast really keeps: LayerNorm, softmax and loss stay fp32, and the bf16 weight copies are extra.
from aihw.memory import MemoryConfig as AnalyticConfig
from aihw.memory import estimate

textbook = estimate(AnalyticConfig(model=run.model.shape(), precision="bf16", optimizer=run.optimizer, batch=run.batch,
                                   seq=run.tokens, recompute=run.model.recompute, dropout=False)).total
print(f"textbook bf16 activations {textbook['activations'] / 1e6:.3f} MB; autocast keeps "
      f"{mixed_rows['activations']['measured'] / textbook['activations']:.2f} x that")
assert mixed_rows["activations"]["measured"] > textbook["activations"]

# %% [markdown]
# ## Does it fit? The widget
#
# Pick a preset or raw dims, precision, optimizer, batch, sequence, recomputation, ZeRO stage, DP/TP/PP degrees and
# a chip. The bars update live. **Measure it** switches the controls to the *custom* dims on one device in fp32
# (so the bars are the prediction for exactly the run it measures), trains that TinyGPT one step on this machine
# and draws the measured components as a hatched bar under the predicted ones, with the predicted (dotted) and
# measured (solid) peaks marked. Below the widget, the default view and a measured overlay as plain figures
# (visible without a kernel).

# %%
memory_lab.memory_explorer()

# %%
view = memory_lab.memory_view(model="llama-2-7b", precision="bf16", optimizer="adamw", batch=1, seq=1024)
print(view["verdict_text"])
fig = memory_lab.draw(view)
plt.show()

# What "Measure it" draws, for the default custom dims (64 wide, 2 layers, 4 heads, 256 tokens, batch 2):
custom = memory_lab.measured_settings({"model": "llama-2-7b", "hidden": 64, "layers": 2, "heads": 4, "vocab": 256,
                                        "optimizer": "adamw", "batch": 2, "seq": 256, "recompute": "none",
                                        "chip": "NVIDIA H100 SXM"})
measured = memory_lab.measure_view(hidden=64, layers=2, heads=4, vocab=256, seq=256, batch=2)
fig = memory_lab.draw(memory_lab.memory_view(**custom), measured)
plt.show()

# %% [markdown]
# ## Exercises
#
# Replace each `None` with your number (work it out by hand first, then check with the estimator).
#
# **Exercise 1.** Training Llama-2-7B (6.74e9 parameters) with mixed-precision AdamW: how many GB of model state
# (weights + gradients + optimizer + fp32 master copy), before activations?
#
# **Exercise 2.** Serving Llama-2-70B in bf16 to 8 users at 4096 tokens each: how many GB is the KV cache
# (80 layers, 8 KV heads of dimension 128)?
#
# **Exercise 3.** Llama-2-70B training (mixed-precision AdamW, 4096 tokens, full recomputation) with ZeRO stage 3
# on H100 SXMs (their memory from the course catalogue: `hardware.get_chip("H100 SXM").memory_bytes`): what is the smallest number of GPUs that holds it?
#
# **Exercise 4 (categorical).** Serving Llama-3-8B in bf16 to 16 sequences of 8,192 tokens: which is larger, the
# weights or the KV cache? Answer `"weights"` or `"kv cache"`.

# %%
answer1 = None  # GB
answer2 = None  # GB
answer3 = None  # GPUs
answer4 = None  # "weights" or "kv cache"
display(grader.check("q1", answer1), grader.check("q2", answer2), grader.check("q3", answer3),
        grader.check("q4", answer4))

# %% [markdown]
# ### Worked solutions, on request
#
# Try every exercise first. Then `reveal(memory_lab.SOLUTIONS, n)` shows a worked solution for exercise `n`; nothing
# is shown until you ask.

# %%
# reveal(memory_lab.SOLUTIONS, 1)
assert all(str(reveal(memory_lab.SOLUTIONS, n)) for n in memory_lab.SOLUTIONS)  # worked solutions exist, not shown
