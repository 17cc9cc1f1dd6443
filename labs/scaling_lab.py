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
# # Lab: Scaling, from laws to chips
#
# **Question.** Given a compute budget, how large a model should you train, on how many tokens, and what does
# the run cost in days and dollars on a real chip?
#
# You will (1) predict the FLOPs of a training step and check your prediction against a counted step on this
# machine, (2) allocate budgets with three published methods side by side in the widget, and (3) check yourself
# in three exercises, whose worked solutions stay hidden until you call `reveal`.

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

import torch

from aihw import scaling
from aihw.exercises import check, compare_prediction, expected, reveal
from aihw.measure.flops import count_training_step
from aihw.models.tinygpt import TinyGPTConfig
from aihw.transformer import flops
from aihw.widgets import scaling_lab

torch.set_num_threads(2)
from aihw.plots.style import setup_book

setup_book()  # the book's figure style: column width, legible text, SVG

# %% [markdown]
# ## Predict, then count
#
# A small GPT of width 128, 4 layers, 4 heads, 128-token sequences. Before running anything, write down how many
# FLOPs one *trained* token costs. Use the transformer-math chapter: 6 FLOP per matmul weight, plus the two
# attention matmuls (12 · layers · seq · width per token in training). The model has
# `flops.matmul_params(cfg.shape())` matmul weights (printed below).

# %%
cfg = TinyGPTConfig(width=128, depth=4, heads=4, seq_len=128)
print(f"matmul weights N = {flops.matmul_params(cfg.shape()):,}")
my_prediction = None  # FLOP per trained token: your number, before running the next cell

# %%
step = count_training_step(cfg, batch=4, repeats=2)
counted = step.counted_flops / step.tokens
display(compare_prediction("training FLOP per token", my_prediction, counted, unit="FLOP"))
print(f"plain 6N rule: {6 * flops.matmul_params(cfg.shape()):,} FLOP; counted by FlopCounterMode: {counted:,.0f}; "
      f"this machine ran {step.achieved_flops_per_s / 1e9:.1f} GFLOP/s")
assert abs(counted / flops.flops_per_token(cfg.shape(), cfg.seq_len) - 1) < 1e-6  # the count is the formula

# %% [markdown]
# If your prediction used only 6N, it is low by the attention term; at this small width and long context that
# term is large. For billion-parameter models at ordinary contexts it is a few per cent.
#
# ## Allocate a budget: the widget
#
# Move the budget, chip, chip count and MFU. The table shows the compute-optimal parameters and tokens under
# Hoffmann et al.'s approach 1 (their Table 3), the Epoch refit of approach 3 (Besiroglu et al. 2024), the
# 20-tokens-per-parameter rule, and the rounded approach-3 constants printed in the Chinchilla paper (biased).
# Below it: the run's days and cost at the catalogue's price snapshot. MFU is an assumption you choose.
#
# Before you move anything: **predict** how many tokens per parameter approach 1 gives at 1e26 FLOP, and whether
# that ratio grows or shrinks with the budget.

# %%
my_ratio_prediction = None  # tokens per parameter at 1e26 FLOP (approach 1)
scaling_lab.scaling_explorer()

# %%
view = scaling_lab.scaling_view(budget=1e26, chip="NVIDIA H100 SXM", chips=16384, mfu=0.4)
display(compare_prediction("approach 1 tokens/param at 1e26 FLOP", my_ratio_prediction,
                           view["methods"]["hoffmann-approach1"]["tokens_per_param"]))
for name, m in view["methods"].items():
    print(f"{scaling.METHOD_LABELS[name]:55} {m['params'] / 1e9:8.1f} B  {m['tokens'] / 1e12:7.2f} T  "
          f"{m['tokens_per_param']:6.1f} tokens/param")
print(f"16,384 H100 SXM at 40% MFU: {view['days']:.1f} days")

# %% [markdown]
# ## Exercises
#
# Replace each `None` with your answer; work it out by hand first. When you have tried, `reveal(...)` shows a
# worked solution.
#
# **Exercise 1.** Under approach 1, how many tokens should a compute-optimal run of 1e24 FLOP train on?
#
# **Exercise 2.** Chinchilla (70B parameters, 1.4T tokens) on 512 TPU v5p at 50% MFU: how many days?
#
# **Exercise 3 (categorical).** The rounded approach-3 constants in the Chinchilla paper put the optimum near 90
# tokens per parameter. Is that a property of language models ("finding") or of the fit ("artefact")?

# %%
answer_1 = None  # tokens
answer_2 = None  # days
answer_3 = None  # "finding" or "artefact"

display(check(answer_1, scaling.compute_optimal(1e24, "hoffmann-approach1").tokens, rel_tol=0.03, unit="tokens",
              hint="find N_opt for the budget first (the widget, or the frontier through Table 3), then D = C / 6N."),
        check(answer_2, scaling.training_run(scaling.training_flops(70e9, 1.4e12), "TPU v5p", chips=512,
                                             mfu=0.5).days, rel_tol=0.03, unit="days",
              hint="time = 6ND / (chips x dense bf16 peak x MFU); the peak is in `aihw hardware show v5p`."),
        check(answer_3, expected(scaling_lab.CHOICES, 3), choices=("finding", "artefact"),
              hint="compare with the two other estimation approaches of the same paper, and read Besiroglu et al."))

# %%
# After trying: reveal(scaling_lab.SOLUTIONS, 1), reveal(scaling_lab.SOLUTIONS, 2), reveal(scaling_lab.SOLUTIONS, 3)
# The solutions exist (computed, not typed) without being shown here; the allocation lessons hold.
assert all(str(reveal(scaling_lab.SOLUTIONS, n)) for n in (1, 2, 3))
