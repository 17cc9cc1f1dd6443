"""All-reduce from first principles: four algorithms written with point-to-point send/recv only.

Each function sums ``tensor`` over all ranks of the default process group, in place, and returns it, like
``dist.all_reduce(tensor)``. They are here to learn from (and to measure): the built-in ``dist.all_reduce``
is what real code calls. Every rank ends with bit-identical values: each element is summed along one
path and then copied, or (recursive doubling) summed as ``a + b`` and ``b + a``, which IEEE addition makes equal.

* :func:`naive_all_reduce`: every rank sends its buffer to rank 0, which sums and sends the result back.
* :func:`ring_all_reduce`: reduce-scatter then all-gather around a ring, the buffer cut into p chunks
  (uneven sizes allowed); bandwidth-optimal (Patarasuk and Yuan 2009).
* :func:`tree_all_reduce`: binomial-tree reduce to rank 0, then binomial-tree broadcast.
* :func:`recursive_doubling_all_reduce`: pairwise exchange with partners 1, 2, 4, ... apart; for p not a
  power of two the extra ranks fold their data in first (Thakur, Rabenseifner and Gropp 2005).

:func:`ring_reduce_scatter` and :func:`ring_all_gather` are the two halves of the ring, also used by ZeRO.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.distributed as dist

from aihw._validate import require_choice

MIN_PIECE_BYTES = 256 * 1024  # the ring pipelines a chunk in pieces no smaller than this


def backend_device() -> torch.device:
    """Where this rank's communication buffers must live for the default group's backend.

    NCCL moves only CUDA tensors (the rank's current CUDA device, set by the launcher); gloo moves CPU tensors.
    """
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _post(ops: list[dist.P2POp]) -> list[dist.Work]:
    """Post a group of sends and receives as one batch (``dist.batch_isend_irecv``) and return their handles.

    NCCL runs a pair's sends and receives on one stream: two ranks that each post a lone receive before their
    send wait for each other for ever. Posted in one batch, a rank's sends and receives start together, so
    every exchange in this module is safe under NCCL as well as gloo. An empty list posts nothing.
    """
    if not ops:
        return []
    return list(dist.batch_isend_irecv(ops))


def _send_op(tensor: torch.Tensor, dst: int) -> dist.P2POp:
    return dist.P2POp(dist.isend, tensor, dst)


def _recv_op(tensor: torch.Tensor, src: int) -> dist.P2POp:
    return dist.P2POp(dist.irecv, tensor, src)


def exchange(send: torch.Tensor, dst: int, recv: torch.Tensor, src: int) -> None:
    """Send ``send`` to ``dst`` while receiving ``recv`` from ``src``: one batch of both, then wait.

    An empty tensor is neither sent nor received: the peer knows the size too and skips it as well.
    """
    ops = ([_recv_op(recv, src)] if recv.numel() else []) + ([_send_op(send, dst)] if send.numel() else [])
    for request in _post(ops):
        request.wait()


def _flat_view(tensor: torch.Tensor) -> torch.Tensor:
    if not tensor.is_contiguous():
        raise ValueError("the teaching all-reduce needs a contiguous tensor; call .contiguous() first")
    return tensor.view(-1)


def chunk_bounds(numel: int, world_size: int) -> list[tuple[int, int]]:
    """(start, end) of each of ``world_size`` chunks of ``numel`` elements; sizes differ by at most one."""
    base, extra = divmod(numel, world_size)
    bounds, start = [], 0
    for i in range(world_size):
        end = start + base + (1 if i < extra else 0)
        bounds.append((start, end))
        start = end
    return bounds


def naive_all_reduce(tensor: torch.Tensor) -> torch.Tensor:
    """Gather every buffer on rank 0, sum there, send the sum back to each rank: 2(p-1) full messages."""
    rank, p = dist.get_rank(), dist.get_world_size()
    flat = _flat_view(tensor)
    if p == 1 or flat.numel() == 0:
        return tensor
    if rank == 0:
        incoming = torch.empty_like(flat)
        for src in range(1, p):
            dist.recv(incoming, src)
            flat.add_(incoming)
        for dst in range(1, p):
            dist.send(flat, dst)
    else:
        dist.send(flat, 0)
        dist.recv(flat, 0)
    return tensor


def _ring_phase(flat: torch.Tensor, send_chunk: Callable[[int], int], *, reduce: bool, segments: int) -> None:
    """p-1 ring steps: at step s send chunk ``send_chunk(s)`` right, receive chunk ``send_chunk(s + 1)`` from the
    left and add it in (``reduce``) or store it. Each chunk travels in ``segments`` pieces: a piece is forwarded
    as soon as it has arrived (and been added), while the next piece is still on the wire (pipelining)."""
    rank, p = dist.get_rank(), dist.get_world_size()
    right, left = (rank + 1) % p, (rank - 1) % p
    bounds = chunk_bounds(flat.numel(), p)
    largest = max(end - start for start, end in bounds)
    buffers = [torch.empty(largest, dtype=flat.dtype, device=flat.device) for _ in range(2)] if reduce else []

    def pieces(chunk: int) -> list[tuple[int, int]]:  # small chunks go whole: each piece costs one latency
        start, end = bounds[chunk]
        count = max(1, min(segments, (end - start) * flat.element_size() // MIN_PIECE_BYTES))
        return [(start + a, start + b) for a, b in chunk_bounds(end - start, count) if b > a]

    def receive_into(step: int, a: int, b: int) -> torch.Tensor:  # alternate buffers: one is still being added
        start = bounds[send_chunk(step + 1)][0]
        return buffers[step % 2][a - start:b - start] if reduce else flat[a:b]

    # Piece i of step s is one batch: send piece i of chunk send_chunk(s) right, receive piece i of chunk
    # send_chunk(s + 1) from the left (what the left neighbour sends in its batch (s, i)). Every rank posts its
    # batches in the same (s, i) order, so they pair up under NCCL too. Piece i of step s is posted as soon as
    # piece i of step s - 1 has arrived (and been added), while later pieces are still on the wire (pipelining).
    # batch_isend_irecv hands back one handle per operation (gloo) or one for the whole batch (NCCL): a batch's
    # handles are waited together, which waits for its receive.
    posted: dict[tuple[int, int], list[dist.Work]] = {}  # (step, piece) -> that batch's handles, until waited

    def arrived(step: int, i: int) -> None:
        for request in posted.pop((step, i)):
            request.wait()

    for step in range(p - 1):
        out_pieces, in_pieces = pieces(send_chunk(step)), pieces(send_chunk(step + 1))
        for i in range(max(len(out_pieces), len(in_pieces))):
            ops = []
            if i < len(out_pieces):
                a, b = out_pieces[i]
                if step:  # this piece arrived last step: wait for it and add it in before forwarding it
                    arrived(step - 1, i)
                    if reduce:
                        flat[a:b].add_(receive_into(step - 1, a, b))
                ops.append(_send_op(flat[a:b], right))
            if i < len(in_pieces):
                a, b = in_pieces[i]
                ops.append(_recv_op(receive_into(step, a, b), left))
            posted[(step, i)] = _post(ops)
    for i, (a, b) in enumerate(pieces(send_chunk(p - 1))):  # the last step's pieces: wait and add
        arrived(p - 2, i)
        if reduce:
            flat[a:b].add_(receive_into(p - 2, a, b))
    for key in list(posted):  # batches that only sent
        arrived(*key)


def ring_reduce_scatter(flat: torch.Tensor, *, segments: int = 4) -> tuple[int, int]:
    """Ring reduce-scatter of a 1-D tensor in place; returns (start, end) of the chunk this rank now owns
    fully summed (chunk ``(rank + 1) % p``). Other chunks hold partial sums afterwards."""
    rank, p = dist.get_rank(), dist.get_world_size()
    if p > 1:
        _ring_phase(flat, lambda step: (rank - step) % p, reduce=True, segments=segments)
    return chunk_bounds(flat.numel(), p)[(rank + 1) % p]


def ring_all_gather(flat: torch.Tensor, *, owned_offset: int = 1, segments: int = 4) -> torch.Tensor:
    """Ring all-gather in place: rank r starts owning chunk ``(r + owned_offset) % p``; every rank ends with all.

    ``owned_offset=1`` continues a :func:`ring_reduce_scatter`; ``owned_offset=0`` gathers chunk r from rank r.
    """
    rank, p = dist.get_rank(), dist.get_world_size()
    if p > 1:
        _ring_phase(flat, lambda step: (rank + owned_offset - step) % p, reduce=False, segments=segments)
    return flat


def ring_all_reduce(tensor: torch.Tensor) -> torch.Tensor:
    """Reduce-scatter then all-gather around the ring 0 -> 1 -> ... -> p-1 -> 0: 2(p-1) steps of n/p bytes."""
    flat = _flat_view(tensor)
    if dist.get_world_size() == 1 or flat.numel() == 0:
        return tensor
    ring_reduce_scatter(flat)
    ring_all_gather(flat, owned_offset=1)
    return tensor


def tree_all_reduce(tensor: torch.Tensor) -> torch.Tensor:
    """Binomial-tree reduce to rank 0 (rank r receives from r + 1, r + 2, r + 4, ... while those bits are 0),
    then the same tree in reverse to broadcast: 2 ceil(log2 p) steps of the whole buffer."""
    rank, p = dist.get_rank(), dist.get_world_size()
    flat = _flat_view(tensor)
    if p == 1 or flat.numel() == 0:
        return tensor
    incoming = torch.empty_like(flat)
    mask = 1
    while mask < p:  # reduce: children send up, parents add
        if rank & mask:
            dist.send(flat, rank - mask)
            break
        if rank + mask < p:
            dist.recv(incoming, rank + mask)
            flat.add_(incoming)
        mask <<= 1
    lowbit = rank & -rank if rank else 1 << p.bit_length()
    if rank:
        dist.recv(flat, rank - lowbit)
    mask = lowbit >> 1
    while mask:  # broadcast: the same edges, top down
        if rank + mask < p:
            dist.send(flat, rank + mask)
        mask >>= 1
    return tensor


def recursive_doubling_all_reduce(tensor: torch.Tensor) -> torch.Tensor:
    """Exchange whole buffers with partner rank XOR 1, 2, 4, ... and add: log2 p steps when p is a power of two.

    Otherwise, with 2^k < p, the first 2(p - 2^k) ranks pair up: each even one hands its data to its odd
    neighbour, sits out the doubling, and receives the result at the end (MPICH's scheme).
    """
    rank, p = dist.get_rank(), dist.get_world_size()
    flat = _flat_view(tensor)
    if p == 1 or flat.numel() == 0:
        return tensor
    power = 1 << (p.bit_length() - 1)
    extra = p - power
    incoming = torch.empty_like(flat)
    if rank < 2 * extra and rank % 2 == 0:  # fold in, wait for the answer
        dist.send(flat, rank + 1)
        dist.recv(flat, rank + 1)
        return tensor
    if rank < 2 * extra:
        dist.recv(incoming, rank - 1)
        flat.add_(incoming)
    new_rank = rank // 2 if rank < 2 * extra else rank - extra
    mask = 1
    while mask < power:
        partner_new = new_rank ^ mask
        partner = partner_new * 2 + 1 if partner_new < extra else partner_new + extra
        exchange(flat, partner, incoming, partner)
        flat.add_(incoming)
        mask <<= 1
    if rank < 2 * extra:
        dist.send(flat, rank - 1)
    return tensor


def builtin_all_reduce(tensor: torch.Tensor) -> torch.Tensor:
    """``dist.all_reduce`` (SUM) of the backend (gloo: its own ring/bcube code; NCCL: ring or tree)."""
    dist.all_reduce(tensor)
    return tensor


IMPLEMENTATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "naive": naive_all_reduce,
    "ring": ring_all_reduce,
    "tree": tree_all_reduce,
    "recursive-doubling": recursive_doubling_all_reduce,
    "builtin": builtin_all_reduce,
}
ALGORITHM_NAMES = tuple(IMPLEMENTATIONS)


def all_reduce(tensor: torch.Tensor, algorithm: str = "ring") -> torch.Tensor:
    """Sum ``tensor`` over all ranks in place with ``algorithm`` (one of :data:`ALGORITHM_NAMES`)."""
    require_choice("algorithm", algorithm, ALGORITHM_NAMES)
    return IMPLEMENTATIONS[algorithm](tensor)


def compare_with_builtin(ctx, numels: tuple[int, ...] = (1, 2, 3, 7, 64, 1001),
                         algorithms: tuple[str, ...] = ("naive", "ring", "tree", "recursive-doubling"),
                         seed: int = 0) -> list[dict]:
    """Worker: run each algorithm on random tensors of each size (int64 and float32) next to ``dist.all_reduce``.

    Returns one row per (algorithm, numel, dtype) with ``exact`` (int64 sums must match bit for bit),
    ``max_abs_diff`` against the built-in result and ``same_on_all_ranks`` (a digest all-gathered).
    """
    for name in algorithms:
        require_choice("algorithm", name, ALGORITHM_NAMES)
    rows = []
    for numel in numels:
        for dtype in (torch.int64, torch.float32):
            gen = torch.Generator().manual_seed(seed * 7919 + numel * 31 + ctx.rank)
            data = torch.randn(numel, generator=gen) * 100
            data = (data.round().to(dtype) if dtype == torch.int64 else data).to(ctx.device)
            expected = data.clone()
            dist.all_reduce(expected)
            for name in algorithms:
                got = all_reduce(data.clone(), name)
                digest = torch.tensor([float(got.double().sum()), float((got.double() ** 2).sum())],
                                      dtype=torch.float64, device=ctx.device)
                gathered = [torch.empty_like(digest) for _ in range(ctx.world_size)]
                dist.all_gather(gathered, digest)
                rows.append({"algorithm": name, "numel": numel, "dtype": str(dtype).removeprefix("torch."),
                             "rank": ctx.rank, "exact": bool(torch.equal(got, expected)),
                             "max_abs_diff": float((got.double() - expected.double()).abs().max()),
                             "scale": float(expected.double().abs().max()),
                             "same_on_all_ranks": all(torch.equal(g, gathered[0]) for g in gathered)})
    return rows


# --- all-gather, reduce-scatter and all-to-all from send/recv -------------------------------------------------

def p2p_all_gather(tensor: torch.Tensor) -> torch.Tensor:
    """``dist.all_gather_into_tensor`` from send/recv: every rank's ``tensor`` stacked in rank order.

    Ring: p - 1 steps, each passing the block received last step to the right; each rank sends (p-1)/p of the
    output, the bandwidth lower bound.
    """
    rank, p = dist.get_rank(), dist.get_world_size()
    out = torch.empty((p * tensor.numel(),), dtype=tensor.dtype, device=tensor.device)
    out[rank * tensor.numel():(rank + 1) * tensor.numel()] = tensor.reshape(-1)
    ring_all_gather(out, owned_offset=0, segments=1)
    return out.view((p,) + tuple(tensor.shape))


def p2p_reduce_scatter(tensor: torch.Tensor) -> torch.Tensor:
    """``dist.reduce_scatter_tensor`` (SUM) from send/recv: rank r gets the sum over ranks of block r.

    ``tensor`` holds p equal blocks along its first dimension. Ring: p - 1 steps of one block each.
    """
    p = dist.get_world_size()
    if tensor.shape[0] % p:
        raise ValueError(f"the first dimension ({tensor.shape[0]}) must split into {p} equal blocks")
    flat = tensor.detach().clone().reshape(-1)
    # the ring leaves chunk (r + 1) % p summed on rank r: rotate the blocks so that chunk is block r
    blocks = list(flat.chunk(p))
    rotated = torch.cat(blocks[-1:] + blocks[:-1])
    start, end = ring_reduce_scatter(rotated, segments=1)
    return rotated[start:end].view((tensor.shape[0] // p,) + tuple(tensor.shape[1:]))


def p2p_all_to_all(inputs: list[torch.Tensor], *, recv_sizes: list[int] | None = None) -> list[torch.Tensor]:
    """``dist.all_to_all`` from send/recv: ``inputs[j]`` goes to rank j; returns what each rank sent here.

    Pairwise exchange: at step i (1..p-1) rank r sends to r + i and receives from r - i (mod p), so every link
    carries one message per step; each rank sends (p-1)/p of its data. ``recv_sizes``: rows expected from each
    rank (default: the same shape as ``inputs[src]``, i.e. equal splits).
    """
    rank, p = dist.get_rank(), dist.get_world_size()
    if len(inputs) != p:
        raise ValueError(f"all-to-all needs one input per rank ({p}), got {len(inputs)}")
    out: list[torch.Tensor] = [torch.empty(0)] * p
    for src in range(p):
        rows = inputs[src].shape[0] if recv_sizes is None else recv_sizes[src]
        out[src] = torch.empty((rows,) + tuple(inputs[rank].shape[1:]), dtype=inputs[rank].dtype,
                               device=inputs[rank].device)
    out[rank] = inputs[rank].clone()
    for step in range(1, p):
        dst, src = (rank + step) % p, (rank - step) % p
        exchange(inputs[dst].contiguous(), dst, out[src], src)
    return out


def compare_more_with_builtin(ctx, numels: tuple[int, ...] = (1, 5, 64, 1000), seed: int = 0) -> list[dict]:
    """Worker: the send/recv all-gather, reduce-scatter and all-to-all next to torch.distributed's."""
    rows, p, device = [], ctx.world_size, backend_device()
    for numel in numels:
        gen = torch.Generator().manual_seed(seed * 7919 + numel * 31 + ctx.rank)
        data = (torch.randn(p * numel, generator=gen) * 100).round().to(device)
        got = p2p_all_gather(data[:numel])
        ref = torch.empty(p * numel, device=device)
        _all_gather_single(ref, data[:numel].contiguous())
        rows.append({"collective": "all_gather", "numel": numel, "exact": bool(torch.equal(got.reshape(-1), ref))})
        got = p2p_reduce_scatter(data)
        ref = torch.empty(numel, device=device)
        dist.reduce_scatter_tensor(ref, data.clone()) if ctx.backend != "gloo" else _gloo_reduce_scatter(ref, data)
        rows.append({"collective": "reduce_scatter", "numel": numel, "exact": bool(torch.equal(got, ref))})
        got = torch.cat(p2p_all_to_all(list(data.chunk(p))))
        ref = torch.empty_like(data)
        dist.all_to_all_single(ref, data)
        rows.append({"collective": "all_to_all", "numel": numel, "exact": bool(torch.equal(got, ref))})
    return rows


def _all_gather_single(out: torch.Tensor, tensor: torch.Tensor) -> None:
    """torch.distributed's all-gather into one tensor (named all_gather_single in newer releases)."""
    fn = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    fn(out, tensor)


def _gloo_reduce_scatter(out: torch.Tensor, data: torch.Tensor) -> None:
    """gloo has no reduce_scatter_tensor: all-reduce then keep this rank's block (the reference result)."""
    full = data.clone()
    dist.all_reduce(full)
    out.copy_(full.chunk(dist.get_world_size())[dist.get_rank()])

