"""Planning a real training run, by concern:

* :mod:`~aihw.planning.config`: the question (:class:`Cluster`, :class:`PlanConfig`) and one layout's answer
  (:class:`Layout`);
* :mod:`~aihw.planning.efficiency`: the sourced efficiency assumptions and the one fitted constant;
* :mod:`~aihw.planning.step`: the step-time model of one layout (GEMM rooflines, bubble, memory);
* :mod:`~aihw.planning.traffic`: what each parallelism sends per step and how long it takes on the cluster;
* :mod:`~aihw.planning.planner`: the layout search (:func:`plan`), why the winner wins (:func:`explain`);
* :mod:`~aihw.planning.published`: the published runs the model is checked against.

``from aihw import planning`` then ``planning.plan(planning.PlanConfig("llama-3-70b", planning.Cluster(nodes=16)))``.
"""

from aihw.planning import published
from aihw.planning.config import (
    ATTENTION,
    ELEMENTWISE,
    RECOMPUTE,
    Attention,
    Cluster,
    Elementwise,
    Layout,
    PlanConfig,
    check_pins,
)
from aihw.planning.efficiency import (
    ATTENTION_TO_GEMM,
    BAND,
    BUS_FRACTION,
    DEFAULT_GEMM_FRACTION,
    FUSED_ATTENTION_BACKWARD,
    GEMM_FRACTION,
    GEMM_SOURCE,
    NVLS_SPEEDUP,
    STEP_OVERHEAD,
    Efficiency,
)
from aihw.planning.planner import MAX_SEARCH_LAYOUTS, Plan, explain, pinned, plan, tp_roofline_check
from aihw.planning.step import (
    attention_backward_factor,
    eager_elementwise_bytes,
    evaluate,
    gemm_seconds,
    with_band,
)
from aihw.planning.traffic import zero3_gathers_per_micro_batch

__all__ = [
    "ATTENTION", "ELEMENTWISE", "RECOMPUTE", "Attention", "Cluster", "Elementwise", "Layout", "PlanConfig",
    "check_pins", "ATTENTION_TO_GEMM", "BAND", "BUS_FRACTION", "DEFAULT_GEMM_FRACTION", "FUSED_ATTENTION_BACKWARD",
    "GEMM_FRACTION", "GEMM_SOURCE", "NVLS_SPEEDUP", "STEP_OVERHEAD", "Efficiency", "MAX_SEARCH_LAYOUTS", "Plan",
    "explain", "pinned", "plan", "tp_roofline_check", "attention_backward_factor", "eager_elementwise_bytes",
    "evaluate", "gemm_seconds", "with_band", "zero3_gathers_per_micro_batch", "published",
]
