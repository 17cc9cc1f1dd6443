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
# # Lab: Inference on hardware, predicted and measured
#
# **Question.** Generating text is a loop: one pass of the model per token. What sets the time of one pass, and
# what does batching, a paged KV cache, a draft model or 4-bit weights change?
#
# You will (1) **predict** decode time from bytes and this machine's measured bandwidth, (2) **measure** it on a real
# small GPT whose weights exceed this CPU's last-level cache, (3) sweep the batch to find where decode stops being
# bandwidth-bound, (4) size real models on real chips with the serving calculator, (5) run speculative decoding and
# quantized decode, and (6) check yourself in three exercises. Units: GB = 1e9 bytes, MB = 1e6 bytes.

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

from aihw.exercises import check, reveal
from aihw.inference import decode, quantized
from aihw.inference.model import GenConfig
from aihw.inference.speculative import expected_tokens_per_round
from aihw.plots import inference as iplots
from aihw.serving import estimate_serving, kv_bytes_per_token
from aihw.transformer.shapes import get_preset
from aihw.widgets import inference_lab

torch.set_num_threads(2)
torch.set_grad_enabled(False)

# %% [markdown]
# ## Predict
#
# Decode at batch 1 reads every weight once per token and does 2 FLOP per weight: far fewer FLOPs per byte than
# any chip's ridge point. So the prediction is **time per token = weight bytes / memory bandwidth**. First, this
# machine's roofs (the roofline chapter's measurement) and its last-level cache:

# %%
bandwidth, peak, machine = decode.measure_machine(max_seconds=10)
llc, llc_message = decode.last_level_cache()
print(f"{machine.label}: copy bandwidth {bandwidth / 1e9:.2f} GB/s, fp32 matmul {peak / 1e9:.1f} GFLOP/s")
print(llc_message)
for note in machine.notes:
    print("note:", note)

# %% [markdown]
# **Your prediction.** The model below has about 12·width² weights per layer in fp32. Before running the next
# cell, write down how many milliseconds one token should take for the largest one (bytes / bandwidth).

# %%
my_prediction_ms = None  # your number, in ms per token, for the deepest model

# %% [markdown]
# ## Measure: decode time vs bytes

