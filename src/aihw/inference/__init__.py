"""Generation on the course's small GPT, measured: one file per serving idea.

* :mod:`~aihw.inference.model`: GenGPT (GQA/MQA, sliding window), the contiguous KV cache, greedy generation.
* :mod:`~aihw.inference.paged`: block allocator, paged KV cache, memory waste of a request stream.
* :mod:`~aihw.inference.batching`: static vs continuous batching, a real serving loop.
* :mod:`~aihw.inference.speculative`: greedy speculative decoding and Leviathan et al.'s formulas.
* :mod:`~aihw.inference.quantized`: weight-only INT8/INT4 decode (PyTorch's packed kernels and a reference).
* :mod:`~aihw.inference.decode`: decode/prefill timing against bytes / bandwidth, the last-level cache size.
* :mod:`~aihw.inference.train`: the draft and target models, trained on the book's own text (cached).

The analytic counterpart (no torch) is :mod:`aihw.serving.estimator`.
"""
