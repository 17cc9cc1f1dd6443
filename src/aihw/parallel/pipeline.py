"""Pipeline parallelism as real processes: GPipe (all-forward-all-backward) and 1F1B over :mod:`aihw.parallel.p2p`.

Each rank holds one :class:`~aihw.parallel.layer_parallel.Stage` of TinyGPT. A batch of ``m * micro_batch_size``
sequences is cut into ``m`` micro-batches; the two schedules below differ only in the *order* in which a rank
calls ``forward(i)`` and ``backward(i)`` (picotron's layout). The loss of each micro-batch is divided by ``m``,
so the accumulated gradients equal the unsplit model's on the whole batch.

Every rank records what it did and when (``time.perf_counter``, one clock for all processes on a machine):
``forward``, ``backward``, ``send`` (posting an asynchronous send) and ``recv``. A blocking receive is split
after the run, using the sender's clock reading, into ``idle`` (waiting for the peer to send) and ``recv``
(the transfer itself). Each forward also counts the bytes autograd saves for backward, so the peak of stored
activations per stage is measured, not assumed. Each forward and backward also reads the thread's CPU clock
(``time.thread_time``; one intra-op thread per rank, so the compute runs on that thread): CPU seconds over wall
seconds below 1 mean the rank waited for a core (other programs, or more ranks than cores).

Bubble convention: see :mod:`aihw.layout.schedules` (idle share of the step, theory ``(p - 1) / (m + p - 1)``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

from aihw._validate import require_choice, require_positive
from aihw.layout.schedules import TimelineEvent, bubble_fraction, idle_events, peak_in_flight, simulate
from aihw.models.tinygpt import TinyGPTConfig, random_batch
from aihw.parallel import p2p
from aihw.parallel.launch import LaunchConfig, launch
from aihw.parallel.layer_parallel import build_stages, split_layers, stage_grads, tie_gradients
from aihw.runtime.tensors import SavedTensorCounter, grad_of

Schedule = Literal["gpipe", "1f1b"]
SCHEDULES: tuple[str, ...] = get_args(Schedule)


@dataclass(frozen=True)
class PipelineConfig:
    """One pipelined training step of TinyGPT on as many stages as ranks."""

    model: TinyGPTConfig = TinyGPTConfig(width=64, depth=6)  # stages may be uneven (layer_parallel.split_layers)
    micro_batches: int = 4  # m
    micro_batch_size: int = 4  # sequences per micro-batch
    schedule: str = "1f1b"  # "gpipe" (all forward, all backward) or "1f1b"
    steps: int = 3  # steps run; the fastest is recorded (the first warms up; others may be disturbed)
    seed: int = 0  # model initialisation and data

    def __post_init__(self) -> None:
        require_positive("micro_batches (m)", self.micro_batches, integer=True)
        require_positive("micro_batch_size", self.micro_batch_size, integer=True)
        require_positive("steps", self.steps, integer=True)
        require_choice("schedule", self.schedule, SCHEDULES)

    @property
    def batch(self) -> int:
        return self.micro_batches * self.micro_batch_size


class StageRunner:
    """Runs forward/backward of micro-batch ``i`` on one stage, with its receives and sends, and logs them."""

    def __init__(self, stage, *, rank: int, world_size: int, cfg: PipelineConfig, origin: float) -> None:
        self.stage, self.rank, self.world, self.cfg, self.origin = stage, rank, world_size, cfg, origin
        idx, targets = random_batch(cfg.model, cfg.batch, seed=cfg.seed)
        self.idx, self.targets = idx.chunk(cfg.micro_batches), targets.chunk(cfg.micro_batches)
        self.shape = (cfg.micro_batch_size, cfg.model.seq_len, cfg.model.width)
        self.inputs: dict[int, torch.Tensor] = {}  # micro-batch -> the stage's input (kept for backward)
        self.outputs: dict[int, torch.Tensor] = {}
        self.saved: dict[int, int] = {}  # micro-batch -> bytes autograd saved in its forward
        self.events: list[TimelineEvent] = []
        self.transfers: list[p2p.Transfer] = []
        self.pending: list[p2p.PendingSend] = []
        self.loss, self.live_bytes, self.peak_bytes, self.peak_in_flight = 0.0, 0, 0, 0
        self.cpu_s = 0.0  # thread CPU seconds spent in forward and backward

    def _log(self, kind: str, i: int, start: float, end: float) -> None:
        self.events.append(TimelineEvent(self.rank, kind, i, start - self.origin, end - self.origin))

    def forward(self, i: int) -> None:
        if self.rank == 0:
            x = self.idx[i]
        else:
            x, record = p2p.recv_forward(self.shape, rank=self.rank, micro_batch=i)
            self.transfers.append(record)
        last = self.rank == self.world - 1
        start, cpu = time.perf_counter(), time.thread_time()
        with SavedTensorCounter(self.stage) as counter:
            y = self.stage(x, self.targets[i] if last else None)
            if last:
                y = y / self.cfg.micro_batches  # mean over the whole batch = mean of micro-batch means / m
        self.cpu_s += time.thread_time() - cpu
        self._log("forward", i, start, time.perf_counter())
        self.saved[i] = counter.bytes
        self.live_bytes += counter.bytes
        self.peak_bytes = max(self.peak_bytes, self.live_bytes)
        self.peak_in_flight = max(self.peak_in_flight, len(self.outputs) + 1)
        if last:
            self.loss += float(y.detach())
        else:
            self._send(*p2p.send_forward(y, rank=self.rank, micro_batch=i))
        self.inputs[i], self.outputs[i] = x, y

    def backward(self, i: int) -> None:
        grad = None  # the last stage starts from its (scalar) loss
        if self.rank < self.world - 1:
            grad, record = p2p.recv_backward(self.shape, rank=self.rank, micro_batch=i)
            self.transfers.append(record)
        start, cpu = time.perf_counter(), time.thread_time()
        torch.autograd.backward(self.outputs.pop(i), grad)
        self.cpu_s += time.thread_time() - cpu
        self._log("backward", i, start, time.perf_counter())
        self.live_bytes -= self.saved[i]
        x = self.inputs.pop(i)
        if self.rank > 0:
            self._send(*p2p.send_backward(grad_of(x), rank=self.rank, micro_batch=i))

    def _send(self, pending: p2p.PendingSend, record: p2p.Transfer) -> None:
        self.pending.append(pending)
        self.transfers.append(record)
        self._log("send", record.micro_batch, record.start, record.end)


def all_forward_all_backward(runner: StageRunner, m: int) -> None:
    """GPipe: every micro-batch forward, then every backward (in the same order)."""
    for i in range(m):
        runner.forward(i)
    for i in range(m):
        runner.backward(i)


def one_forward_one_backward(runner: StageRunner, m: int) -> None:
    """1F1B: ``p - 1 - rank`` warm-up forwards, then alternate one forward and one backward, then drain."""
    warmup = min(runner.world - 1 - runner.rank, m)
    for i in range(warmup):
        runner.forward(i)
    for i in range(m - warmup):
        runner.forward(warmup + i)
        runner.backward(i)
    for i in range(m - warmup, m):
        runner.backward(i)


SCHEDULE_FUNCTIONS = {"gpipe": all_forward_all_backward, "1f1b": one_forward_one_backward}


@dataclass(frozen=True)
class StageRun:
    """What one rank measured in the recorded step. Times in seconds from the step's start, sizes in bytes."""

    rank: int
    config: PipelineConfig
    events: tuple[TimelineEvent, ...]  # forward, backward, send
    transfers: tuple[p2p.Transfer, ...]  # absolute perf_counter times
    origin: float  # perf_counter reading at the step's start (after a barrier)
    loss: float | None  # last stage only: loss of the whole batch
    peak_in_flight: int  # most micro-batches whose activations were held at once
    peak_saved_bytes: int  # most bytes autograd held for backward at once
    saved_bytes_per_micro_batch: int
    grads: dict  # name -> tensor, unsplit-model names
    compute_cpu_s: float = 0.0  # thread CPU seconds in forward + backward (wall seconds: the events)


