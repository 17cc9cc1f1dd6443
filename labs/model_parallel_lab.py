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
# # Lab: Model, pipeline and tensor parallelism
#
# **Question.** When a model is cut into $p$ pipeline stages, how much of each step do the stages spend
# waiting, and does feeding them $m$ micro-batches fix it? And what does splitting *inside* a layer cost instead?
#
# You will (1) predict the pipeline bubble with a schedule simulator, (2) run GPipe and 1F1B as real processes
# on this machine and compare the measured timeline with the simulated one, (3) check that a tensor-parallel
# block computes exactly what the dense block computes, and count its all-reduces, and (4) let the planner
# pick a layout for a real model on a real cluster. Widgets need a running kernel; each one's default result is
# also drawn below it as an ordinary figure.

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
from IPython.display import HTML, display

from aihw.exercises import check, compare_prediction, expected, reveal
from aihw.layout import schedules
from aihw.models.tinygpt import TinyGPTConfig
from aihw.parallel import pipeline, tensor_parallel
from aihw.parallel.launch import LaunchConfig, launch
from aihw.parallel.layer_parallel import reference_step
from aihw.plots.model_parallel import plot_layout_times, plot_measured_and_simulated, plot_simulated
from aihw.widgets import model_parallel_lab

print(f"aihw {aihw.__version__}, torch {torch.__version__}")
from aihw.plots.style import setup_book

setup_book()  # the book's figure style: column width, legible text, SVG

# %% [markdown]
# ## Predict: the bubble of a pipeline schedule
#
# With $p$ equal stages and $m$ micro-batches, GPipe and 1F1B both leave each stage idle for a share
# $(p-1)/(m+p-1)$ of the step (this course's convention: idle time over step time; the Megatron-LM papers
# quote $(p-1)/m$, idle time over ideal compute time). The interleaved schedule, with $v$ chunks per device,
# shrinks it to $(p-1)/(vm+p-1)$. Change the schedule, $p$, $m$ and $v$ and watch the Gantt chart.

# %%
display(model_parallel_lab.schedule_explorer(schedule="1f1b", p=4, m=8, v=2))

# The default view as a plain figure, and the prediction for the run below:
plot_simulated(schedules.simulate("1f1b", 4, 8))
plt.show()
P, M = 2, 4
predicted = schedules.bubble_fraction(P, M)
print(f"prediction for p={P}, m={M}: bubble {predicted:.1%} of the step")
assert abs(schedules.simulate("gpipe", P, M).bubble - predicted) < 1e-12

# %% [markdown]
# ## Measure: GPipe and 1F1B as real processes
#
# Two processes (gloo, one CPU thread each) each hold three blocks of a small GPT. Every rank records when it
# computes, sends, receives and waits. Below the measured timeline, the simulator replays the same schedule with
# the stage times that were measured, so any gap between the two is communication and Python overhead. The
# gradients are checked against the unsplit model. The button runs other sizes (needs a kernel).

# %%
display(model_parallel_lab.pipeline_panel(p=2, m=4))

model = TinyGPTConfig(width=64, depth=6)
configs = [pipeline.PipelineConfig(model=model, micro_batches=M, micro_batch_size=4, schedule=s)
           for s in ("gpipe", "1f1b")]
results = pipeline.run_pipeline(configs, stages=P)
for runs in results:
    s = pipeline.summary(runs)
    events, step = pipeline.timeline(runs)
    sim = schedules.simulate(s["schedule"], P, M, forward_s=s["forward_s"], backward_s=s["backward_s"])
    plot_measured_and_simulated(events, step, sim, measured_bubble=s["bubble_measured"])
    plt.show()
    print(f"{s['schedule']}: bubble measured {s['bubble_measured']:.1%}, simulated with measured times "
          f"{s['bubble_simulated']:.1%}, theory {s['bubble_theory']:.1%}")
    loss_ref, grads_ref = reference_step(model, configs[0].batch)
    grads = pipeline.merged_grads(runs)
    for name in grads_ref:
        torch.testing.assert_close(grads[name], grads_ref[name], rtol=1e-4, atol=1e-6)
print("gradients equal the unsplit model's for both schedules")

# %% [markdown]
# ### Stored activations: why 1F1B exists
#
# Both schedules have the same bubble, but GPipe keeps the activations of all $m$ micro-batches until the
# backward passes start; 1F1B starts backward passes early and keeps at most $p - \text{stage}$. The counts
# below are measured with autograd's saved-tensor hooks during the run above.

# %%
my_gpipe_stage0_in_flight = None  # your prediction: how many micro-batches does GPipe's stage 0 hold at once?
for runs in results:
    s = pipeline.summary(runs)
    if s["schedule"] == "gpipe":
        display(compare_prediction("GPipe stage 0 micro-batches in flight", my_gpipe_stage0_in_flight,
                                   s["peak_in_flight_measured"][0]))
    print(f"{s['schedule']:>5}: micro-batches in flight per stage {s['peak_in_flight_measured']} "
          f"(predicted {s['peak_in_flight_predicted']}); peak saved MB "
          f"{[round(b / 1e6, 2) for b in s['peak_saved_bytes_measured']]}")
    assert s["peak_in_flight_measured"] == s["peak_in_flight_predicted"]

