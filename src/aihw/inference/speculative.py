"""Speculative decoding, greedy (Leviathan, Kalman and Matias 2023; Chen et al. 2023).

A small *draft* model proposes ``k`` tokens one by one (cheap steps); the large *target* model checks all of them
in **one** forward pass over the ``k + 1`` positions (one weight read, as expensive as one decode step while
decode is bandwidth-bound). The target's own greedy token at each position decides: proposals are accepted up to
the first disagreement, and the target's token there (or after the last proposal, a bonus token) is appended.
So every round yields between 1 and ``k + 1`` tokens, and the output is exactly the target's greedy output.

If each proposal is accepted with probability ``alpha`` independently, a round yields
``(1 - alpha**(k + 1)) / (1 - alpha)`` tokens on average (a truncated geometric series; the paper's eq. 1), and
with a draft step costing ``c`` target steps the expected speed-up over plain decoding is
``(1 - alpha**(k + 1)) / ((1 - alpha) (k c + 1))`` (the paper's Theorem 3.8). :func:`speculative_generate`
returns the counts needed to compare a measured run with both formulas.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from aihw._validate import require_positive
from aihw.inference.model import GenGPT, KVCache


def expected_tokens_per_round(alpha: float, k: int) -> float:
    """(1 - alpha^(k+1)) / (1 - alpha): mean tokens a round yields when each proposal is accepted w.p. alpha."""
    if alpha >= 1:
        return float(k + 1)
    return (1 - alpha ** (k + 1)) / (1 - alpha)


def expected_speedup(alpha: float, k: int, c: float) -> float:
    """Leviathan et al.'s walltime improvement: tokens per round / (k draft steps of cost c + one target step)."""
    return expected_tokens_per_round(alpha, k) / (k * c + 1)


@dataclass(frozen=True)
class SpecResult:
    tokens: torch.Tensor  # (1, prompt + new_tokens): prompt and continuation
    rounds: int  # target verification passes
    proposed: int  # draft tokens proposed
    accepted: int  # of those, accepted
    rejections: int  # rounds that ended at a disagreement (the others accepted all k)
    seconds: float
    prompt_len: int

    @property
    def alpha(self) -> float:
        """Per-token acceptance probability, maximum-likelihood under the geometric model:
        accepted / (accepted + rejections)."""
        total = self.accepted + self.rejections
        return self.accepted / total if total else 1.0

    @property
    def tokens_per_round(self) -> float:
        return (self.tokens.shape[1] - self.prompt_len) / self.rounds


def _feed(model: GenGPT, cache: KVCache, seq: list[int], extra: list[int], device) -> torch.Tensor:
    """Run the tokens of ``seq + extra`` the cache does not hold yet; return their logits (T, vocab)."""
    new = (seq + extra)[cache.length:]
    start = cache.length
    ids = torch.tensor([new], device=device)
    pos = torch.arange(start, start + len(new), device=device)[None]
    return model.step(ids, pos, cache)[0]


@torch.no_grad()
def speculative_generate(target: GenGPT, draft: GenGPT, prompt: torch.Tensor, new_tokens: int, *,
                         k: int = 4) -> SpecResult:
    """Greedy speculative decoding of one sequence; equals ``generate(target, prompt, new_tokens)``."""
    require_positive("new_tokens", new_tokens, integer=True)
    require_positive("k", k, integer=True)
    if prompt.dim() != 2 or prompt.shape[0] != 1:
        raise ValueError(f"prompt must be (1, tokens), got {tuple(prompt.shape)}")
    if target.cfg.vocab != draft.cfg.vocab:
        raise ValueError(f"draft vocabulary {draft.cfg.vocab} differs from the target's {target.cfg.vocab}")
    if target.cfg.window is not None or draft.cfg.window is not None:
        raise ValueError("speculative decoding here needs full attention (a window's ring buffer cannot roll back)")
    t0 = prompt.shape[1]
    total = t0 + new_tokens + k + 1
    limit = min(target.cfg.seq_len, draft.cfg.seq_len)
    if t0 + new_tokens > limit:
        raise ValueError(f"prompt + new_tokens = {t0 + new_tokens} exceeds the models' {limit} positions")
    device = prompt.device
    tcache, dcache = target.new_cache(1, total), draft.new_cache(1, total)
    seq = prompt[0].tolist()
    rounds = proposed = accepted = rejections = 0
    start = time.perf_counter()
    while len(seq) - t0 < new_tokens:
        room = min(k, new_tokens - (len(seq) - t0) - 1, limit - len(seq) - 1)
        proposals: list[int] = []
        for _ in range(max(room, 0)):  # draft: k cheap steps
            logits = _feed(draft, dcache, seq, proposals, device)
            proposals.append(int(logits[-1].argmax()))
        # target: one pass over the last accepted token and the proposals
        logits = _feed(target, tcache, seq, proposals, device)
        verdict = logits[-(len(proposals) + 1):].argmax(-1).tolist()
        n_ok = 0
        while n_ok < len(proposals) and proposals[n_ok] == verdict[n_ok]:
            n_ok += 1
        seq += proposals[:n_ok] + [verdict[n_ok]]
        rounds += 1
        proposed += len(proposals)
        accepted += n_ok
        rejections += n_ok < len(proposals)
        tcache.truncate(len(seq) - 1)  # forget rejected proposals; the newest token is not cached yet
        dcache.truncate(min(dcache.length, len(seq) - 1))
    seconds = time.perf_counter() - start
    out = torch.tensor([seq[:t0 + new_tokens]], device=device)
    return SpecResult(out, rounds, proposed, accepted, rejections, seconds, t0)
