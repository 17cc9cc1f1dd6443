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
# # Lab: Making a model cheaper
#
# **Question.** How much accuracy does a real trained model lose when you store it in fewer bits, remove most of
# its weights, or replace it with a student 18 times smaller, and which of these actually makes it *faster* on
# your machine?
#
# You will (1) train (or load from the cache) a small digits classifier, (2) quantize it and predict the error
# from the step size, (3) measure real INT8 against fp32, (4) prune it three ways and time it, (5) distil it, and
# (6) check three answers of your own. Widgets need a running kernel; below each one the default result is drawn
# as an ordinary figure, so the page makes sense without one. The whole notebook runs in well under a minute on
# two CPU cores.

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

from aihw.cheaper import distill, prune, quantize_model
from aihw.cheaper.quantize import PerChannel, PerGroup, QuantScheme, choose_qparams, dequantize, quantize
from aihw.cheaper.quantize import quantized_size_bytes as packed_bytes
from aihw.exercises import check, compare_prediction, expected, reveal
from aihw.models import digits
from aihw.plots import cheaper as cplots
from aihw.widgets import cheaper_lab

# Trains in a few seconds the first time, then loads from ~/.cache/aihw (pass cache_dir=... to change).
model, data = digits.trained_mlp(digits.TrainConfig(hidden=(256, 256)))
fp32_acc = digits.accuracy(model, data.x_test, data.y_test)
print(f"aihw {aihw.__version__}, torch {torch.__version__}\n{model}\ntest accuracy {fp32_acc:.1%}")
assert fp32_acc > 0.95
from aihw.plots.style import setup_book

setup_book()  # the book's figure style: column width, legible text, SVG

# %% [markdown]
# ## Quantize: predict the error, then measure it
#
# **Prediction.** Rounding to a grid of step $s$ moves every value by at most $s/2$. For a symmetric int8
# per-channel scheme, $s = \max|w_{\text{row}}| / 127.5$. The cell checks that bound on the first layer, then
# opens the lab: pick a format (int8 … int2, fp8), a granularity and symmetric or not; the figures and the
# accuracy update at once. Every choice also adds a point to the accuracy-size chart at the bottom.

# %%
w = model[0].weight.detach()
scheme = QuantScheme("int8", PerChannel(0))
qp = choose_qparams(w, scheme)
error = (w - dequantize(quantize(w, qp), qp)).abs()
predicted = (qp.scale / 2)[:, None].expand_as(w)
print(f"worst error / predicted bound: {float((error / predicted).max()):.3f}")
assert bool((error <= predicted * (1 + 1e-5) + 1e-7).all())

display(cheaper_lab.cheaper_lab(model, data))

# The default view as a plain figure (for readers without a kernel):
fig, summary = cheaper_lab.quantization_report(model, data, dtype="int4", granularity="per-channel")
plt.show()
print(summary["scheme"], f"accuracy {summary['accuracy']:.1%}, "
      f"{summary['fp32_size_bytes'] / summary['size_bytes']:.1f}x smaller than fp32")

# %% [markdown]
# ## Measure: real INT8 against fp32
#
# Simulated rounding tells you the accuracy, not the speed. Dynamic INT8 (PyTorch's `torch.ao` kernels) really
# multiplies in int8. **Predict** before you run: will INT8 be faster for one image at a time? For a batch of 256?

# %%
my_int8_faster_at_batch_1 = None  # "yes" or "no": your prediction, before running this cell
int8_model, backend = quantize_model.dynamic_int8(model)
card = digits.scorecard({"fp32": model, "int8": int8_model}, data, batch=256)
for row in card:
    print(f"{row['name']:>5}: accuracy {row['accuracy']:.1%}, {row['size_bytes'] / 1e3:6.1f} kB, "
          f"{row['latency_s'] * 1e6:7.0f} µs per 256 images")
assert abs(card[0]["accuracy"] - card[1]["accuracy"]) <= 0.01 and card[0]["size_bytes"] > 3 * card[1]["size_bytes"]

