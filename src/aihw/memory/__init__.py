"""Memory of training and serving, component by component (:mod:`~aihw.memory.estimator`), and how many
devices a model needs (:mod:`~aihw.memory.fit`)."""

from aihw.memory.estimator import (
    ADAM8BIT_BLOCK,
    ATTENTION,
    COMPONENTS,
    GB,
    GRAD_PRECISIONS,
    MODES,
    OPTIMIZER_STATE_BYTES,
    OPTIMIZERS,
    PRECISION_BYTES,
    RECOMPUTE,
    SPLIT_FIELDS,
    WEIGHT_PRECISIONS,
    ZERO3_BUFFER_LAYERS,
    ZERO_STAGES,
    Attention,
    GiB,
    GradPrecision,
    MemoryConfig,
    MemoryEstimate,
    Mode,
    Optimizer,
    ZeroStage,
    activation_bytes_per_layer,
    estimate,
    estimate_memory,
    in_flight_layers,
    korthikanti_per_layer,
    kv_cache_bytes,
    per_device_bytes,
)
from aihw.memory.fit import chip_fit, devices_needed, fit_table

__all__ = [
    "GB", "GiB",
    "WEIGHT_PRECISIONS", "PRECISION_BYTES", "ADAM8BIT_BLOCK", "Optimizer", "OPTIMIZERS",
    "OPTIMIZER_STATE_BYTES", "COMPONENTS", "Mode", "MODES", "RECOMPUTE", "Attention", "ATTENTION",
    "GradPrecision", "GRAD_PRECISIONS", "ZeroStage", "ZERO_STAGES", "ZERO3_BUFFER_LAYERS",
    "activation_bytes_per_layer", "korthikanti_per_layer", "MemoryConfig", "MemoryEstimate",
    "in_flight_layers", "kv_cache_bytes", "estimate", "per_device_bytes", "SPLIT_FIELDS", "estimate_memory",
    "chip_fit", "devices_needed", "fit_table"
]
