"""Small module-level workers for aihw.parallel.launch: a correct all-reduce and three ways a rank can go wrong.

Used by the tests and the docs. Each takes ``ctx: RankContext`` first, like every worker. Run the
all-reduce under torchrun with::

    torchrun --standalone --nproc-per-node 2 -m aihw.parallel._demo_workers
"""

from __future__ import annotations

import os
import sys
import time

import torch
import torch.distributed as dist

from aihw.parallel.launch import RankContext, run_under_torchrun


def expected_sum(world_size: int) -> float:
    """What all_reduce_sum returns on every rank: 1 + 2 + ... + world_size."""
    return world_size * (world_size + 1) / 2


def all_reduce_sum(ctx: RankContext) -> dict:
    """Each rank contributes rank + 1; after all_reduce(SUM) every rank holds expected_sum(world_size)."""
    value = torch.tensor([float(ctx.rank + 1)], device=ctx.device)
    dist.all_reduce(value, op=dist.ReduceOp.SUM)
    ctx.progress(f"summed on {ctx.world_size} ranks")  # reaches launch(on_progress=...) from rank 0 only
    return {"rank": ctx.rank, "world_size": ctx.world_size, "total": value.cpu().item(),
            "backend": ctx.backend, "threads": torch.get_num_threads(), "pid": os.getpid()}


def raise_on_rank(ctx: RankContext, bad_rank: int = 1, message: str = "deliberate failure") -> int:
    """``bad_rank`` raises RuntimeError(message); the others wait in a barrier it never reaches."""
    if ctx.rank == bad_rank:
        raise RuntimeError(f"{message} on rank {ctx.rank}")
    dist.barrier()
    return ctx.rank


def hang_on_rank(ctx: RankContext, hung_rank: int = 1, seconds: float = 3600.0) -> int:
    """``hung_rank`` sleeps for ``seconds`` (a stand-in for a deadlock); the others return at once."""
    if ctx.rank == hung_rank:
        time.sleep(seconds)
    return ctx.rank


def exit_on_rank(ctx: RankContext, bad_rank: int = 1, code: int = 3) -> int:
    """``bad_rank`` ends its process with os._exit(code), reporting nothing (like a crash)."""
    if ctx.rank == bad_rank:
        os._exit(code)
    dist.barrier()
    return ctx.rank


def _main() -> None:
    result = run_under_torchrun(all_reduce_sum)
    line = (f"rank {result['rank']}/{result['world_size']} backend={result['backend']} "
            f"total={result['total']:g} expected={expected_sum(result['world_size']):g}\n")
    sys.stdout.write(line)  # one write per line: ranks share the pipe, print() may split text and newline
    sys.stdout.flush()


if __name__ == "__main__":
    _main()
