"""Planning a real training run: the layout search and step-time model (:mod:`~aihw.planning.planner`) and the
published runs it is checked against (:mod:`~aihw.planning.published`)."""

from aihw.planning import published
from aihw.planning.planner import (
    BAND,
    DEFAULT_GEMM_FRACTION,
    GEMM_FRACTION,
    STEP_OVERHEAD,
    Cluster,
    Efficiency,
    Layout,
    Plan,
    PlanConfig,
    pinned,
    plan,
)

__all__ = [
    "published", "BAND", "DEFAULT_GEMM_FRACTION", "GEMM_FRACTION", "STEP_OVERHEAD", "Cluster", "Efficiency",
    "Layout", "Plan", "PlanConfig", "pinned", "plan",
]
