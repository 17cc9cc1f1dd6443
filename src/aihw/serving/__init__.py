"""Serving a model: weights, KV cache, prefill and decode time on a chip (:mod:`~aihw.serving.estimator`)."""

from aihw.serving.estimator import (
    ACTIVATION_BYTES,
    ALL_REDUCE_ALPHA_S,
    ALL_REDUCE_STEPS,
    COMPUTE_PRECISION,
    PRECISIONS,
    Precision,
    ServingConfig,
    ServingEstimate,
    batch_sweep,
    estimate,
    estimate_serving,
    knee_batch,
    kv_bytes_per_token,
    streamed_weights_bytes,
    weights_bytes,
)

__all__ = [
    "Precision", "PRECISIONS", "COMPUTE_PRECISION", "ALL_REDUCE_ALPHA_S", "ALL_REDUCE_STEPS",
    "ACTIVATION_BYTES", "ServingConfig", "ServingEstimate", "weights_bytes", "streamed_weights_bytes", "kv_bytes_per_token",
    "knee_batch", "estimate", "estimate_serving", "batch_sweep"
]
