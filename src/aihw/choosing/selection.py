"""Choosing hardware: from an objective to, for every catalogue chip, chips, layout, time, cost and energy.

Nothing here models hardware: every figure comes from the calculator that owns it.

* **Training**: the layout and step time from the planner (:func:`aihw.planning.plan`), for clusters of a power
  of two chips (nodes of 8 GPUs; a TPU slice up to its largest size, then slices over the data-center network);
  time and cost from :func:`aihw.scaling.training_run` with the planner's own model FLOPs and utilisation, at the
  catalogue's dated price (its kind said: on-demand or a capacity block).
* **Serving**: time to first token, time per output token and memory from the serving model
  (:func:`aihw.serving.estimate`) over tensor-parallel degrees and batch sizes; replicas enough for the rate.
* **Energy**, an estimate: chips x the catalogue's power (maximum board power or TDP) x the time x the predicted
  utilisation (the planner's MFU; for serving, the share of the fleet's capacity the rate uses), with the chips'
  full power as the band's high end.
* **Bands** from :mod:`aihw.choosing.bands`: the planner's out-of-sample errors on the chip, or a sentence saying
  why there is none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from aihw._validate import require_instance
from aihw.catalogue.hardware import Chip
from aihw.choosing.bands import SERVING_NO_BAND, no_training_band_reason, training_band
from aihw.choosing.objectives import MAX_CHIPS, ServingObjective, TrainingObjective
from aihw.planning import DEFAULT_GEMM_FRACTION, GEMM_FRACTION, Cluster, Layout, PlanConfig, plan
from aihw.scaling import training_flops, training_run
from aihw.serving import COMPUTE_PRECISION, ServingConfig, ServingEstimate, estimate

GPU_NODE = 8  # GPUs per HGX/DGX node, joined by NVLink (or PCIe for PCIe cards)
# Largest TPU slice (chips on one ICI domain) per generation, from each generation's Cloud TPU page (the catalogue's
# sources gcp_tpu_v4, gcp_tpu_v5e, gcp_tpu_v5p, gcp_tpu_v6e, gcp_tpu7x), read 2026-12-03, not confirmed against a
# stored copy: v4 4,096, v5e 256, v5p 8,960, v6e (Trillium) 256, TPU7x (Ironwood) 9,216. Larger runs join slices
# over the data-center network (multislice). The planner takes a slice as one node.
TPU_MAX_SLICE: dict[str, int] = {"tpu-v4": 4096, "tpu-v5e": 256, "tpu-v5p": 8960, "tpu-v6e": 256, "tpu7x": 9216}
MAX_TP = 8  # tensor parallelism searched up to 8 (one GPU node; beyond, TP communication dominates)
MAX_SERVING_BATCH = 4096


def scale_up(chip: Chip) -> int:
    """Chips on one scale-up domain, as a power of two: 8 GPUs, or the largest TPU slice's power of two."""
    if chip.kind != "tpu":
        return GPU_NODE
    return 1 << (TPU_MAX_SLICE.get(chip.key, GPU_NODE).bit_length() - 1)


def cluster_for(chip: Chip, chips: int) -> Cluster:
    """``chips`` chips as nodes of :func:`scale_up` chips (one node when they fit in one)."""
    size = scale_up(chip)
    per_node = chips if chips <= size else math.gcd(chips, size)
    return Cluster(chip=chip.name, chips_per_node=per_node, nodes=chips // per_node)


@dataclass(frozen=True)
class Estimate:
    """One figure of an option: its value, unit, band (``low``-``high``, or None) and where the band comes from."""

    value: float | None
    unit: str
    low: float | None = None
    high: float | None = None
    note: str = ""

    def to_dict(self) -> dict:
        return {"value": self.value, "unit": self.unit, "low": self.low, "high": self.high, "note": self.note}


@dataclass(frozen=True)
class Option:
    """One chip's answer: ``feasible`` with its figures, or the ``reason`` it cannot meet the objective."""

    chip: str
    kind: str
    feasible: bool
    reason: str | None  # "memory", "deadline", "budget", "latency", "price", "precision", "model" or None
    why: str
    chips: int | None = None
    layout: str | None = None
    figures: dict[str, Estimate] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)

    def figure(self, name: str) -> float | None:
        f = self.figures.get(name)
        return None if f is None else f.value

    def to_dict(self) -> dict:
        return {"chip": self.chip, "kind": self.kind, "feasible": self.feasible, "reason": self.reason,
                "why": self.why, "chips": self.chips, "layout": self.layout,
                "figures": {k: v.to_dict() for k, v in self.figures.items()}, "details": self.details}


