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
# # Lab: Number formats and mixed precision
#
# **Question.** What does each number format keep and lose, from one value's bits to a training run, and which
# training tricks (loss scaling, master weights, stochastic rounding, fp8 scaling) repair what?
#
# You will (1) explore the bits of values in every format, (2) predict and then measure fp16 gradient underflow
# and how torch's `GradScaler` recovers it, (3) predict and measure lost updates in bf16 and their fixes,
# (4) compare FP8 training recipes, and (5) check yourself in three exercises. Every run is a real run of the
# course's small GPT on this machine; what is native and what is simulated is said at each step.

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
import numpy as np
import torch
from IPython.display import HTML

from aihw.exercises import check, compare_prediction, reveal
from aihw.formats import numerics
from aihw.mixed.fp8 import Fp8Config, run_fp8
from aihw.mixed.training import MixedConfig, gradient_underflow, run
from aihw.plots.formats import plot_fraction, plot_losses
from aihw.widgets import formats_lab

torch.set_num_threads(1)  # tiny models: one thread is as fast, and immune to busy shared cores

# %% [markdown]
# ## The bits of a value
#
# Type a value and pick a format: the widget shows the sign, exponent and mantissa bits, the value the bits
# actually hold, what happened (normal, subnormal, underflow to zero, saturated, overflow to inf), the two
# representable neighbours and the rounding error. Try `0.1` in every format, `1e-8` in fp16 and bf16, `500` in
# fp8_e4m3 and fp8_e5m2, `70000` in fp16, and `1.001` in bf16. The encoders agree bit for bit with torch's
# dtypes (checked here on one value; the package's tests check every code).

# %%
formats_lab.bit_explorer()

# %%
for value, fmt in ((0.1, "bf16"), (1e-8, "fp16"), (500.0, "fp8_e4m3"), (70000.0, "fp16")):
    e = numerics.explain(value, fmt)
    print(f"{value:>8g} in {fmt:9}: bits {e.bits:>16}  stored {e.stored:<12.6g} ({e.kind})")
assert numerics.encode(0.1, "bf16") == torch.tensor(0.1).to(torch.bfloat16).view(torch.int16).item()
assert numerics.explain(500.0, "fp8_e4m3").stored == torch.tensor(500.0).to(torch.float8_e4m3fn).item() == 448

# %% [markdown]
# ## fp16 gradient underflow and loss scaling
#
# **Predict.** The loss is divided by 2^14 before backward (one micro-batch of a gradient accumulation over 2^14
# micro-batches; the fp32 master gradient is multiplied back), which puts the gradients at the size a large
# batch gives them. One fp32 backward pass shows how many of them fp16 cannot hold. Write your guess first:
# will fp16 training without loss scaling still learn?

# %%
UF = dict(accumulation=2**14, steps=40)
pred = gradient_underflow(MixedConfig(**UF))
print(f"nonzero gradient elements below 2^-25 (fp16 rounds them to 0): {pred['flush_to_zero']:.1%}")
print(f"nonzero gradient elements below 2^-14 (fp16 subnormal, few bits): {pred['subnormal']:.1%}")
my_guess_fp16_learns = None  # True or False: your prediction

# %% [markdown]
# **Measure.** fp32, fp16 (native fp16 kernels, fp32 master weights) without loss scaling, and fp16 with torch's
# `GradScaler` (dynamic scale, starting at 2^16).

# %%
uf = {r: run(MixedConfig(r, **UF)) for r in ("fp32", "fp16", "fp16_scaled")}
for r, res in uf.items():
    print(f"{r:12} final loss {res.final_loss:.3f}   gradient elements == 0: {np.mean(res.zero_grad_fraction):6.1%}"
          f"   skipped steps: {res.skipped_steps}")
from aihw.plots.style import subplots as column_subplots  # stacked panels at the column width

fig, axes = column_subplots(2, 1, row_height=3.0)
plot_losses({r: res.losses for r, res in uf.items()}, title="loss", ax=axes[0])
plot_fraction({r: res.zero_grad_fraction for r, res in uf.items()}, ylabel="gradients == 0", ax=axes[1])
plt.show()
start = uf["fp32"].losses[0]
fp16_learned = start - uf["fp16"].final_loss > 0.5 * (start - uf["fp32"].final_loss)
display(compare_prediction("fp16 without loss scaling learns", my_guess_fp16_learns, fp16_learned))
assert np.mean(uf["fp16"].zero_grad_fraction) > 0.5  # most gradients flushed to zero
assert start - uf["fp16"].final_loss < 0.5 * (start - uf["fp32"].final_loss)  # and the loss stalls
assert uf["fp16_scaled"].skipped_steps >= 1  # 2^16 overflows fp16: the scaler skips and halves
assert abs(uf["fp16_scaled"].final_loss - uf["fp32"].final_loss) < 0.25 * (start - uf["fp32"].final_loss)

# %% [markdown]
# **Explain.** More gradients come out zero than the fp32 magnitudes predicted: the fp16 backward pass computes
# every intermediate in fp16, and small values shrink further layer by layer. `GradScaler` multiplies the loss by
# S so the whole backward pass runs S times higher, divides the fp32 gradients by S before the update, and
# adjusts S: halve and skip the step when a gradient overflows, double after a run of good steps.
#
# ## Lost updates in bf16
#
# **Predict.** With Adam at lr = 3e-5, each update is about 3e-5 in size. bf16 keeps 8 significant bits: half an
# ulp of a weight w is 2^(⌊log2 |w|⌋ - 8), between |w| · 2^-9 and |w| · 2^-8. Which weights can still move? (A
# LayerNorm gain of 1.0 has half an ulp of 2^-8 = 0.0039.)

