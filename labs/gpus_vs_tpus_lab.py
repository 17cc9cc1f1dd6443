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
# # Lab: Rooflines and systolic arrays
#
# **Question.** Is a given matrix multiply limited by a chip's compute or by its memory — and how does a systolic
# array (a TPU's matrix unit) get away with so few register-file accesses?
#
# You will (1) predict with the roofline model where operations sit on real chips, (2) step through a small
# systolic array cycle by cycle and count its accesses, (3) measure your own machine and put it on the same plot,
# and (4) check three answers of your own. Widgets need a running kernel; below each widget the default result is
# also drawn as an ordinary figure, so the page makes sense without one.

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

from aihw.chips import roofline, simt, systolic
from aihw.exercises import Predictions, reveal
from aihw.plots.gpus_vs_tpus import plot_roofline
from aihw.plots.style import setup_book
from aihw.widgets import gpus_vs_tpus_lab

grader = gpus_vs_tpus_lab.ASSIGNMENT  # the lab's checked exercises (aihw.grading)
predictions = Predictions()  # your predictions, each recorded in its own cell before its measurement

setup_book()  # the book's figure style: column width, legible text, SVG

# %% [markdown]
# ## Predict: where does a matmul sit on the roofline?
#
# The roofline says a kernel of arithmetic intensity $I$ (FLOP per byte of off-chip traffic) reaches at most
# $\min(P, I\,\beta)$ FLOP/s. Choose chips, a precision and a shape $M\times K$ times $K\times N$; the table
# gives the bound and the shortest possible time. Try $M = 1$ (one token of LLM decoding) and watch the
# operation fall off the compute roof.

# %%
explorer = gpus_vs_tpus_lab.roofline_explorer(chips=("H100 SXM", "TPU v5e", "MI300X"), dtype="bf16",
                                         shape=(4096, 4096, 4096))
display(explorer)

# The default view as a plain figure (for readers without a kernel):
big = roofline.estimate_matmul("H100 SXM", 4096, 4096, 4096, "bf16")
decode = roofline.estimate_matmul("H100 SXM", 1, 4096, 4096, "bf16")
plot_roofline(["H100 SXM", "TPU v5e", "MI300X"], "bf16", ops=[big, decode])
plt.show()
assert big.bound == "compute" and decode.bound == "memory"
assert decode.time_s > decode.flops / decode.peak_flops  # memory time dominates

# %% [markdown]
# ## Look inside: a systolic array, cycle by cycle
#
# In a **weight-stationary** array (the TPU's choice) a tile of $B$ is loaded into the cells, rows of $A$ stream in
# from the left one cycle apart, and partial sums flow down. In an **output-stationary** array each cell keeps one
# element of $C$. Step or play the array and watch which cells fire; the counters show the utilisation so far.
# The simulator is exact: its result equals `A @ B`.

# %%
display(gpus_vs_tpus_lab.systolic_stepper(size=3, m=4, k=3, n=3))

rng = np.random.default_rng(1)
A, B = rng.standard_normal((64, 48)), rng.standard_normal((48, 40))
for flow in ("weight-stationary", "output-stationary"):
    result = systolic.simulate(A, B, size=16, dataflow=flow)
    assert np.allclose(result.C, A @ B), flow
    assert result.counts.macs == 64 * 48 * 40
    print(f"{flow:>18}: {result.cycles} cycles, mean utilisation {result.mean_utilisation:.0%}")

fig, info = gpus_vs_tpus_lab.systolic_step(rng.integers(-3, 4, (4, 3)), rng.integers(-3, 4, (3, 3)),
                                       size=3, dataflow="weight-stationary", cycle=5)
plt.show()
print(info)

# %% [markdown]
# ### Register-file traffic: systolic vs SIMT
#
# Now compare the access counts of a 256-cube matmul on a 128×128 weight-stationary array with the same matmul
# done by a tiled GPU kernel (shared-memory tiles, 4×4 register blocking per thread).

# %%
from aihw.plots.gpus_vs_tpus import plot_access_counts