# figure -> (reading unit, seconds/USD/joules per that unit, key of the summary) for summaries
DISPLAY: dict[str, dict[str, tuple[str, float, str]]] = {
    "training": {"time": ("days", 86400.0, "time_days"), "cost": ("USD", 1.0, "cost_usd"),
                 "energy": ("MWh", 3.6e9, "energy_mwh")},
    "serving": {"ttft": ("ms", 1e-3, "ttft_ms"), "tpot": ("ms", 1e-3, "tpot_ms"),
                "cost": ("USD/h", 1.0, "cost_usd_per_hour"),
                "cost_per_million": ("USD per M tokens", 1.0, "cost_usd_per_million_tokens"),
                "energy": ("kWh per M tokens", 3.6e6, "energy_kwh_per_million_tokens")},
}
# which figure each criterion sorts by
SORT_FIGURE = {"training": {"time": "time", "cost": "cost", "energy": "energy"},
               "serving": {"time": "tpot", "cost": "cost", "energy": "energy"}}


@dataclass(frozen=True)
class Choice:
    """Every candidate chip's option: the feasible ones sorted by the objective's criterion, then the others."""

    objective: TrainingObjective | ServingObjective
    options: tuple[Option, ...]
    assumptions: tuple[str, ...]

    @property
    def kind(self) -> str:
        return "training" if isinstance(self.objective, TrainingObjective) else "serving"

    @property
    def feasible(self) -> tuple[Option, ...]:
        return tuple(o for o in self.options if o.feasible)

    @property
    def best(self) -> Option | None:
        return self.feasible[0] if self.feasible else None

    def option(self, chip: str) -> Option:
        from aihw.catalogue.hardware import get_chip

        name = get_chip(chip).name
        for o in self.options:
            if o.chip == name:
                return o
        raise ValueError(f"{name} was not among the chips considered")

    def summary(self) -> dict:
        """The first option's figures in reading units, and the sorted figure of every feasible chip (by short
        name): what a live calculator shows."""
        name = SORT_FIGURE[self.kind][self.objective.criterion]
        unit, scale, _ = DISPLAY[self.kind][name]
        best = self.best
        head: dict[str, Any] = {"chip": None if best is None else best.chip,
                                "chips": None if best is None else best.chips,
                                "layout": None if best is None else best.layout}
        for figure, (_, k, key) in DISPLAY[self.kind].items():
            value = None if best is None else best.figure(figure)
            head[key] = None if value is None else value / k
        ranking = {o.chip.removeprefix(o.chip.split(" ")[0] + " "): (o.figure(name) or 0.0) / scale
                   for o in self.feasible if o.figure(name) is not None}
        return {"best": head, "ranking": ranking, "ranking_unit": unit}

    def to_dict(self) -> dict:
        return {"objective": self.objective.to_dict(), "sorted_by": SORT_FIGURE[self.kind][self.objective.criterion],
                **self.summary(), "options": [o.to_dict() for o in self.options],
                "assumptions": list(self.assumptions)}


def _sorted(options: list[Option], kind: str, criterion: str) -> tuple[Option, ...]:
    name = SORT_FIGURE[kind][criterion]

    def key(o: Option) -> tuple:
        value = o.figure(name)
        return (not o.feasible, value is None, value if value is not None else 0.0, o.chips or 0, o.chip)

    return tuple(sorted(options, key=key))


def _price(chip: Chip) -> dict | None:
    if chip.price is None:
        return None
    p = chip.price
    return {"usd_per_chip_hour": p.figure.value, "kind": p.kind, "provider": p.provider, "region": p.region,
            "read": p.figure.read}


def _price_note(chip: Chip) -> str:
    if chip.price is None:
        return "no price in the catalogue"
    p = chip.price
    return f"{p.kind} price, {p.provider}, ${p.figure.value:g} per chip-hour, read {p.figure.read}"


def choose(objective: TrainingObjective | ServingObjective) -> Choice:
    """Answer ``objective`` for each of its candidate chips (every catalogue chip unless it names some)."""
    require_instance("objective", objective, (TrainingObjective, ServingObjective))
    if isinstance(objective, TrainingObjective):
        options = [_train_option(objective, c) for c in objective.candidates]
        return Choice(objective, _sorted(options, "training", objective.criterion), _training_assumptions(objective))
    options = [_serve_option(objective, c) for c in objective.candidates]
    return Choice(objective, _sorted(options, "serving", objective.criterion), _serving_assumptions(objective))


