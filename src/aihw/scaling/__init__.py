"""Scaling laws: compute-optimal model size and tokens, and what a training run costs (:mod:`~aihw.scaling.laws`)."""

from aihw.scaling.laws import (
    CHINCHILLA,
    EPOCH_APPROACH3,
    HOFFMANN_APPROACH1,
    HOFFMANN_APPROACH3_ROUNDED,
    HOFFMANN_TABLE3,
    METHOD_LABELS,
    METHODS,
    TOKENS_PER_PARAM_RULE_OF_THUMB,
    Allocation,
    ChinchillaFit,
    Method,
    PowerLawFrontier,
    TrainingRun,
    compute_optimal,
    compute_optimal_all,
    decode_seconds_per_token,
    fit_frontier,
    training_flops,
    training_run,
)

__all__ = [
    "Method", "METHODS", "METHOD_LABELS", "HOFFMANN_TABLE3", "TOKENS_PER_PARAM_RULE_OF_THUMB",
    "ChinchillaFit", "EPOCH_APPROACH3", "HOFFMANN_APPROACH3_ROUNDED", "CHINCHILLA", "PowerLawFrontier",
    "fit_frontier", "HOFFMANN_APPROACH1", "Allocation", "compute_optimal", "compute_optimal_all",
    "training_flops", "TrainingRun", "training_run", "decode_seconds_per_token"
]
