"""Error bands from the calculators' own out-of-sample checks, never from a guess.

**Training** (the planner, :mod:`aihw.planning`). Its one fitted constant, ``STEP_OVERHEAD``, was fitted to
Narayanan et al. 2021's Table 1 (``published.TABLE1``): those rows are in-sample and left out. Every other
published run it is checked against is used: Table 2 (GPT-3 175B, PTD-P and ZeRO-3), torchtitan's four FSDP2
runs (A100 80GB) and Llama 3 405B's three layouts (H100 SXM). For each, the ratio predicted / published
throughput is the factor by which the planner's time is short of (< 1) or beyond (> 1) the real one; a chip's
band is the span of those ratios over the runs on that chip, so the real time lies in
``[predicted x min, predicted x max]`` *as far as the recorded runs go*. Llama 3's paper does not say which
FLOPs its TFLOP/s count, so both conventions (model and executed FLOPs) enter its span. A chip with no recorded
run gets no band, and says so. Two caveats the band carries: the ZeRO-3 and torchtitan rows' software
behaviours (``published.IMPLEMENTATIONS``) were described after those rows were seen (named behaviours, no
fitted number); and a band for one chip says nothing about another.

**Serving** (:mod:`aihw.serving`): the course records no comparison of the serving model with published serving
measurements, so no band can be derived. Its times are roofline bounds at the datasheet's peaks
(efficiency 1): real engines are slower, by an amount this course has not measured at scale.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from aihw.catalogue.hardware import get_chip
from aihw.planning import published


@dataclass(frozen=True)
class Band:
    """Real / predicted time lies in ``[low, high]`` for this chip, from ``runs`` recorded comparisons."""

    chip: str
    low: float
    high: float
    runs: tuple[str, ...]

    @property
    def note(self) -> str:
        return (f"planner's out-of-sample error on {self.chip}: real/predicted time {self.low:.2f}-{self.high:.2f} "
                f"over {len(self.runs)} published runs (aihw.planning.published, Table 1 left out as in-sample)")


def _ratios(run: published.PublishedRun) -> list[float]:
    """predicted / published throughput of one run: both FLOP conventions when the source states none."""
    row = published.compare(run)
    if run in published.LLAMA3_RUNS:  # the paper does not say which FLOPs it counts: span both
        layout = run.predict()
        return [layout.model_tflops_per_device / run.published_tflops,
                layout.executed_tflops_per_device / run.published_tflops]
    return [row["ratio"]]


OUT_OF_SAMPLE: tuple[published.PublishedRun, ...] = tuple(
    r for r in published.RUNS + published.LLAMA3_RUNS if r not in published.TABLE1)


@functools.lru_cache(maxsize=1)
def training_bands() -> dict[str, Band]:
    """Catalogue key -> the planner's band on that chip (only chips with an out-of-sample published run)."""
    spans: dict[str, tuple[list[float], list[str]]] = {}
    for run in OUT_OF_SAMPLE:
        key = get_chip(run.chip).key
        ratios, names = spans.setdefault(key, ([], []))
        ratios.extend(_ratios(run))
        names.append(run.name)
    return {key: Band(get_chip(key).name, min(r), max(r), tuple(n)) for key, (r, n) in spans.items()}


def training_band(chip: str) -> Band | None:
    """The planner's out-of-sample band on ``chip``, or None when no published run on it is recorded."""
    return training_bands().get(get_chip(chip).key)


def no_training_band_reason(chip: str) -> str:
    have = ", ".join(b.chip for b in training_bands().values())
    return (f"no band: no published run on {get_chip(chip).name} among the planner's out-of-sample checks "
            f"(recorded: {have})")


SERVING_NO_BAND = ("no band: the serving model has no recorded comparison with published serving measurements; "
                   "its times are roofline bounds at datasheet peaks, so real times are longer")
