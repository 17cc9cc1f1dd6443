"""Choosing hardware: from a training or serving objective to chips, layout, time, cost and energy on every
catalogue chip, each figure with the band the calculators' own out-of-sample errors support
(:mod:`~aihw.choosing.objectives`, :mod:`~aihw.choosing.bands`, :mod:`~aihw.choosing.selection`)."""

from aihw.choosing.bands import SERVING_NO_BAND, Band, training_band, training_bands
from aihw.choosing.objectives import (
    CRITERIA,
    MAX_CHIPS,
    TRAIN_PRECISIONS,
    Criterion,
    ServingObjective,
    TrainingObjective,
    TrainPrecision,
    shape_for_params,
)
from aihw.choosing.selection import (
    GPU_NODE,
    MAX_TP,
    SORT_FIGURE,
    TPU_MAX_SLICE,
    Choice,
    Estimate,
    Option,
    choose,
    cluster_for,
    plan_config,
    scale_up,
)

__all__ = [
    "SERVING_NO_BAND", "Band", "training_band", "training_bands", "GPU_NODE", "MAX_TP", "SORT_FIGURE",
    "TPU_MAX_SLICE", "Choice", "Estimate", "Option", "choose", "cluster_for", "plan_config", "scale_up", "CRITERIA", "MAX_CHIPS",
    "TRAIN_PRECISIONS", "Criterion", "ServingObjective", "TrainingObjective", "TrainPrecision", "shape_for_params",
]