# %% [markdown]
# ## Tensor parallelism: exact, but talkative
#
# Megatron-LM splits the MLP's first matrix by columns and its second by rows, and attention by heads, so each
# block needs one all-reduce forward and one backward for attention, and the same for the MLP. Two ranks run
# one block; every output and gradient is compared with the dense block's, and the all-reduces are counted.

# %%
tp_cfg = tensor_parallel.TensorParallelConfig(model=TinyGPTConfig(width=64, heads=4), batch=4, repeats=1)
tp_results = launch(tensor_parallel.tensor_parallel_worker, tp_cfg, config=LaunchConfig(world_size=2, backend="gloo"))
for r in tp_results:
    for parallel, dense in r["pairs"].values():
        torch.testing.assert_close(parallel, dense, rtol=1e-4, atol=1e-5)
formula = tensor_parallel.tp_comm_per_layer(batch=4, seq=64, hidden=64, tp=2)
comm = tp_results[0]["comm"]
measured_bytes = comm["forward"]["bytes"] + comm["backward"]["bytes"]
print(f"all-reduces: forward {comm['forward']['count']}, backward {comm['backward']['count']}; "
      f"bytes summed {measured_bytes} (formula {formula['bytes_per_step']})")
assert measured_bytes == formula["bytes_per_step"]

# %% [markdown]
# ## Plan: a layout for a real model on a real cluster
#
# The planner tries every DP × TP × PP × ZeRO × recomputation layout that uses all the chips, drops those that do
# not fit (memory chapter's estimator), estimates the step time from the roofline of every matmul shape at the
# chip's published matmul efficiency, the alpha-beta cost of every collective and the bubble, and ranks them.
# Every assumption is listed.

# %%
display(model_parallel_lab.planner_widget(model="llama-2-13b", chip="H100 SXM"))

best_plan, text = model_parallel_lab.plan_view(model="llama-2-13b", chip="H100 SXM", chips_per_node=8, nodes=4,
                                         global_batch=512, seq=4096)
plot_layout_times(best_plan.ranked, top=6)
plt.show()
display(HTML(text))
assert best_plan.best.memory_bytes <= 0.9 * 80e9

# %% [markdown]
# ## Exercises
#
# Replace `None` with your number and run the cell. The expected values come from the package's calculators.
#
# **Exercise 1.** A pipeline has $p = 8$ stages and $m = 24$ micro-batches. What share of the step (this
# lab's convention) is bubble?

# %%
answer_1 = None  # a fraction, e.g. 0.5
check(answer_1, schedules.bubble_fraction(8, 24), rel_tol=0.01,
      hint="how many slots does the fill and the drain take, out of how many in the whole step?")

# %% [markdown]
# **Exercise 2.** With 1F1B, $p = 8$ and $m = 24$, how many micro-batches' activations does stage 0 hold at
# most? (GPipe would hold all 24.)

# %%
answer_2 = None  # micro-batches
check(answer_2, schedules.peak_in_flight("1f1b", 8, 24, 0), rel_tol=0, unit="micro-batches",
      hint="how many forwards does stage 0 run before its first backward can start?")

# %% [markdown]
# **Exercise 3.** A layer of Llama-2-13B (hidden size 5120) runs with tensor parallelism on a micro-batch of one
# sequence of 4096 tokens in bf16 (2 bytes). How many bytes do all the all-reduces of one layer sum over
# in one training step (forward and backward, no recomputation)? Give bytes.

# %%
answer_3 = None  # bytes
check(answer_3, tensor_parallel.tp_comm_per_layer(batch=1, seq=4096, hidden=5120, tp=8,
                                                   bytes_per_value=2)["bytes_per_step"], rel_tol=0.01,
      unit="bytes", hint="4 all-reduces (2 forward, 2 backward), each over a b x s x h activation.")

# %% [markdown]
# **Exercise 4.** How many times larger is a 1F1B bubble (relative to the step) with $p = 4$, $m = 8$
# than with the interleaved schedule, $v = 2$, on the same $p$ and $m$?

# %%
answer_4 = None  # a ratio
check(answer_4, schedules.simulate("1f1b", 4, 8).bubble / schedules.simulate("interleaved", 4, 8, v=2).bubble,
      rel_tol=0.02, hint="interleaving splits each stage into v chunks: which term of the bubble formula changes?")

# %% [markdown]
# **Exercise 5 (categorical).** Which parallelism needs NVLink-class bandwidth between its devices:
# `"pipeline"` or `"tensor"`?

# %%
answer_5 = None
check(answer_5, expected(model_parallel_lab.CHOICES, 5), choices=("pipeline", "tensor"),
      hint="compare the bytes crossing a pipeline cut with those of the all-reduces inside every layer.")

# %% [markdown]
# ### Worked solutions, on request
#
# Try every exercise first. Then `reveal(model_parallel_lab.SOLUTIONS, n)` shows a worked solution for exercise `n`; nothing
# is shown until you ask.

# %%
# reveal(model_parallel_lab.SOLUTIONS, 1)
assert all(str(reveal(model_parallel_lab.SOLUTIONS, n)) for n in model_parallel_lab.SOLUTIONS)  # worked solutions exist, not shown
