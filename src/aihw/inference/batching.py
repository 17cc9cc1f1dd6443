"""Static vs continuous batching: one real serving loop over the small model, two admission policies.

Every step of the loop (Yu et al. 2022, Orca's iteration-level scheduling):

1. **admit** waiting requests that have arrived, up to ``max_batch`` running: *continuous* batching admits
   whenever a slot is free; *static* batching admits a new batch only when the previous one has finished entirely,
   so short requests wait for the longest one in their batch;
2. **prefill** each newly admitted request (its whole prompt in one pass) and take its first token;
3. **decode** one token for every running request in one batched step through the paged KV cache;
4. **retire** finished requests and give their blocks back.

Tokens are greedy, so each request's output must equal what the model produces for that request alone
(:func:`aihw.inference.model.generate`); the tests check it. Times are wall-clock on this machine; arrivals are in
steps of the loop, so both policies see the same trace.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Literal, get_args

import torch

from aihw._validate import require_choice, require_positive
from aihw.inference.model import GenGPT
from aihw.inference.paged import PagedKVCache

Policy = Literal["static", "continuous"]
POLICIES: tuple[str, ...] = get_args(Policy)


@dataclass(frozen=True)
class Request:
    """One request: prompt token ids, how many tokens to generate, and the loop step at which it arrives."""

    rid: int
    prompt: tuple[int, ...]
    new_tokens: int
    arrival: int = 0

    def __post_init__(self) -> None:
        if not self.prompt:
            raise ValueError(f"request {self.rid}: empty prompt")
        require_positive("new_tokens", self.new_tokens, integer=True)
        if self.arrival < 0:
            raise ValueError(f"request {self.rid}: arrival must be >= 0, got {self.arrival}")


@dataclass
class Finished:
    rid: int
    tokens: list[int]
    arrival_s: float  # wall time the request arrived (seconds from the start of the run)
    first_token_s: float
    done_s: float
    arrival_step: int  # loop step of arrival; steps are the noise-free clock
    done_step: int

    @property
    def latency_steps(self) -> int:
        return self.done_step - self.arrival_step + 1

    @property
    def latency_s(self) -> float:
        return self.done_s - self.arrival_s

    @property
    def ttft_s(self) -> float:
        return self.first_token_s - self.arrival_s


@dataclass
class RunResult:
    policy: str
    finished: dict[int, Finished] = field(default_factory=dict)
    seconds: float = 0.0
    steps: int = 0
    decode_rows: int = 0  # request-rows processed by decode steps (static batching also decodes finished rows)

    @property
    def tokens(self) -> int:
        return sum(len(f.tokens) for f in self.finished.values())

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds

    @property
    def mean_latency_s(self) -> float:
        return statistics.fmean(f.latency_s for f in self.finished.values())

    @property
    def p90_latency_s(self) -> float:
        lat = sorted(f.latency_s for f in self.finished.values())
        return lat[min(len(lat) - 1, math.ceil(0.9 * len(lat)) - 1)]

    @property
    def mean_latency_steps(self) -> float:
        return statistics.fmean(f.latency_steps for f in self.finished.values())

    @property
    def mean_ttft_s(self) -> float:
        return statistics.fmean(f.ttft_s for f in self.finished.values())


@torch.no_grad()
def serve(model: GenGPT, requests: list[Request], *, policy: Policy = "continuous", max_batch: int = 8,
          block_size: int = 16) -> RunResult:
    """Run the trace through the serving loop with ``policy``; returns every request's tokens and timings.

    Each step: admit waiting requests that have arrived (continuous: whenever a slot is free; static: only into
    an empty batch), prefill each new one alone, decode one token for every running request, retire the
    finished ones (a static batch leaves together)."""
    require_choice("policy", policy, POLICIES)
    require_positive("max_batch", max_batch, integer=True)
    if len({r.rid for r in requests}) != len(requests):
        raise ValueError("request ids must be unique")
    longest = max(len(r.prompt) + r.new_tokens for r in requests)
    if longest > model.cfg.seq_len:
        raise ValueError(f"a request needs {longest} positions; the model has {model.cfg.seq_len}")
    p = next(model.parameters())
    blocks = max_batch * math.ceil(longest / block_size) + max_batch  # enough for a full batch of the longest
    loop = _Loop(model, policy, max_batch, PagedKVCache(model.cfg, blocks, block_size, dtype=p.dtype,
                                                        device=p.device), p.device, requests)
    step = 0
    while loop.waiting or loop.running:
        now = loop.clock()
        loop.note_arrivals(step, now)
        if not loop.running and loop.waiting[0].arrival > step:
            step = loop.waiting[0].arrival  # idle: jump to the next arrival
            continue
        loop.prefill(loop.admit(step), now)
        loop.decode()
        loop.retire(step)
        step += 1
    loop.result.seconds, loop.result.steps = loop.clock(), step
    return loop.result


class _Loop:
    """The state of one serving run: waiting and running requests, the paged cache, and the timestamps."""

    def __init__(self, model: GenGPT, policy: Policy, max_batch: int, cache: PagedKVCache,
                 device: torch.device, requests: list[Request]) -> None:
        self.model, self.policy, self.max_batch, self.cache, self.device = model, policy, max_batch, cache, device
        self.waiting = sorted(requests, key=lambda r: (r.arrival, r.rid))
        self.info = {r.rid: r for r in requests}
        self.running: dict[int, list[int]] = {}  # rid -> generated tokens
        self.arrived_at: dict[int, float] = {}
        self.first: dict[int, float] = {}
        self.result = RunResult(policy)
        self.start = time.perf_counter()

    def clock(self) -> float:
        return time.perf_counter() - self.start

    def note_arrivals(self, step: int, now: float) -> None:
        for r in self.waiting:
            if r.arrival <= step and r.rid not in self.arrived_at:
                self.arrived_at[r.rid] = now

    def admit(self, step: int) -> list[Request]:
        """Requests that join the batch this step."""
        admitted: list[Request] = []
        if self.policy == "static" and self.running:
            return admitted
        while (self.waiting and self.waiting[0].arrival <= step
               and len(self.running) + len(admitted) < self.max_batch):
            admitted.append(self.waiting.pop(0))
        return admitted

    def prefill(self, admitted: list[Request], now: float) -> None:
        """Each new request's prompt in one pass, alone; its first token taken."""
        for r in admitted:
            self.arrived_at.setdefault(r.rid, now)
            self.cache.add(r.rid)
            ids = torch.tensor([r.prompt], device=self.device)
            positions = torch.arange(len(r.prompt), device=self.device)[None]
            logits = self.model.step(ids, positions, self.cache.bind([r.rid]))
            self.running[r.rid] = [int(logits[0, -1].argmax())]
            self.first[r.rid] = self.clock()

    def decode(self) -> None:
        """One token for every running request that still needs one (static: every row of the batch runs)."""
        pad = self.policy == "static" and _batch_unfinished(self.running, self.info)
        seq_len = self.model.cfg.seq_len
        rows = [rid for rid, out in self.running.items()
                if (len(out) < self.info[rid].new_tokens or pad)
                and len(self.info[rid].prompt) + len(out) < seq_len]
        if not rows:
            return
        last = torch.tensor([[self.running[rid][-1]] for rid in rows], device=self.device)
        pos = torch.tensor([[len(self.info[rid].prompt) + len(self.running[rid]) - 1] for rid in rows],
                           device=self.device)
        logits = self.model.step(last, pos, self.cache.bind(rows))
        for i, rid in enumerate(rows):
            self.running[rid].append(int(logits[i, -1].argmax()))
        self.result.decode_rows += len(rows)

    def retire(self, step: int) -> None:
        """Finished requests leave and free their cache blocks (a static batch leaves together)."""
        now = self.clock()
        if self.policy == "static" and _batch_unfinished(self.running, self.info):
            return
        done = [rid for rid, out in self.running.items() if len(out) >= self.info[rid].new_tokens]
        for rid in done:
            r = self.info[rid]
            self.result.finished[rid] = Finished(rid, self.running.pop(rid)[:r.new_tokens], self.arrived_at[rid],
                                                 self.first[rid], now, r.arrival, step)
            self.cache.release(rid)


def _batch_unfinished(running: dict[int, list[int]], info: dict[int, Request]) -> bool:
    return any(len(out) < info[rid].new_tokens for rid, out in running.items())


def make_trace(n: int, *, prompt_range: tuple[int, int] = (4, 24), new_range: tuple[int, int] = (4, 48),
               arrival_every: float = 0.0, vocab: int = 256, seed: int = 0) -> list[Request]:
    """``n`` requests with mixed prompt and output lengths (uniform in the ranges), arriving every
    ``arrival_every`` steps on average (0: all at once)."""
    require_positive("n", n, integer=True)
    g = torch.Generator().manual_seed(seed)

    def uniform(lo: int, hi: int) -> int:
        return int(torch.randint(lo, hi + 1, (1,), generator=g))

    out = []
    for i in range(n):
        prompt = tuple(int(t) for t in torch.randint(0, vocab, (uniform(*prompt_range),), generator=g))
        out.append(Request(i, prompt, uniform(*new_range), arrival=int(i * arrival_every)))
    return out