M = K = N = 256
ws = systolic.simulate(rng.standard_normal((M, K)), rng.standard_normal((K, N)), size=128)
gpu = simt.simt_matmul_counts(M, N, K)
plot_access_counts(ws.counts, gpu)
plt.show()
per_mac = {name: c.register_file_accesses / c.macs for name, c in (("SIMT", gpu), ("systolic", ws.counts))}
print(f"register-file accesses per MAC: {per_mac}; systolic PE-to-PE hops per MAC: "
      f"{ws.counts.pe_register_transfers / ws.counts.macs:.2f}")
assert per_mac["SIMT"] > 2 and per_mac["systolic"] < per_mac["SIMT"] / 10

# %% [markdown]
# ## Measure: put your own machine on the roofline
#
# The button times matrix multiplies of growing size and a large memory copy. On a GPU runtime it measures the
# GPU; on a laptop, the CPU. The cell below also runs a short measurement directly so the figure exists without
# pressing anything.

# %% [markdown]
# **Your prediction first.** Before the measurement below runs, predict this machine's best fp32 matmul
# throughput (GFLOP/s): a laptop core does a few to a few tens of GFLOP/s in fp32, a GPU thousands. Run the cell to
# record it; the measurement shows it beside the measured value.

# %%
my_gflops_prediction = None  # GFLOP/s
predictions.record("best fp32 matmul", my_gflops_prediction, unit="GFLOP/s")

# %%
display(gpus_vs_tpus_lab.measure_panel(chips=("H100 SXM", "TPU v5e")))  # lab_config(); bf16 (T4: fp16) on a GPU

from IPython.display import HTML

from aihw.measure.roofline import lab_config, measure_device
from aihw.runtime.device import detect_chip, roofline_dtype

# lab_config(): a few seconds of fp32 on a CPU; on a GPU every dtype it has (fp32/tf32/fp16/bf16/fp8), n up to 8192.
mine = measure_device(lab_config())
view = gpus_vs_tpus_lab.roofline_view(mine, detect_chip(), chips=("H100 SXM", "TPU v5e"),
                                      dtype=roofline_dtype(mine.device))  # fp16 on a T4 (no bf16 tensor cores)
print(view["label"], "|", view["note"])
plot_roofline(view["chips"], view["dtype"], measured=mine)  # on a known GPU, its own roofline comes first
plt.show()
display(HTML(view["table_html"]))  # measured ÷ datasheet per dtype (datasheet columns empty on a CPU)
display(predictions.compare("best fp32 matmul", mine.best_flops("fp32") / 1e9))
for p in mine.matmul:
    assert abs(p.flops_per_s - 2 * p.n**3 / p.seconds) <= 1e-6 * p.flops_per_s
assert mine.best_bandwidth() > 0 and mine.best_flops("fp32") > 0

# %% [markdown]
# ## Exercises
#
# Replace `None` with your number and run the cell. The expected values come from the same calculators the
# widgets use.
#
# **Exercise 1.** What is the ridge point (FLOP/byte) of the H100 SXM in bf16?

# %%
answer_1 = None  # your answer, FLOP/byte
grader.check("q1", answer_1)

# %% [markdown]
# **Exercise 2.** What is the shortest time, in microseconds, of a bf16 matrix-vector product
# (1 × 8192 times 8192 × 8192) on the TPU v5e? And the same weights applied to a batch of 512 tokens
# (512 × 8192 times 8192 × 8192): is that product compute- or memory-bound on the v5e (`"compute"` or
# `"memory"`)?

# %%
answer_2 = None  # your answer, microseconds
answer_2_bound = None  # the batch of 512: "compute" or "memory"
display(grader.check("q2", answer_2), grader.check("q2_bound", answer_2_bound))

# %% [markdown]
# **Exercise 3.** How many cycles does the 3×3 weight-stationary array above take for the 4×3 by 3×3
# product? Count from the stepper, then check.

# %%
answer_3 = None  # your answer, cycles
grader.check("q3", answer_3)

# %% [markdown]
# ### Worked solutions, on request
#
# Try every exercise first. Then `reveal(gpus_vs_tpus_lab.SOLUTIONS, n)` shows a worked solution for exercise `n`; nothing
# is shown until you ask.

# %%
# reveal(gpus_vs_tpus_lab.SOLUTIONS, 1)
assert all(str(reveal(gpus_vs_tpus_lab.SOLUTIONS, n)) for n in gpus_vs_tpus_lab.SOLUTIONS)  # worked solutions exist, not shown