def _one_step(stage, ctx, cfg: PipelineConfig) -> StageRunner:
    stage.zero_grad(set_to_none=True)
    dist.barrier()
    runner = StageRunner(stage, rank=ctx.rank, world_size=ctx.world_size, cfg=cfg, origin=time.perf_counter())
    SCHEDULE_FUNCTIONS[cfg.schedule](runner, cfg.micro_batches)
    p2p.wait_all(runner.pending)
    return runner


def _global_step_length(runner: StageRunner) -> float:
    """Seconds from the earliest start to the latest end over all ranks (same value on every rank)."""
    end = max(max(e.end for e in runner.events) + runner.origin, max(t.end for t in runner.transfers)
              if runner.transfers else 0.0)
    bounds = torch.tensor([-runner.origin, end], dtype=torch.float64)
    dist.all_reduce(bounds, op=dist.ReduceOp.MAX)
    return float(bounds[0] + bounds[1])


def pipeline_worker(ctx, configs: Sequence[PipelineConfig]) -> list[StageRun]:
    """Run each config in turn (one launch, many experiments); return this rank's :class:`StageRun` list."""
    runs = []
    for cfg in configs:
        split_layers(cfg.model.depth, ctx.world_size)  # clear error before any communication
        stage = build_stages(cfg.model, ctx.world_size, seed=cfg.seed)[ctx.rank]
        runner, best = None, float("inf")
        for _ in range(cfg.steps):  # keep the fastest step (all ranks agree on which): least disturbed
            candidate = _one_step(stage, ctx, cfg)
            length = _global_step_length(candidate)
            if length < best:
                runner, best = candidate, length
        tie_gradients(stage, world_size=ctx.world_size)
        last = ctx.rank == ctx.world_size - 1
        assert runner is not None  # cfg.steps >= 1
        runs.append(StageRun(ctx.rank, cfg, tuple(runner.events), tuple(runner.transfers), runner.origin,
                             runner.loss if last else None, runner.peak_in_flight, runner.peak_bytes,
                             runner.saved[0], stage_grads(stage), runner.cpu_s))
    return runs


