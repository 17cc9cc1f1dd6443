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
# # Lab: Planning a training run
#
# **Question.** Given a model, a batch and a cluster, can you say whether a layout fits and how fast it runs,
# well enough to reproduce a published run? And what do the two parallelisms of long contexts and sparse
# models, ring attention and experts, actually exchange?
#
# You will (1) pin a published run in the planner and compare its prediction with the published throughput,
# (2) change the efficiency assumptions and see which terms move, (3) run ring attention and a mixture-of-experts
# layer over two processes on this machine and check them against one process, and (4) answer three
# auto-checked exercises on communication rooflines.

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
from IPython.display import HTML, display

from aihw.comm import roofline as comm_roofline
from aihw.exercises import check, compare_prediction, reveal
from aihw.parallel import context_parallel, expert_parallel
from aihw.parallel.launch import run
from aihw.planning import published
from aihw.widgets import planning_lab

print(f"aihw {aihw.__version__}, torch {torch.__version__}")

# %% [markdown]
# ## Pin a published run and compare
#
# Narayanan et al. (2021) trained GPT-3 175B on 1,536 A100s with 8-way tensor and 12-way pipeline parallelism
# and reported 141 TFLOP/s per GPU. **Predict** first: what share of the step do you expect the pipeline
# bubble to take (micro-batch 1, batch 1,536, 16 data-parallel replicas, so 96 micro-batches per pipeline)?

# %%
my_bubble_share = None  # your prediction, a fraction of the step (e.g. 0.05)

row, text = planning_lab.published_run_view("GPT-3 175B PTD-P, 1536 GPUs")
display(HTML(text))
bubble_share = row["breakdown"]["bubble"] / sum(row["breakdown"].values())
print(f"bubble share of the step: {bubble_share:.1%} (your prediction: {my_bubble_share})")
assert row["fits"] and 0.85 <= row["ratio"] <= 1.15

# %% [markdown]
# ## Change the assumptions
#
# Pick another published run and switch the assumptions: the matmul fraction (0 uses the chip's published
# benchmark figure), whether data-parallel and ZeRO-3 traffic overlaps compute, and whether collectives that
# span nodes run as one flat ring through the network ports. Try the ZeRO-3 rows of Table 2 with and without
# overlap: which assumption reproduces the published drop from 144 to 44 TFLOP/s?

# %%
display(planning_lab.published_run_widget("GPT-3 175B ZeRO-3, 1536 GPUs"))

rows = [published.compare(r) for r in published.TABLE1]
print("Table 1, predicted / published:", ", ".join(f"{r['ratio']:.2f}" for r in rows))
assert all(0.85 <= r["ratio"] <= 1.15 and r["fits"] for r in rows)

# %% [markdown]
# ## Ring attention and experts, for real
#
# Both run on two gloo processes of this machine in one launch. Ring attention splits TinyGPT's sequence over
# the ranks and passes keys and values around; the logits must equal one process's. The MoE layer puts two of
# its four experts on each rank and moves tokens with all-to-alls; the output must equal the unsplit layer's.
# The second MoE run biases the router towards expert 0, so you can see load imbalance and dropped tokens.

# %%
my_ring_bytes = None  # your prediction: bytes one rank sends for the 2 layers (width 32, 2 x 24 tokens, fp32)
ring_cfg = context_parallel.RingConfig()
moe_cfgs = (expert_parallel.MoEConfig(), expert_parallel.MoEConfig(skew=3.0, capacity_factor=1.25))
ring, moe, skewed = run(((context_parallel.ring_worker, ring_cfg),)
                        + tuple((expert_parallel.moe_worker, c) for c in moe_cfgs),
                        world_size=2, backend="gloo", timeout_s=300)
for r in ring:
    torch.testing.assert_close(r["logits"], r["reference"])
    print(f"ring rank {r['rank']}: max |diff| {r['max_abs_diff']:.1e}, bytes sent {r['bytes_sent']} "
          f"(formula {r['bytes_formula']})")
    assert r["bytes_sent"] == r["bytes_formula"]
for r in moe:
    torch.testing.assert_close(r["output"], r["reference"])
display(compare_prediction("ring-attention bytes sent by rank 0", my_ring_bytes, ring[0]["bytes_sent"],
                           unit="bytes"))
print("tokens per expert, random router:", moe[0]["tokens_per_expert"], f"imbalance {moe[0]['imbalance']:.2f}")
print("tokens per expert, skewed router:", skewed[0]["tokens_per_expert"],
      f"imbalance {skewed[0]['imbalance']:.2f}, dropped {sum(r['dropped'] for r in skewed)}")

# %% [markdown]
# ## Exercises
#
# Replace `None` with your number (or word) and run the cell. Expected values come from the package.
#
# **Exercise 1.** An H100 (989 TFLOP/s bf16) trains with FSDP across nodes, one 400 Gb/s NDR port per GPU. How
# many tokens per GPU per step keep the parameter gathers and gradient reduce-scatter no longer than compute?

# %%
answer_1 = None  # tokens per GPU per step
check(answer_1, comm_roofline.critical_intensity("H100 SXM", "InfiniBand NDR"), rel_tol=0.05, unit="tokens",
      hint="6NT FLOPs against 3 x 2N bytes: T >= F / W, with W in bytes/s (400 Gb/s = 50 GB/s).")

# %% [markdown]
# **Exercise 2.** Ring attention over $c = 4$ ranks, on one layer of TinyGPT (width 32) with 2 sequences of 24
# tokens in fp32: how many bytes does each rank send?

# %%
answer_2 = None  # bytes
check(answer_2, context_parallel.ring_bytes(context_parallel.RingConfig(), 4), rel_tol=0,
      unit="bytes", hint="(c - 1) steps, each passing K and V of b x (s / c) tokens x width values, 4 bytes each.")

# %% [markdown]
# **Exercise 3.** (categorical, then a number) Is tensor parallelism of Llama-3-70B at $t = 8$ over InfiniBand NDR compute-bound or
# communication-bound? Answer `"compute"` or `"communication"`; then give the closed-form ratio
# (compute time / communication time).

# %%
answer_3_bound = None  # "compute" or "communication"
answer_3_ratio = None  # a number
expected_3 = comm_roofline.tp_condition("llama-3-70b", 8, "H100 SXM", "InfiniBand NDR")
display(check(answer_3_bound, expected_3.bound, choices=("compute", "communication"),
              hint="compare the layer's matmul weights with 4 h (t - 1) F / W for the network's W."))
check(answer_3_ratio, expected_3.ratio, rel_tol=0.05,
      hint="matmul weights per layer / (4 h (t - 1) F / W); F / W for NDR is about 19,800.")

# %% [markdown]
# ### Worked solutions, on request
#
# Try every exercise first. Then `reveal(planning_lab.SOLUTIONS, n)` shows a worked solution for exercise `n`;
# nothing is shown until you ask.

# %%
# reveal(planning_lab.SOLUTIONS, 1)
assert all(str(reveal(planning_lab.SOLUTIONS, n)) for n in planning_lab.SOLUTIONS)  # worked solutions exist, not shown
