"""Pipeline schedules without processes: when each stage computes, waits and idles (stdlib + numpy).

A schedule is, for every device, an ordered list of operations ``F(micro_batch, chunk)`` and
``B(micro_batch, chunk)``. The simulator starts each operation as early as its device is free and its input
has arrived (the forward of the previous stage, the backward of the next one, plus ``comm_s``). Three schedules:

* ``"gpipe"`` (all-forward-all-backward, AFAB; Huang et al. 2019): every micro-batch forward, then every
  backward. A stage holds the activations of all ``m`` micro-batches.
* ``"1f1b"`` (one-forward-one-backward, PipeDream-Flush; Narayanan et al. 2019, 2021): a warm-up of
  ``p - 1 - stage`` forwards, then alternate. Same bubble, but at most ``p - stage`` micro-batches in flight.
* ``"interleaved"`` (Narayanan et al. 2021): each device holds ``v`` chunks (virtual stages) of
  ``layers / (p v)`` layers; needs ``m`` to be a multiple of ``p``.
* ``"zb-h1"`` (Qi et al. 2023, arXiv:2401.10241): the backward pass split in two, ``B`` (the gradient of the
  input, which the previous stage waits for) and ``W`` (the gradient of the weights, which nobody waits for).
  The order is 1F1B's, except that stage ``s`` keeps up to ``s`` weight-gradient passes pending and runs them in
  what would have been its idle time at the end of the step. Every stage holds at most ``p`` micro-batches, as
  1F1B's first stage does; the bubble falls to ``(p - 1)(F + B - W)`` from 1F1B's ``(p - 1)(F + B + W)``
  (a third of it when the three passes take equal time). It is not in the widget's :data:`SCHEDULES`.

**Convention.** The *bubble fraction* here is the share of the step a device spends not computing:
``1 - busy / (p * step)``. With equal stages and free communication it is ``(p - 1) / (m + p - 1)`` for GPipe
and 1F1B and ``(p - 1) / (v m + p - 1)`` interleaved. Megatron-LM's papers quote the bubble *relative to the
ideal compute time* instead, ``(p - 1) / m`` (``(p - 1) / (v m)``); :func:`bubble_fraction` gives both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from aihw._validate import require_choice, require_in_range, require_positive

Schedule = Literal["gpipe", "1f1b", "interleaved"]
SCHEDULES: tuple[str, ...] = get_args(Schedule)
ZERO_BUBBLE: tuple[str, ...] = ("zb-h1",)  # schedules with the backward split into B and W
BubbleConvention = Literal["of_step", "of_ideal"]
CONVENTIONS: tuple[str, ...] = get_args(BubbleConvention)


@dataclass(frozen=True)
class TimelineEvent:
    """One interval on one device: ``kind`` is forward, backward, weight_grad (a ``W`` pass), send, recv or idle;
    times in seconds."""

    stage: int  # device (rank) index
    kind: str
    micro_batch: int  # -1 when the interval belongs to no micro-batch (idle)
    start: float
    end: float
    chunk: int = 0  # virtual stage on this device (interleaved schedule)

    @property
    def duration(self) -> float:
        return self.end - self.start


def _check_pm(p: int, m: int, v: int = 1) -> tuple[int, int, int]:
    """(p, m, v) as Python ints (numpy scalars converted), each checked to be a positive integer."""
    return (require_positive("p (pipeline stages)", p, integer=True),
            require_positive("m (micro-batches)", m, integer=True),
            require_positive("v (virtual stages per device)", v, integer=True))


def bubble_fraction(p: int, m: int, *, v: int = 1, convention: str = "of_step") -> float:
    """Closed-form bubble for equal stages and free communication.

    ``"of_step"``: idle share of the step, (p-1)/(v m + p - 1); ``"of_ideal"``: bubble time over the ideal
    compute time, (p-1)/(v m) as in Narayanan et al. 2021.
    """
    p, m, v = _check_pm(p, m, v)
    require_choice("convention", convention, CONVENTIONS)
    if convention == "of_ideal":
        return (p - 1) / (v * m)
    return (p - 1) / (v * m + p - 1)


def peak_in_flight(schedule: str, p: int, m: int, stage: int) -> int:
    """Micro-batches whose activations a stage holds at once: m (GPipe), min(p - stage, m) (1F1B)."""
    require_choice("schedule", schedule, ("gpipe", "1f1b"))
    _check_pm(p, m)
    require_in_range("stage", stage, 0, p - 1)
    return m if schedule == "gpipe" else min(p - stage, m)


def interleaved_in_flight_factor(p: int, v: int) -> float:
    """How many times more activations the first device holds with ``v`` interleaved chunks than plain 1F1B:
    1 + (p - 1) / (p v) (Narayanan et al. 2021, sec. 2.2.2); 1 without interleaving."""
    p, _, v = _check_pm(p, 1, v)
    return 1 + (p - 1) / (p * v) if v > 1 else 1.0


def schedule_order(schedule: str, p: int, m: int, stage: int, *, v: int = 1) -> list[tuple[str, int, int]]:
    """The operations device ``stage`` runs, in order: (``"F"``, ``"B"`` or, for zb-h1, ``"W"``, micro-batch, chunk)."""
    require_choice("schedule", schedule, SCHEDULES + ZERO_BUBBLE)
    _check_pm(p, m, v)
    require_in_range("stage", stage, 0, p - 1)
    if schedule != "interleaved" and v != 1:
        raise ValueError(f"v={v} virtual stages need schedule 'interleaved'; {schedule!r} uses v=1")
    if schedule == "zb-h1":
        return _zb_h1_order(p, m, stage)
    if schedule == "gpipe":
        return [("F", i, 0) for i in range(m)] + [("B", i, 0) for i in range(m)]
    if schedule == "1f1b":
        forwards = [("F", i, 0) for i in range(m)]
        backwards = [("B", i, 0) for i in range(m)]
        warmup = min(p - 1 - stage, m)
    else:
        if m % p:
            raise ValueError(f"the interleaved schedule needs m to be a multiple of p; got m={m}, p={p}")
        # Megatron-LM order: groups of p micro-batches walk through the chunks (backward: chunks reversed).
        steps = range(m * v)
        forwards = [("F", k // (p * v) * p + k % p, (k // p) % v) for k in steps]
        backwards = [("B", k // (p * v) * p + k % p, v - 1 - (k // p) % v) for k in steps]
        warmup = min((p - 1 - stage) * 2 + (v - 1) * p, m * v)
    order = forwards[:warmup]
    for i in range(len(forwards) - warmup):
        order += [forwards[warmup + i], backwards[i]]
    return order + backwards[len(forwards) - warmup:]


def _zb_h1_order(p: int, m: int, stage: int) -> list[tuple[str, int, int]]:
    """1F1B's order of F and B; each B's W follows once more than ``stage`` of them are pending; the rest at the end."""
    warmup = min(p - 1 - stage, m)
    order = [("F", i, 0) for i in range(warmup)]
    pending: list[int] = []
    for b in range(m):
        if warmup + b < m:
            order.append(("F", warmup + b, 0))
        order.append(("B", b, 0))
        pending.append(b)
        if len(pending) > stage:
            order.append(("W", pending.pop(0), 0))
    return order + [("W", b, 0) for b in pending]


@dataclass(frozen=True)
class SimulatedRun:
    """A simulated step: events per device, its length and its bubble (this module's convention)."""

    schedule: str
    p: int
    m: int
    v: int
    events: tuple[TimelineEvent, ...]
    step_s: float
    peak_in_flight: tuple[int, ...]  # per device, in chunk-micro-batches (activation sets) held at once

    @property
    def busy_s(self) -> list[float]:
        """Seconds each device computes."""
        busy = [0.0] * self.p
        for e in self.events:
            if e.kind in ("forward", "backward", "weight_grad"):
                busy[e.stage] += e.duration
        return busy

    @property
    def bubble(self) -> float:
        """Idle share of the step, averaged over devices: 1 - busy / (p * step)."""
        return float(1.0 - sum(self.busy_s) / (self.p * self.step_s))


def _per_stage(name: str, value: float | Sequence[float], p: int) -> list[float]:
    problem = ValueError(f"{name} must be one non-negative time or one per stage ({p}), got {value!r}")
    try:
        values = [float(value)] * p if isinstance(value, int | float) else [float(x) for x in value]
    except (TypeError, ValueError, OverflowError):
        raise problem from None
    if len(values) != p or not all(math.isfinite(x) and x >= 0 for x in values):
        raise problem
    return values


def simulate(schedule: str, p: int, m: int, *, v: int = 1, forward_s: float | Sequence[float] = 1.0,
             backward_s: float | Sequence[float] = 2.0, comm_s: float = 0.0,
             weight_grad_share: float = 0.5) -> SimulatedRun:
    """Time one step of ``schedule`` on ``p`` devices with ``m`` micro-batches (``v`` chunks per device).

    ``forward_s``/``backward_s``: seconds one micro-batch takes through a whole device (one value or one per
    device); a chunk takes 1/v of it. ``comm_s``: seconds to move one activation or gradient between devices.
    ``weight_grad_share``: for zb-h1, the share of ``backward_s`` that is the weight-gradient pass ``W`` (the
    two matmuls of a linear layer's backward cost the same, so 0.5 by default); the rest is ``B``.
    """
    _check_pm(p, m, v)
    fwd = [t / v for t in _per_stage("forward_s", forward_s, p)]
    bwd = [t / v for t in _per_stage("backward_s", backward_s, p)]
    require_in_range("comm_s", comm_s, 0, float("inf"), high_inclusive=False)
    require_in_range("weight_grad_share", weight_grad_share, 0, 1)
    split = schedule in ZERO_BUBBLE
    duration = {"F": fwd, "B": [t * (1 - weight_grad_share) for t in bwd] if split else bwd,
                "W": [t * weight_grad_share for t in bwd]}
    kinds = {"F": "forward", "B": "backward", "W": "weight_grad"}
    queues = [schedule_order(schedule, p, m, s, v=v) for s in range(p)]
    last = p * v - 1  # last virtual stage; virtual stage of (device s, chunk c) is c * p + s
    done: dict[tuple[str, int, int], float] = {}
    free, heads, events = [0.0] * p, [0] * p, []
    in_flight, peak = [0] * p, [0] * p
    while any(heads[s] < len(queues[s]) for s in range(p)):
        progressed = False
        for s in range(p):
            while heads[s] < len(queues[s]):
                kind, mb, chunk = queues[s][heads[s]]
                vs = chunk * p + s
                if kind == "F":
                    dep = ("F", mb, vs - 1) if vs > 0 else None
                elif kind == "W":
                    dep = ("B", mb, vs)  # same device, earlier in its order
                else:
                    dep = ("B", mb, vs + 1) if vs < last else ("F", mb, vs)
                if dep is not None and dep not in done:
                    break
                ready = 0.0 if dep is None else done[dep] + (comm_s if dep[0] == kind else 0.0)
                start = max(free[s], ready)
                end = start + duration[kind][s]
                done[(kind, mb, vs)] = free[s] = end
                events.append(TimelineEvent(s, kinds[kind], mb, start, end, chunk))
                # a micro-batch's activations are freed by its last backward pass: W when split, B otherwise
                in_flight[s] += 1 if kind == "F" else -1 if kind == ("W" if split else "B") else 0
                peak[s] = max(peak[s], in_flight[s])
                heads[s] += 1
                progressed = True
        if not progressed:
            raise RuntimeError(f"schedule {schedule!r} deadlocks for p={p}, m={m}, v={v}")
    step = max(free)
    if not math.isfinite(step):
        raise ValueError(f"forward_s={forward_s!r}, backward_s={backward_s!r}, comm_s={comm_s!r}: the step time "
                         f"overflows a float; give times in seconds of a sensible size")
    return SimulatedRun(schedule, p, m, v, tuple(events), step, tuple(peak))


def idle_events(events: Sequence[TimelineEvent], p: int, step_s: float) -> list[TimelineEvent]:
    """The gaps between a device's events within [0, step_s], as ``idle`` events."""
    gaps = []
    for s in range(p):
        t = 0.0
        for e in sorted((e for e in events if e.stage == s), key=lambda e: e.start):
            if e.start > t:
                gaps.append(TimelineEvent(s, "idle", -1, t, e.start))
            t = max(t, e.end)
        if step_s > t:
            gaps.append(TimelineEvent(s, "idle", -1, t, step_s))
    return gaps