def run_pipeline(configs: PipelineConfig | Sequence[PipelineConfig], *, stages: int = 2,
                 timeout_s: float = 120.0) -> list[list[StageRun]]:
    """Launch ``stages`` ranks (gloo on the CPU, one thread each) and run the configs; ``[config][rank]``."""
    configs = [configs] if isinstance(configs, PipelineConfig) else list(configs)
    for cfg in configs:
        split_layers(cfg.model.depth, stages)
    per_rank = launch(pipeline_worker, configs,
                      config=LaunchConfig(world_size=stages, backend="gloo", timeout_s=timeout_s))
    return [[per_rank[r][c] for r in range(stages)] for c in range(len(configs))]


def timeline(runs: Sequence[StageRun]) -> tuple[list[TimelineEvent], float]:
    """All ranks' events on one time axis (0 = earliest start), receives split into idle + recv; step length.

    The remaining gaps (Python between operations) are added as ``idle`` too.
    """
    origin = min(r.origin for r in runs)
    sends = {(r.rank, t.peer, t.tag, t.micro_batch): t for r in runs for t in r.transfers if t.kind == "send"}
    events = []
    for r in runs:
        shift = r.origin - origin
        events += [TimelineEvent(e.stage, e.kind, e.micro_batch, e.start + shift, e.end + shift) for e in r.events]
        for t in r.transfers:
            if t.kind != "recv":
                continue
            sent = sends[(t.peer, r.rank, t.tag, t.micro_batch)]
            arrival = min(max(t.start, sent.start), t.end)
            if arrival > t.start:
                events.append(TimelineEvent(r.rank, "idle", t.micro_batch, t.start - origin, arrival - origin))
            events.append(TimelineEvent(r.rank, "recv", t.micro_batch, arrival - origin, t.end - origin))
    step = max(e.end for e in events)
    events += idle_events(events, len(runs), step)
    return sorted(events, key=lambda e: (e.stage, e.start)), step


def measured_bubble(runs: Sequence[StageRun]) -> float:
    """Idle share of the step averaged over ranks: 1 - compute seconds / (p x step seconds)."""
    events, step = timeline(runs)
    busy = sum(e.duration for e in events if e.kind in ("forward", "backward"))
    return 1.0 - busy / (len(runs) * step)


def stage_times(runs: Sequence[StageRun]) -> tuple[np.ndarray, np.ndarray]:
    """Mean forward and backward seconds per micro-batch on each rank (to feed the simulator)."""
    fwd = [np.mean([e.duration for e in r.events if e.kind == "forward"]) for r in runs]
    bwd = [np.mean([e.duration for e in r.events if e.kind == "backward"]) for r in runs]
    return np.array(fwd), np.array(bwd)