speed = quantize_model.int8_speed_sweep(widths=(256, 1024), batches=(1, 16, 256), repeats=5)
cplots.plot_int8_speedup(speed)
plt.show()
batch1 = next(r for r in speed if r["width"] == 256 and r["batch"] == 1)
display(compare_prediction("INT8 faster at batch 1 (width 256)", my_int8_faster_at_batch_1,
                           "yes" if batch1["speedup"] > 1.05 else "no"))
print(quantize_model.fp8_model(model)[1])

# %% [markdown]
# ### The same layer on the GPU's low-precision kernels
#
# One layer, a decode-like batch of 16 rows, through every real low-precision kernel this machine has: INT8 and
# INT4 weight-only (`torch._weight_int8pack_mm`, `torch._weight_int4pack_mm`), FP8 (`torch._scaled_mm`, compute
# capability ≥ 8.9) and 2:4 semi-structured sparsity (≥ 8.0). Speed-up is against the dense matmul in the GPU's
# tensor-core 16-bit float (bf16; fp16 on a T4, whose bf16 is emulated) or fp32 on a CPU; the error is against
# the fp32 result. What cannot run here says why. On a CPU the two weight-only kernels do run (small sizes):
# expect them to be *slower* than the dense fp32 matmul, which is the most tuned CPU kernel there is. On a GPU,
# at batch 16, the weight bytes set the time, so fewer bytes win with a tuned kernel (INT4 here); torch's CUDA
# INT8 weight-only kernel is a naive one, and its row says so: expect it slower. The FP8 row times the matmul
# alone, and separately with quantising the input each call.

# %%
import torch

low = quantize_model.low_precision_matmuls(k=512 if not torch.cuda.is_available() else None,
                                           n=512 if not torch.cuda.is_available() else None)
for r in low:
    if r["status"] == "ran":
        print(f"{r['name']:24} {r['speedup']:5.2f}x vs {r['reference']}, error {r['max_rel_error']:.2e}  "
              f"[{r['label']}]")
    else:
        print(f"{r['name']:24} skipped: {r['reason']}")
assert [r["name"] for r in low] == list(quantize_model.LOW_PRECISION_ROWS)
assert all(r.get("kernel_error", 0) < 1e-2 for r in low)  # each kernel computes what its format stands for

# %% [markdown]
# ## Prune: zeros against structure
#
# Open the **Prune** tab above: choose a sparsity, a structure (unstructured zeros, 2:4, or whole neurons) and a
# few epochs of fine-tuning, then press the button. Compare the *measured* latency with the FLOP count printed on
# each bar. The cell below runs the default comparison.

# %%
variants = {"dense": model,
            "90% zeros": prune.make_permanent(prune.magnitude_prune(model, 0.9)),
            "2:4": prune.make_permanent(prune.semi_structured_prune(model)),
            "−75% neurons": prune.fine_tune(prune.prune_neurons(model, 0.75), data, epochs=5)}
x = data.x_test.repeat(2, 1)[:256]
times = digits.latencies(variants, x, repeats=9)
flops = {k: digits.linear_flops(m, 256) for k, m in variants.items()}
cplots.plot_latency_bars(times, flops=flops)
plt.show()
for k, m in variants.items():
    print(f"{k:>13}: accuracy {digits.accuracy(m, data.x_test, data.y_test):.1%}, zeros {prune.sparsity(m):.0%}")
assert prune.sparsity(variants["90% zeros"]) >= 0.9 - 1e-6 and flops["90% zeros"] == flops["dense"]
# Timings are shown, not asserted (a busy machine can reorder them); the work removed is exact:
assert flops["−75% neurons"] < 0.35 * flops["dense"]

# %% [markdown]
# ## Distil: does the teacher help?
#
# The **Distil** tab trains a student twice, once from the teacher's softened outputs and once from the labels
# alone, with the same initialisation. Try a temperature of 1 and of 8, with all the data and with 10% of it.
# Each press is **one** seed: on 450 test images one image is 0.22 points, and runs that differ only in their
# seed differ by a few such images, so a single pair of runs cannot tell a small gain from noise. The default comparison
# (10% of the training images, $T = 8$), first as one run, then over five seeds:

# %%
config = distill.DistillConfig(student_hidden=(64,), temperature=8.0, train_fraction=0.1, epochs=200)
student, alone = distill.distill_and_control(model, data, config)
accs = {"teacher (fp32)": fp32_acc, "student alone": digits.accuracy(alone, data.x_test, data.y_test),
        "distilled student": digits.accuracy(student, data.x_test, data.y_test)}
cplots.plot_accuracy_bars(accs, title="64-unit student, 10% of the training images, T = 8 (one run)")
plt.show()
assert all(0.5 < a <= 1 for a in accs.values())

# %% [markdown]
# **The same comparison over five seeds.** Each seed gives the distilled student and its control the same
# initialisation, so the comparison is *paired*: the 95% interval of the per-seed differences decides. A gain
# is a finding only when that interval lies above zero. (Cached like the model: a few seconds the first time.)

# %%
seeds = distill.seed_comparison(model, data, config, seeds=(0, 1, 2, 3, 4))
cplots.plot_accuracy_bars({"teacher (fp32)": fp32_acc, "student alone": seeds["alone_ci"],
                           "distilled student": seeds["distilled_ci"]},
                          title="The same students over 5 seeds (mean, 95% interval)")
plt.show()
diff = seeds["difference"]
print(f"distilled − alone: {100 * diff.mean:+.2f} points, 95% interval {100 * diff.low:+.2f} to {100 * diff.high:+.2f}"
      f" -> {'a gain' if diff.low > 0 else 'a loss' if diff.high < 0 else 'indistinguishable at 5 seeds'}")
assert len(seeds["distilled"]) == 5 and diff.low <= diff.mean <= diff.high

# %% [markdown]
# ## Exercises
#
# Replace `None` with your number and run the cell. The expected values come from the same functions the widgets
# use.
#
# **Exercise 1.** How many bytes does the first layer's weight matrix (256 × 64) take in int4, symmetric, with one
# fp32 scale per group of 32 weights?

# %%
answer_1 = None  # your answer, bytes
check(answer_1, packed_bytes((256, 64), QuantScheme("int4", PerGroup(32))), rel_tol=0,
      unit="bytes", hint="Half a byte per weight, plus 4 bytes for each group's scale.")

# %% [markdown]
# **Exercise 2.** What is the int8 symmetric per-tensor scale for a tensor whose largest magnitude is 2.55?
# (PyTorch's rule: max|x| divided by half the number of steps, (127 − (−128))/2.)

# %%
answer_2 = None  # your answer
check(answer_2, float(choose_qparams(torch.tensor([-2.55, 1.0]), QuantScheme("int8")).scale), rel_tol=1e-4,
      hint="the largest magnitude maps to the edge of the int8 range; how many steps span it on each side?")

# %% [markdown]
# **Exercise 3.** How many FLOP does one image cost in the model with 75% of its hidden neurons removed
# (widths 64 → 64 → 64 → 10; count 2 FLOP per multiply-add and 1 per bias)?

# %%
answer_3 = None  # your answer, FLOP per image
check(answer_3, digits.linear_flops(variants["−75% neurons"], 1), rel_tol=0, unit="FLOP",
      hint="each Linear costs 2 FLOP per weight and 1 per bias, per image.")

# %% [markdown]
# **Exercise 4 (categorical).** In a dense kernel, which pruning makes the model faster: `"unstructured"` (90%
# zeros inside the matrices) or `"neurons"` (half the neurons removed)?

# %%
answer_4 = None
check(answer_4, expected(cheaper_lab.CHOICES, 4), choices=("unstructured", "neurons"),
      hint="does a dense matmul skip a zero? Which one changes the matrices' shapes?")

# %% [markdown]
# ### Worked solutions, on request
#
# Try every exercise first. Then `reveal(cheaper_lab.SOLUTIONS, n)` shows a worked solution for exercise `n`; nothing
# is shown until you ask.

# %%
# reveal(cheaper_lab.SOLUTIONS, 1)
assert all(str(reveal(cheaper_lab.SOLUTIONS, n)) for n in cheaper_lab.SOLUTIONS)  # worked solutions exist, not shown