# %%
sizes = [GenConfig(width=256, depth=2, heads=4, seq_len=64)]  # fits in the LLC
big = decode.decode_bound_config(width=768, heads=12, over_llc=1.0, llc_bytes=llc, seq_len=64)
sizes += [GenConfig(width=768, depth=d, heads=12, seq_len=64) for d in sorted({1, max(2, big.depth // 2), big.depth})]
points = [decode.measure_point(decode.random_model(c), f"{c.width}x{c.depth}", bandwidth=bandwidth,
                               peak_flops=peak, repeats=5) for c in sizes]
for p in points:
    lo, hi = p.timing.spread
    print(f"{p.label:8} {p.weight_bytes / 1e6:7.1f} MB  measured {p.seconds * 1e3:7.2f} ms "
          f"[{lo * 1e3:.2f}, {hi * 1e3:.2f}]  predicted {p.predicted_s * 1e3:7.2f} ms  ratio {p.ratio:.2f}")
if my_prediction_ms is not None:
    print(f"your prediction {my_prediction_ms} ms vs measured {points[-1].seconds * 1e3:.2f} ms")
print("verdict:", "time follows the bytes (largest model within 3x of bytes / bandwidth)" if points[-1].ratio <= 3
      else f"ratio {points[-1].ratio:.1f}: something other than the bytes set the time on this run (other programs "
           "on the cores?); re-run on a quiet machine before drawing a conclusion")
fig = iplots.plot_decode_vs_bytes(points, bandwidth=bandwidth, llc_bytes=llc)
plt.show()
assert all(p.seconds > 0 for p in points) and points[-1].weight_bytes > (llc or 0)

# %% [markdown]
# When the verdict line says so, time past the cache grows in proportion to the bytes: that is the bandwidth bound
# (when it does not, the run was disturbed and tests nothing; run the cell again). A ratio above 1 is the
# fraction of the copy bandwidth a matrix-vector product does not reach (plus Python's fixed cost per layer, which
# dominates the smallest model); the model that fits in the LLC can even beat the DRAM prediction, because its
# weights never leave the cache between tokens. On a GPU the same experiment, with HBM instead of DRAM, is what the
# serving model below assumes.
#
# ## Batch sweep: where decode turns compute-bound

# %%
mid = decode.random_model(GenConfig(width=768, depth=2, heads=12, kv_heads=4, seq_len=64))
sweep = [decode.measure_point(mid, "b", bandwidth=bandwidth, peak_flops=peak, batch=b, repeats=3)
         for b in (1, 2, 4, 8, 16, 32, 64)]
for p in sweep:
    print(f"batch {p.batch:3}: {p.seconds * 1e3:7.2f} ms per step, {p.tokens_per_s:8.0f} tokens/s "
          f"({'compute' if p.compute_s > p.memory_s else 'memory'}-bound predicted)")
fig = iplots.plot_batch_sweep(sweep)
plt.show()
knee = next((p.batch for p in sweep if p.compute_s > p.memory_s), None)
print(f"predicted knee on this machine: batch {knee} (peak / bandwidth = {peak / bandwidth:.1f} FLOP per byte; "
      "fp32 weights carry 0.5 FLOP per byte per sequence)")
assert sweep[-1].tokens_per_s > sweep[0].tokens_per_s  # batching raises throughput

# %% [markdown]
# The step time barely moves while the batch is small (the weights are read once for all sequences), so
# throughput grows almost linearly; past the knee each step costs more and throughput flattens, while each user
# waits longer per token. That is the latency/throughput trade-off serving engines tune.
#
# ## KV-cache bytes: measured from the tensors, MHA vs GQA

# %%
for kv_heads in (12, 4, 1):
    m = decode.random_model(GenConfig(width=768, depth=2, heads=12, kv_heads=kv_heads, seq_len=64))
    cache = m.new_cache(batch=8, max_tokens=64)
    formula = kv_bytes_per_token(m.cfg.shape(), 4) * 64 * 8
    print(f"kv_heads={kv_heads:2}: measured {cache.nbytes() / 1e6:6.2f} MB, formula {formula / 1e6:6.2f} MB")
    assert cache.nbytes() == formula

# %% [markdown]
# ## The serving calculator
#
# Pick a model, a chip, weight and KV precisions, batch, context and tensor-parallel degree: the table updates
# live (`aihw serve` prints the same). **Generate and measure** runs the course's trained small model here (first
# time: a few seconds of training on the book's own text); tick *speculative* to let a smaller draft propose 4
# tokens per round.

# %%
inference_lab.serving_calculator()

# %%
view = inference_lab.serving_view(model="llama-3-8b", chip="NVIDIA H100 SXM", batch=16, context=4096)
e = view["estimate"]
print(f"Llama-3-8B, H100, batch 16 x 4096: {e.decode_seconds_per_token * 1e3:.2f} ms per token, "
      f"{e.tokens_per_second:.0f} tokens/s, up to {e.max_batch} sequences")

# %% [markdown]
# ## Speculative decoding on and off

# %%
plain = inference_lab.generate_view("Decode reads every weight", 40)
spec = inference_lab.speculative_view("Decode reads every weight", 40, k=4)
print(repr(plain["text"]))
print(f"identical output: {spec['same_output']}; acceptance {spec['alpha']:.2f}; "
      f"{spec['tokens_per_round']:.2f} tokens per target pass (formula {spec['formula_tokens_per_round']:.2f}); "
      f"speed-up here {spec['speedup']:.2f}x")
assert spec["same_output"]

# %% [markdown]
# On this CPU both small models cost about the same per step (Python's overhead dominates), so the draft is not
# cheap and the speed-up is small or below 1; the tokens per target pass are what carries over to a GPU, where the
# target's pass is bandwidth-bound and verifying k tokens costs about as much as decoding one.
#
# ## Quantized decode: speed vs bytes moved

# %%
qcfg = decode.decode_bound_config(width=768, heads=12, over_llc=1.5, bytes_per_weight=1.0, llc_bytes=llc, seq_len=64)
qpoints = quantized.quantized_decode_points(decode.random_model(qcfg), bandwidth=bandwidth, peak_flops=peak,
                                            repeats=3)
base = qpoints[0]
for p in qpoints:
    print(f"{p.label:14} {p.weight_bytes / 1e6:7.1f} MB  {p.seconds * 1e3:7.2f} ms per token   "
          f"speed-up {base.seconds / p.seconds:5.2f}x   byte ratio {base.weight_bytes / p.weight_bytes:5.2f}x")
print(quantized.available_kernels("cpu"))

# %% [markdown]
# ## Exercises
#
# Replace each `None` (work it out by hand first, then check with the calculator).
#
# **Exercise 1.** Llama-2-70B (80 layers, 8 KV heads of dimension 128) in bf16: how many bytes of KV cache does one
# token add to one sequence?
#
# **Exercise 2.** Llama-3-8B in bf16 on one H100 SXM (3.35 TB/s), batch 1, short context: how many ms per output
# token at best (weights / bandwidth)?
#
# **Exercise 3.** Llama-3-8B in bf16 on an H100, batch 64, context 4096: is one decode step "memory" or "compute"
# bound?
#
# **Exercise 4.** A draft model is accepted with probability 0.8 per token and proposes k = 4 tokens per round: how
# many tokens does each pass of the target model yield on average?

# %%
answer1 = None  # bytes
answer2 = None  # ms
answer3 = None  # "memory" or "compute"
answer4 = None  # tokens per target pass

expected1 = kv_bytes_per_token(get_preset("llama-2-70b"), 2)
expected2 = estimate_serving("llama-3-8b", chip="H100 SXM", batch=1, context=16).decode_seconds_per_token * 1e3
expected3 = estimate_serving("llama-3-8b", chip="H100 SXM", batch=64, context=4096).decode_bound
expected4 = expected_tokens_per_round(0.8, 4)
display(check(answer1, expected1, rel_tol=0.01, unit="bytes", hint="2 (K and V) x layers x KV heads x head dim x 2 bytes."),
        check(answer2, expected2, rel_tol=0.05, unit="ms",
              hint="(8.03e9 parameters less the 128,256 x 4,096 input-embedding table, gathered, not streamed) x 2 bytes / 3.35e12 bytes/s."),
        check(answer3, expected3, choices=("memory", "compute"),
              hint="compare the FLOPs of 64 tokens with the bytes of the weights plus 64 KV caches of 4096 tokens."),
        check(answer4, expected4, rel_tol=0.01, unit="tokens", hint="1 + 0.8 + 0.8^2 + ... : one term per accepted guess, plus the target's own token."))

# %% [markdown]
# Try every exercise first. Then `reveal(inference_lab.SOLUTIONS, n)` shows a worked solution for exercise `n`.

# %%
# reveal(inference_lab.SOLUTIONS, 1)
assert all(str(reveal(inference_lab.SOLUTIONS, n)) for n in inference_lab.SOLUTIONS)  # worked solutions exist