def summary(runs: Sequence[StageRun]) -> dict:
    """Measured bubble next to the closed form and the simulator fed with the measured stage times;
    peak stored activations per stage, measured and predicted.

    Also ``imbalance`` (slowest stage's forward + backward over the mean: the closed form assumes 1) and
    ``cpu_per_wall`` (CPU seconds over wall seconds of all compute: below 1, ranks waited for a core) and
    ``bubble_simulated_cpu`` (the simulator fed with CPU seconds: each stage on a core of its own).
    """
    cfg, p = runs[0].config, len(runs)
    m = cfg.micro_batches
    fwd, bwd = stage_times(runs)
    sim = simulate(cfg.schedule, p, m, forward_s=fwd.tolist(), backward_s=bwd.tolist())
    predicted = [peak_in_flight(cfg.schedule, p, m, r.rank) for r in runs]
    per_stage = fwd + bwd
    cpu_share = np.array([r.compute_cpu_s for r in runs]) / (m * per_stage)  # per rank, CPU / wall
    own_core = simulate(cfg.schedule, p, m, forward_s=fwd * cpu_share, backward_s=bwd * cpu_share)
    return {"imbalance": float(per_stage.max() / per_stage.mean()),
            "cpu_per_wall": float(np.sum(cpu_share * per_stage) / per_stage.sum()),
            "bubble_simulated_cpu": own_core.bubble,
            "schedule": cfg.schedule, "p": p, "m": m, "step_s": timeline(runs)[1],
            "bubble_measured": measured_bubble(runs), "bubble_theory": bubble_fraction(p, m),
            "bubble_simulated": sim.bubble, "forward_s": fwd.tolist(), "backward_s": bwd.tolist(),
            "peak_in_flight_measured": [r.peak_in_flight for r in runs], "peak_in_flight_predicted": predicted,
            "peak_saved_bytes_measured": [r.peak_saved_bytes for r in runs],
            "peak_saved_bytes_predicted": [n * r.saved_bytes_per_micro_batch for n, r in zip(predicted, runs,
                                                                                             strict=True)]}


def merged_grads(runs: Sequence[StageRun]) -> dict:
    """Gradients of all stages by unsplit-model name (the tied matrix appears once, as the embedding)."""
    out: dict = {}
    for r in runs:
        out.update(r.grads)
    return out


def torch_pipelining_worker(ctx, cfg: PipelineConfig) -> dict:
    """The same stages under ``torch.distributed.pipelining`` (ScheduleGPipe / Schedule1F1B), for comparison.

    Returns this rank's step seconds (fastest of ``cfg.steps``), the loss (last rank) and gradients by name.
    """
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

    stage = build_stages(cfg.model, ctx.world_size, seed=cfg.seed)[ctx.rank]
    shape = (cfg.micro_batch_size, cfg.model.seq_len, cfg.model.width)
    example = torch.zeros(shape) if ctx.rank > 0 else torch.zeros(shape[:2], dtype=torch.long)
    pipe_stage = PipelineStage(stage, ctx.rank, ctx.world_size, ctx.device, input_args=(example,))

    def loss_fn(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))

    schedule_class = ScheduleGPipe if cfg.schedule == "gpipe" else Schedule1F1B
    schedule = schedule_class(pipe_stage, cfg.micro_batches, loss_fn=loss_fn)  # scales grads by 1/m
    idx, targets = random_batch(cfg.model, cfg.batch, seed=cfg.seed)
    last = ctx.rank == ctx.world_size - 1
    best, losses = float("inf"), list[torch.Tensor]()
    for _ in range(cfg.steps):
        stage.zero_grad(set_to_none=True)
        losses = []
        dist.barrier()
        start = time.perf_counter()
        if ctx.rank == 0:
            schedule.step(idx)
        elif last:
            schedule.step(target=targets, losses=losses)
        else:
            schedule.step()
        best = min(best, time.perf_counter() - start)
    tie_gradients(stage, world_size=ctx.world_size)
    loss = float(torch.stack(losses).detach().mean()) if last else None
    return {"rank": ctx.rank, "step_s": best, "loss": loss, "grads": stage_grads(stage)}