# --- training --------------------------------------------------------------------------------------------------

def plan_config(obj: TrainingObjective, chip: Chip, chips: int) -> PlanConfig:
    """The planner's question for ``chips`` chips of ``chip``: what :func:`choose` asks, for checking it."""
    cluster = cluster_for(chip, chips)
    return PlanConfig(model=obj.shape, cluster=cluster, global_batch=obj.global_batch, seq=obj.seq,
                      precision=obj.precision, optimizer=obj.optimizer, max_tp=min(MAX_TP, cluster.chips_per_node))


def _plan_best(obj: TrainingObjective, chip: Chip, chips: int) -> tuple[Layout | None, float | None]:
    """The planner's best layout on ``chips`` chips, or None and the bytes per chip the smallest layout needs
    when none fits in memory (ValueError: no layout can even be formed)."""
    result = plan(plan_config(obj, chip, chips))
    return result.best, (result.too_big[0].memory_bytes if result.best is None and result.too_big else None)


def _pow2_at_least(x: float) -> int:
    """The smallest power of two >= x, at most the first power of two >= MAX_CHIPS."""
    return 1 << max(0, math.ceil(math.log2(min(max(1.0, x), float(MAX_CHIPS)))))


CHIP_HOURS_DOUBLINGS = 2  # how many doublings past the fewest chips are tried for fewer chip-hours


def _fewer_chip_hours(obj: TrainingObjective, chip: Chip, n: int, best: Layout, rule: str
                      ) -> tuple[int, Layout, str]:
    """Double the chips while that takes fewer chip-hours (so costs less and draws less energy at full power)."""
    for _ in range(CHIP_HOURS_DOUBLINGS):
        if 2 * n > MAX_CHIPS:
            break
        more, _ = _plan_best(obj, chip, 2 * n)
        if more is None or 2 * n / more.tokens_per_second >= n / best.tokens_per_second:
            break
        n, best, rule = 2 * n, more, "the fewest chip-hours within two doublings of " + rule.removeprefix("the ")
    return n, best, rule


