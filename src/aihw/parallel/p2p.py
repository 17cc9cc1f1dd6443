"""Point-to-point helpers: move activations forward and gradients backward between pipeline stages.

Kept apart from any schedule (as in picotron): a schedule only says *when* to call these. Every call returns
a :class:`Transfer` record (peer, bytes, start and end time from ``time.perf_counter``, which on Linux is one
monotonic clock shared by all processes of the machine), so a schedule can draw its timeline.

Sends are asynchronous (``isend``): a stage never blocks on its own send, so no schedule can deadlock on two
stages sending to each other at once; the caller keeps the returned handle and waits for it before the step
ends (:func:`wait_all`). Receives block, and the time they block includes waiting for the peer to send.

That reasoning holds for gloo, which is what the pipeline runs on (:func:`aihw.parallel.pipeline.run_pipeline`
launches with ``backend="gloo"``, CPU tensors). Under NCCL a lone send can wait on the pair's stream until the
peer's receive starts, so in 1F1B two neighbours that each send before they receive could wait for ever; these
helpers refuse an NCCL group rather than risk it (the batched exchanges of :mod:`aihw.parallel.collectives`
are the NCCL-safe form).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.distributed as dist

from aihw.runtime.tensors import tensor_bytes


@dataclass(frozen=True)
class Transfer:
    """One send or receive seen from this rank. Times in seconds (perf_counter), size in bytes."""

    kind: str  # "send" or "recv"
    peer: int  # the other rank
    tag: str  # "activation" or "gradient"
    micro_batch: int
    nbytes: int
    start: float
    end: float


@dataclass(frozen=True)
class PendingSend:
    """A posted send: its handle and the buffer, which must stay alive until ``work.wait()`` returns."""

    work: dist.Work
    payload: torch.Tensor


def _require_gloo() -> None:
    backend = dist.get_backend()
    if backend != "gloo":
        raise ValueError(f"the pipeline's send/recv helpers run on gloo only, not {backend!r}: a lone send before a "
                         "receive can wait for ever under NCCL; launch the pipeline with backend='gloo'")


def send(tensor: torch.Tensor, *, dst: int, tag: str, micro_batch: int) -> tuple[PendingSend, Transfer]:
    """Post an asynchronous send of ``tensor`` to rank ``dst``; keep the handle (and the tensor) alive."""
    _require_gloo()
    payload = tensor.detach().contiguous()
    start = time.perf_counter()
    work = dist.isend(payload, dst)
    end = time.perf_counter()
    assert work is not None  # point-to-point calls always return a handle
    return PendingSend(work, payload), Transfer("send", dst, tag, micro_batch, tensor_bytes(payload), start, end)


def recv(shape: Sequence[int], *, src: int, tag: str, micro_batch: int, dtype: torch.dtype = torch.float32,
         device: torch.device | str = "cpu") -> tuple[torch.Tensor, Transfer]:
    """Block until a tensor of ``shape`` arrives from rank ``src``; return it and the record."""
    _require_gloo()
    buffer = torch.empty(tuple(shape), dtype=dtype, device=device)
    start = time.perf_counter()
    dist.recv(buffer, src)
    end = time.perf_counter()
    return buffer, Transfer("recv", src, tag, micro_batch, tensor_bytes(buffer), start, end)


def send_forward(activation: torch.Tensor, *, rank: int, micro_batch: int) -> tuple[PendingSend, Transfer]:
    """Send a stage's output activation to the next stage (rank + 1)."""
    return send(activation, dst=rank + 1, tag="activation", micro_batch=micro_batch)


def recv_forward(shape: Sequence[int], *, rank: int, micro_batch: int, dtype: torch.dtype = torch.float32,
                 device: torch.device | str = "cpu") -> tuple[torch.Tensor, Transfer]:
    """Receive the input activation from the previous stage (rank - 1), ready to take a gradient."""
    x, record = recv(shape, src=rank - 1, tag="activation", micro_batch=micro_batch, dtype=dtype, device=device)
    return x.requires_grad_(), record


def send_backward(grad: torch.Tensor, *, rank: int, micro_batch: int) -> tuple[PendingSend, Transfer]:
    """Send the gradient of a stage's input back to the previous stage (rank - 1)."""
    return send(grad, dst=rank - 1, tag="gradient", micro_batch=micro_batch)


def recv_backward(shape: Sequence[int], *, rank: int, micro_batch: int, dtype: torch.dtype = torch.float32,
                  device: torch.device | str = "cpu") -> tuple[torch.Tensor, Transfer]:
    """Receive the gradient of this stage's output from the next stage (rank + 1)."""
    return recv(shape, src=rank + 1, tag="gradient", micro_batch=micro_batch, dtype=dtype, device=device)


def wait_all(handles: list[PendingSend]) -> None:
    """Wait for every pending send, then forget them."""
    for pending in handles:
        pending.work.wait()
    handles.clear()