# %%
LU = dict(lr=3e-5, steps=150)
print("smallest update that moves w = 1.0 in bf16:", numerics.half_ulp_threshold(1.0, "bf16"))
print("smallest update that moves w = 0.02 in bf16:", numerics.half_ulp_threshold(0.02, "bf16"))
lu = {r: run(MixedConfig(r, **LU)) for r in ("bf16_pure", "bf16_master", "bf16_stochastic")}
for r, res in lu.items():
    print(f"{r:16} final loss {res.final_loss:.3f}   updates rounded away: {np.mean(res.lost_update_fraction):6.1%}")
from aihw.plots.style import subplots as column_subplots  # stacked panels at the column width

fig, axes = column_subplots(2, 1, row_height=3.0)
plot_losses({r: res.losses for r, res in lu.items()}, title="loss", ax=axes[0])
plot_fraction({r: res.lost_update_fraction for r, res in lu.items()}, ylabel="lost updates", ax=axes[1])
plt.show()
first = lu["bf16_master"].losses[0]
gain = first - lu["bf16_master"].final_loss
assert np.mean(lu["bf16_pure"].lost_update_fraction) > 0.5
assert lu["bf16_pure"].final_loss - lu["bf16_master"].final_loss > 0.2 * gain
assert abs(lu["bf16_stochastic"].final_loss - lu["bf16_master"].final_loss) < 0.1 * gain

# %% [markdown]
# **Explain.** Pure bf16 rounds most updates away and stops learning; an fp32 master copy keeps every update
# (4 more bytes per parameter); stochastic rounding drops as many updates per step but rounds others up, so on
# average the weights move as they should, with no master copy.
#
# ## FP8 recipes (simulated)
#
# Every Linear layer's inputs are rounded to fp8 by torch's own fp8 casts after dividing by a scale (E4M3 forward,
# E5M2 gradients); the matmul runs in fp32. Which recipe saturates values, and does it hurt the loss?

# %%
fp8 = {r: run_fp8(Fp8Config(r, steps=40)) for r in ("none", "current", "delayed", "block")}
for r, res in fp8.items():
    print(f"{r:8} final loss {res.final_loss:.3f}   saturated values: {res.overflows}")
plot_losses({r: res.losses for r, res in fp8.items()}, title="fp8 recipes")
plt.show()
assert sum(fp8["current"].overflows.values()) == 0 < sum(fp8["delayed"].overflows.values())
assert all(abs(res.final_loss - fp8["none"].final_loss) < 0.3 for res in fp8.values())

# %% [markdown]
# **Block-scaled formats.** Type a tensor (comma-separated) and pick MXFP8, MXFP4 or NVFP4: the widget shows each
# block's scale, every stored value, and the error against one scale for the whole tensor. The default block
# has one outlier (0.9) among small values: compare how many small values each scheme rounds to 0, and what a
# smaller block (try 8) changes. A block size that does not divide the number of values is refused inline.

# %%
formats_lab.block_explorer()

# %%
# the default block in MXFP4, as a static table (visible without a kernel)
display(HTML(formats_lab.block_view(formats_lab.DEFAULT_BLOCK, "mxfp4")))

# %% [markdown]
# Run any of the three experiments again with more or fewer steps (each takes seconds to a minute):

# %%
formats_lab.run_explorer()

# %% [markdown]
# ## Exercises
#
# Replace each `None` with your answer (work it out by hand first; check with the explorer afterwards).
#
# **Exercise 1.** What value does fp8 E4M3 store for 0.3? (Hint: 0.3 lies in [0.25, 0.5); E4M3 has 3 mantissa
# bits.)
#
# **Exercise 2.** What is the largest power-of-two loss scale S such that a gradient of 2.0 (the largest in
# the step) times S still fits in fp16 (at most 65,504)?
#
# **Exercise 3 (categorical).** A value of 1000 is cast to fp8 E5M2 and to fp8 E4M3 by torch. Which of them
# *saturates* (stores its largest finite value rather than infinity or a rounded neighbour)? Answer "e4m3",
# "e5m2", "both" or "neither".

# %%
answer1 = None  # the stored value
answer2 = None  # the scale S
answer3 = None  # "e4m3", "e5m2", "both" or "neither"

expected1 = float(numerics.round_to(0.3, "fp8_e4m3"))
expected2 = 2.0 ** int(np.floor(np.log2(numerics.max_value("fp16") / 2.0)))
kinds = {f: numerics.explain(1000.0, f).kind for f in ("fp8_e4m3", "fp8_e5m2")}
expected3 = {(True, True): "both", (True, False): "e4m3", (False, True): "e5m2", (False, False): "neither"}[
    (kinds["fp8_e4m3"] == "saturated", kinds["fp8_e5m2"] == "saturated")]
display(check(answer1, expected1, rel_tol=1e-9, hint="the ulp in [0.25, 0.5) is 0.25 / 8; round to nearest."),
        check(answer2, expected2, rel_tol=0, hint="65,504 / 2, rounded down to a power of two."),
        check(answer3, expected3, choices=("e4m3", "e5m2", "both", "neither"),
              hint="compare 1000 with each format's largest value (448 and 57,344)."))

# %% [markdown]
# ### Worked solutions, on request
#
# Try every exercise first. Then `reveal(formats_lab.SOLUTIONS, n)` shows a worked solution for exercise `n`;
# nothing is shown until you ask.

# %%
# reveal(formats_lab.SOLUTIONS, 1)
assert all(str(reveal(formats_lab.SOLUTIONS, n)) for n in formats_lab.SOLUTIONS)  # worked solutions exist, not shown