def _size(obj: TrainingObjective, chip: Chip) -> tuple[int, Layout | None, str, float | None]:
    """(chips, best layout or None, why, bytes per chip the smallest layout needs when none fits)."""
    if obj.chips is not None:
        best, need = _plan_best(obj, chip, obj.chips)
        return obj.chips, best, f"{obj.chips} chips, as the objective fixes", need
    deadline = obj.deadline_s
    n = 1
    if deadline is not None:  # the planner runs no matmul faster than its matmul fraction of peak: fewer chips
        #   than this cannot meet the deadline
        fraction = GEMM_FRACTION.get(chip.key, DEFAULT_GEMM_FRACTION)
        rate = chip.peak_flops(obj.precision) * fraction
        n = _pow2_at_least(training_flops(obj.shape.param_count(), obj.train_tokens) / (deadline * rate))
    n = min(n, MAX_CHIPS)
    missed = n // 2  # the most chips known not to do (below the floor: none do)
    while True:
        try:
            best, need = _plan_best(obj, chip, n)
        except ValueError as exc:  # e.g. more data-parallel replicas than sequences in the batch
            if not str(exc).startswith("no layout is possible"):
                raise  # the planner cannot cost this chip at all (_train_option says why)
            return n, None, f"no layout of {n:,} chips: {exc}", None
        seconds = None if best is None else obj.train_tokens / best.tokens_per_second
        if best is not None and seconds is not None and (deadline is None or seconds <= deadline):
            while n // 2 > missed:  # after a jump: fewer chips may do (freed memory can speed a step up)
                fewer, _ = _plan_best(obj, chip, n // 2)
                if fewer is None or (deadline is not None and obj.train_tokens / fewer.tokens_per_second > deadline):
                    break
                n, best = n // 2, fewer
            rule = ("the fewest chips (a power of two) that meet the deadline" if deadline is not None
                    else "the fewest chips (a power of two) the model fits on")
            # cost and energy (when the chip has a price or a power figure to rank by): more chips can take fewer
            # chip-hours (less recomputation)
            if (obj.criterion == "cost" and chip.price is not None) or (obj.criterion == "energy"
                                                                         and chip.power is not None):
                n, best, rule = _fewer_chip_hours(obj, chip, n, best, rule)
            return n, best, rule, None
        if n >= MAX_CHIPS:
            return n, best, f"the largest cluster sized ({MAX_CHIPS:,} chips)", need
        missed = n
        grow = 2 * n if seconds is None or deadline is None else max(2 * n, _pow2_at_least(n * seconds / deadline))
        n = min(grow, MAX_CHIPS)


def _train_option(obj: TrainingObjective, chip: Chip) -> Option:
    if obj.precision not in chip.flops:
        return Option(chip.name, chip.kind, feasible=False, reason="precision",
                      why=f"{chip.name} has no published dense {obj.precision} peak (it has {', '.join(chip.flops)})")
    try:
        n, best, rule, need = _size(obj, chip)
    except ValueError as exc:  # the planner cannot cost this chip (e.g. no interconnect figure)
        return Option(chip.name, chip.kind, feasible=False, reason="model", why=f"cannot be planned: {exc}")
    if best is None:
        if rule.startswith("no layout"):
            return Option(chip.name, chip.kind, feasible=False, reason="deadline", chips=n, why=rule)
        usable = PlanConfig.memory_fraction * chip.memory_bytes
        return Option(chip.name, chip.kind, feasible=False, reason="memory", chips=n,
                      why=f"no layout of {obj.shape.name} fits on {n:,} x {chip.memory.quoted}"
                          + (f": the smallest needs {need / 1e9:,.0f} GB per chip, {usable / 1e9:,.0f} GB usable"
                             if need else ""))
    steps = obj.train_tokens / best.tokens_per_step
    run = training_run(best.model_flops_per_step * steps, chip, chips=n, mfu=best.mfu, precision=obj.precision)
    cluster = cluster_for(chip, n)
    band = training_band(chip.name)
    lo, hi = (band.low, band.high) if band else (None, None)
    band_note = band.note if band else no_training_band_reason(chip.name)
    t = run.seconds
    time = Estimate(t, "s", None if lo is None else t * lo, None if hi is None else t * hi, band_note)
    cost = Estimate(run.usd, "USD", None if run.usd is None or lo is None else run.usd * lo,
                    None if run.usd is None or hi is None else run.usd * hi,
                    _price_note(chip) + ("; band: the time's" if band and run.usd is not None else ""))
    if chip.power is None:
        energy = Estimate(None, "J", note="no power figure in the catalogue")
    else:
        full = n * chip.power.value * t  # every chip at its maximum power for the whole run
        energy = Estimate(full * best.mfu, "J", full * best.mfu * (lo or 1.0), full * (hi or 1.0),
                          f"estimate: {n} x {chip.power.value:g} W x time x MFU {best.mfu:.0%}; high end at full "
                          "power" + (" and the time band's high end" if band else "") + "; not measured")
    figures = {"time": time, "cost": cost, "energy": energy}
    details = {"cluster": {"chips_per_node": cluster.chips_per_node, "nodes": cluster.nodes,
                           "network": cluster.network if cluster.nodes > 1 else None},
               "layout": best.to_dict(), "steps": steps, "mfu": best.mfu,
               "tokens_per_second": best.tokens_per_second, "chip_hours": run.chip_hours, "price": _price(chip),
               "sizing": rule, "planner_band_s": [best.band_s[0] * steps, best.band_s[1] * steps]}
    label = best.label
    days = t / 86400
    why = f"{n} x {chip.short_name} ({rule}): {label}; {days:,.1f} days at MFU {best.mfu:.0%}"
    if obj.deadline_s is not None and t > obj.deadline_s:
        return Option(chip.name, chip.kind, feasible=False, reason="deadline", chips=n, layout=label, figures=figures,
                      details=details, why=f"{why}; even {n:,} chips miss the {obj.deadline_days:g}-day deadline")
    if obj.budget_usd is not None:
        if run.usd is None:
            return Option(chip.name, chip.kind, feasible=False, reason="price", chips=n, layout=label, figures=figures,
                          details=details, why=f"{why}; no price in the catalogue, so the budget cannot be checked")
        if run.usd > obj.budget_usd:
            return Option(chip.name, chip.kind, feasible=False, reason="budget", chips=n, layout=label, figures=figures,
                          details=details, why=f"{why}; costs ${run.usd:,.0f}, over the ${obj.budget_usd:,.0f} budget")
    return Option(chip.name, chip.kind, feasible=True, reason=None, chips=n, layout=label, figures=figures, details=details,
                  why=why)


def _training_assumptions(obj: TrainingObjective) -> tuple[str, ...]:
    n = obj.shape.param_count()
    return (
        f"{obj.shape.name}: {n / 1e9:.2f}B parameters, {obj.train_tokens / 1e9:,.1f}B tokens "
        f"({obj.train_tokens / n:.1f} per parameter), {obj.global_batch} sequences of {obj.seq} tokens per step, "
        f"{obj.precision}, {obj.optimizer}.",
        f"Clusters of a power of two chips: nodes of {GPU_NODE} GPUs over InfiniBand NDR; a TPU slice up to its "
        "largest size, then slices over the data-center network. Layout, memory and step time from the planner "
        f"(aihw.planning), tensor parallelism up to {MAX_TP}.",
        "Chips per chip type: the fewest (a power of two) that meet the deadline, or that the model fits on "
        "with a budget alone; sorted by cost or energy, up to two doublings more when they take fewer chip-hours.",
        "Time and cost from aihw.scaling.training_run with the planner's model FLOPs and MFU; prices are the "
        "catalogue's dated snapshots, their kind stated (GPU prices are AWS capacity blocks, TPU prices Google "
        "Cloud on-demand: not the same kind of price).",
        "Energy: an estimate, chips x power (catalogue maximum) x time x MFU, which is power / peak x the model "
        "FLOPs, the same for every layout of one chip; the high end at full power for the whole run depends on the "
        "layout. Cooling, hosts and networks are not counted.",
        "Bands: the planner's out-of-sample errors on published runs on the same chip (aihw.choosing.bands); "
        "chips without such a run have none.",
    )


# --- serving ---------------------------------------------------------------------------------------------------

def _tps(obj: ServingObjective, chip: Chip) -> list[int]:
    m = obj.shape
    out, t = [], 1
    while t <= min(scale_up(chip), 64):
        if m.heads % t == 0 and m.n_kv_heads % t == 0 and (t == 1 or chip.interconnect is not None):
            out.append(t)
        t *= 2
    return out


def _serve_option(obj: ServingObjective, chip: Chip) -> Option:
    if COMPUTE_PRECISION[obj.precision] not in chip.flops:
        return Option(chip.name, chip.kind, feasible=False, reason="precision",
                      why=f"{chip.name} has no published dense {COMPUTE_PRECISION[obj.precision]} peak "
                          f"(it has {', '.join(chip.flops)})")
    fitted = False
    fastest: ServingEstimate | None = None  # batch 1 at the largest fitting TP: the best latency reachable
    candidates: list[tuple[int, int, ServingEstimate]] = []
    for tp in _tps(obj, chip):
        batch = 1
        while batch <= MAX_SERVING_BATCH:
            est = estimate(ServingConfig(obj.shape, chip=chip.name, precision=obj.precision,
                                         kv_precision=obj.kv_precision, batch=batch, context=obj.context,
                                         prompt=obj.prompt, tp=tp))
            if not est.fits:
                break
            fitted = True
            if batch == 1 and (fastest is None or est.decode_seconds_per_token < fastest.decode_seconds_per_token):
                fastest = est
            if est.prefill_seconds > obj.ttft_s or est.decode_seconds_per_token > obj.tpot_s:
                break  # both grow with the batch
            candidates.append((tp, batch, est))
            batch *= 2
    if not fitted:
        largest = _tps(obj, chip)[-1]
        limit = ("no interconnect figure in the catalogue, so no tensor parallelism" if chip.interconnect is None
                 else "tensor parallelism only, dividing the KV heads: the serving model has no pipeline stages")
        return Option(chip.name, chip.kind, feasible=False, reason="memory",
                      why=f"{obj.shape.name} in {obj.precision} does not fit on {largest} x {chip.memory.quoted} "
                          f"({limit})")
    if not candidates:
        assert fastest is not None
        return Option(chip.name, chip.kind, feasible=False, reason="latency", chips=fastest.tp,
                      why=f"at best (batch 1, TP{fastest.tp}) time to first token "
                          f"{fastest.prefill_seconds * 1e3:,.0f} ms and per output token "
                          f"{fastest.decode_seconds_per_token * 1e3:,.1f} ms, against targets "
                          f"{obj.ttft_s * 1e3:,.0f} ms and {obj.tpot_s * 1e3:,.1f} ms")
    price = chip.price.figure.value if chip.price else None
    power = chip.power.value if chip.power else None
    tokens_per_s = obj.rate * obj.output

    def fleet(c: tuple[int, int, ServingEstimate]) -> dict:
        tp, batch, est = c
        per_replica = batch / (est.prefill_seconds + obj.output * est.decode_seconds_per_token)  # requests/s
        replicas = max(1, math.ceil(obj.rate / per_replica - 1e-9))
        chips = replicas * tp
        return {"tp": tp, "batch": batch, "est": est, "replicas": replicas, "chips": chips,
                "load": obj.rate / (replicas * per_replica), "per_replica_rps": per_replica,
                "usd_per_hour": None if price is None else chips * price}

    fleets = [fleet(c) for c in candidates]

    def key(f: dict) -> tuple:
        energy = None if power is None else f["chips"] * power * f["load"]
        by = {"cost": f["usd_per_hour"] if price is not None else f["chips"],
              "time": f["est"].decode_seconds_per_token,
              "energy": energy if energy is not None else f["chips"]}[obj.criterion]
        return (by, f["chips"], f["est"].decode_seconds_per_token)

    best = min(fleets, key=key)
    est = best["est"]
    n = best["chips"]
    ttft = Estimate(est.prefill_seconds, "s", note=SERVING_NO_BAND + " (the whole batch's prompts in one pass)")
    tpot = Estimate(est.decode_seconds_per_token, "s", note=SERVING_NO_BAND + " (the last, longest decode step)")
    usd_h = best["usd_per_hour"]
    cost = Estimate(usd_h, "USD/h", note=_price_note(chip) + "; no band (the serving model's is unknown)")
    per_m = Estimate(None if usd_h is None else usd_h / 3600 / tokens_per_s * 1e6, "USD per million output tokens",
                     note="the fleet's price per hour over the output tokens the rate asks for")
    if power is None:
        energy = Estimate(None, "J per million output tokens", note="no power figure in the catalogue")
    else:
        full = n * power / tokens_per_s * 1e6
        energy = Estimate(full * best["load"], "J per million output tokens", full * best["load"], full,
                          f"estimate: {n} x {power:g} W x load {best['load']:.0%} per output token; high end at full "
                          "power; not measured")
    label = f"{best['replicas']} replica(s) of TP{best['tp']}, batch {best['batch']}"
    figures = {"ttft": ttft, "tpot": tpot, "cost": cost, "cost_per_million": per_m, "energy": energy}
    details = {"tp": best["tp"], "batch": best["batch"], "replicas": best["replicas"], "load": best["load"],
               "requests_per_second_per_replica": best["per_replica_rps"], "price": _price(chip),
               "serving": {k: v for k, v in est.to_dict().items() if k != "assumptions"}}
    why = (f"{n} x {chip.short_name}: {label}; first token {est.prefill_seconds * 1e3:,.0f} ms, "
           f"{est.decode_seconds_per_token * 1e3:,.1f} ms per output token, load {best['load']:.0%}")
    return Option(chip.name, chip.kind, feasible=True, reason=None, chips=n, layout=label, figures=figures, details=details,
                  why=why)


def _serving_assumptions(obj: ServingObjective) -> tuple[str, ...]:
    return (
        f"{obj.shape.name} in {obj.precision}: {obj.rate:g} requests/s of {obj.prompt} prompt + {obj.output} "
        f"output tokens; targets {obj.ttft_s * 1e3:g} ms to first token, {obj.tpot_s * 1e3:g} ms per output token.",
        "Each replica: tensor parallelism over chips of one node (dividing the heads and KV heads), batch a power "
        "of two; time to first token = the serving model's prefill of the whole batch's prompts in one pass, time "
        "per output token = its decode step at the full context (aihw.serving, roofline at datasheet peaks).",
        "A replica completes batch / (first token + output x per-token time) requests per second; enough replicas "
        "for the rate (Little's law).",
        "Cost: chips x the catalogue's dated price per hour, its kind stated. Energy: an estimate, chips x power x "
        "the load (share of the fleet's capacity the rate uses), per million output tokens; high end at full power.",
        "No bands: " + SERVING_NO_BAND.removeprefix("no band: ") + ".",
    )
