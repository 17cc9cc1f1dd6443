"""Every send/recv pattern of the package completes under NCCL's rules, checked on the CPU with a fake dist.

Each rank's calls are recorded by a fake ``torch.distributed`` (the patterns' control flow does not depend on the
data, so ranks can be run one after another). The recording is then played back under NCCL's semantics, made
stricter than NCCL itself so that passing here means passing there: every call a rank makes (one
``batch_isend_irecv`` batch, or one lone ``isend``/``irecv``/``send``/``recv``) is one operation on that rank's
single communication stream, started only when the one before it has finished, and finished only when each of
its sends and receives meets its partner in the peer's running operation. A pair of ranks that both post a lone
receive first waits for ever, which the playback reports as a deadlock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
import torch

from aihw.parallel import collectives, context_parallel


@dataclass(frozen=True)
class Op:
    kind: str  # "send" or "recv"
    peer: int
    numel: int
    dtype: torch.dtype


@dataclass
class _Handle:
    def wait(self) -> bool:
        return True

    def is_completed(self) -> bool:
        return True


@dataclass
class FakeDist:
    """The parts of torch.distributed the patterns call, for one rank; ``calls`` is what it posted, in order."""

    rank: int
    world: int
    calls: list[tuple[str, list[Op]]] = field(default_factory=list)

    def get_rank(self) -> int:
        return self.rank

    def get_world_size(self) -> int:
        return self.world

    def get_backend(self) -> str:
        return "nccl"

    def _op(self, kind: str, tensor: torch.Tensor, peer: int) -> Op:
        assert 0 <= peer < self.world and peer != self.rank, (self.rank, kind, peer)
        return Op(kind, peer, tensor.numel(), tensor.dtype)

    def isend(self, tensor, dst, *args, **kwargs):
        self.calls.append(("isend", [self._op("send", tensor, dst)]))
        return _Handle()

    def irecv(self, tensor, src, *args, **kwargs):
        self.calls.append(("irecv", [self._op("recv", tensor, src)]))
        return _Handle()

    def send(self, tensor, dst, *args, **kwargs):
        self.calls.append(("send", [self._op("send", tensor, dst)]))

    def recv(self, tensor, src, *args, **kwargs):
        self.calls.append(("recv", [self._op("recv", tensor, src)]))

    def P2POp(self, op, tensor, peer):  # noqa: N802 - torch's name
        assert op in (self.isend, self.irecv), "a P2POp takes dist.isend or dist.irecv"
        return ("send" if op == self.isend else "recv", tensor, peer)

    def batch_isend_irecv(self, ops):
        assert ops, "an empty batch is an error in torch"
        self.calls.append(("batch", [self._op(kind, tensor, peer) for kind, tensor, peer in ops]))
        return [_Handle() for _ in ops]


def record(monkeypatch, world: int, pattern) -> list[list[tuple[str, list[Op]]]]:
    """Run ``pattern(rank, world)`` once per rank under a fake dist; each rank's posted calls."""
    per_rank = []
    for rank in range(world):
        fake = FakeDist(rank, world)
        monkeypatch.setattr(collectives, "dist", fake)
        pattern(rank, world)
        per_rank.append(fake.calls)
    return per_rank


def play_nccl(per_rank: list[list[tuple[str, list[Op]]]]) -> None:
    """Fail if the calls cannot all finish under the one-stream-per-rank rule, or if sends and receives differ."""
    world = len(per_rank)
    # the k-th send from a to b meets the k-th receive on b from a
    tagged: list[list[list[tuple[str, int, int]]]] = []  # rank -> call -> (kind, peer, k)
    sent: dict[tuple[int, int], list[tuple[int, torch.dtype]]] = {}
    received: dict[tuple[int, int], list[tuple[int, torch.dtype]]] = {}
    for rank, calls in enumerate(per_rank):
        tagged.append([])
        for _, ops in calls:
            row = []
            for op in ops:
                pair, book = ((rank, op.peer), sent) if op.kind == "send" else ((op.peer, rank), received)
                book.setdefault(pair, []).append((op.numel, op.dtype))
                row.append((op.kind, op.peer, len(book[pair]) - 1))
            tagged[rank].append(row)
    assert sent == received, "some send has no receive of the same size and dtype, in the same order"
    position = [0] * world

    def partner_running(rank: int, kind: str, peer: int, k: int) -> bool:
        if position[peer] == len(tagged[peer]):
            return False
        other = "recv" if kind == "send" else "send"
        return (other, rank, k) in tagged[peer][position[peer]]

    while any(position[r] < len(tagged[r]) for r in range(world)):
        ready = {r for r in range(world) if position[r] < len(tagged[r])
                 and all(partner_running(r, *op) for op in tagged[r][position[r]])}
        changed = True
        while changed:  # an operation finishes only together with every peer operation it meets
            changed = False
            for r in list(ready):
                if any(peer not in ready for _, peer, _ in tagged[r][position[r]]):
                    ready.discard(r)
                    changed = True
        if not ready:
            stuck = {r: per_rank[r][position[r]] for r in range(world) if position[r] < len(tagged[r])}
            raise AssertionError(f"deadlock under NCCL: each rank's waiting call {stuck}")
        for r in ready:
            position[r] += 1


def _big(world: int) -> int:
    """A size whose ring chunks are cut into several pieces (the pipelined path), not a multiple of ``world``."""
    return world * 3 * collectives.MIN_PIECE_BYTES // 4 + 7


PATTERNS = {
    "ring_all_reduce": lambda r, w, n: collectives.ring_all_reduce(torch.empty(n)),
    "ring_reduce_scatter": lambda r, w, n: collectives.ring_reduce_scatter(torch.empty(n)),
    "ring_all_gather": lambda r, w, n: collectives.ring_all_gather(torch.empty(n), owned_offset=0),
    "naive_all_reduce": lambda r, w, n: collectives.naive_all_reduce(torch.empty(n)),
    "tree_all_reduce": lambda r, w, n: collectives.tree_all_reduce(torch.empty(n)),
    "recursive_doubling": lambda r, w, n: collectives.recursive_doubling_all_reduce(torch.empty(n)),
    "p2p_all_gather": lambda r, w, n: collectives.p2p_all_gather(torch.empty(n)),
    "p2p_reduce_scatter": lambda r, w, n: collectives.p2p_reduce_scatter(torch.empty(w * n)),
    # uneven splits, some empty: rank r sends (r + j) % 3 values to rank j
    "p2p_all_to_all": lambda r, w, n: collectives.p2p_all_to_all(
        [torch.empty((r + j) % 3) for j in range(w)], recv_sizes=[(j + r) % 3 for j in range(w)]),
    "context_parallel_ring": lambda r, w, n: context_parallel._pass_along(torch.empty(2, n), r, w),
}


CASES = [(name, size) for name in sorted(PATTERNS) for size in ("tiny", "uneven")] + [
    (name, "pipelined") for name in sorted(PATTERNS) if name.startswith("ring")]  # only the ring cuts pieces


@pytest.mark.parametrize("world", [2, 3, 4, 5, 8])
@pytest.mark.parametrize(("name", "size"), CASES)
def test_every_pattern_completes_under_nccl_rules(monkeypatch, name, world, size):
    numel = {"tiny": 1, "uneven": 2 * world + 1, "pipelined": _big(world)}[size]
    per_rank = record(monkeypatch, world, lambda r, w: PATTERNS[name](r, w, numel))
    assert any(calls for calls in per_rank), "the pattern posted nothing: the fake dist was not used"
    play_nccl(per_rank)
    if size == "pipelined" and name.startswith("ring"):  # several pieces really were in flight
        assert max(len(ops) for calls in per_rank for _, ops in calls) == 2
        assert sum(kind == "batch" for kind, _ in per_rank[0]) > 2 * (world - 1)


@pytest.mark.parametrize("world", [2, 3, 4, 8])
@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_non_blocking_point_to_point_goes_through_batch_isend_irecv(monkeypatch, name, world):
    per_rank = record(monkeypatch, world, lambda r, w: PATTERNS[name](r, w, 2 * world + 1))
    kinds = {kind for calls in per_rank for kind, _ in calls}
    assert not kinds & {"isend", "irecv"}, f"{name} posts a lone isend/irecv: {kinds}"
    exchanges = [ops for calls in per_rank for kind, ops in calls if kind == "batch"]
    for ops in exchanges:  # each batch sends to at most one peer and receives from at most one
        assert sum(op.kind == "send" for op in ops) <= 1 and sum(op.kind == "recv" for op in ops) <= 1


def test_the_playback_catches_the_receive_first_deadlock():
    """Two ranks that each post a lone irecv, then an isend, to the other: NCCL's classic hang."""
    f32 = torch.float32
    receive_first = [[("irecv", [Op("recv", 1 - r, 4, f32)]), ("isend", [Op("send", 1 - r, 4, f32)])]
                     for r in range(2)]
    with pytest.raises(AssertionError, match="deadlock"):
        play_nccl(receive_first)
    batched = [[("batch", [Op("recv", 1 - r, 4, f32), Op("send", 1 - r, 4, f32)])] for r in range(2)]
    play_nccl(batched)
    mismatched = [[("batch", [Op("send", 1, 4, f32)])], [("batch", [Op("recv", 0, 5, f32)])]]
    with pytest.raises(AssertionError, match="same size"):
        play_nccl(mismatched)


def test_backend_device_follows_the_backend(monkeypatch):
    fake = FakeDist(0, 2)
    monkeypatch.setattr(collectives, "dist", fake)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    assert collectives.backend_device() == torch.device("cuda", 1)
    monkeypatch.setattr(fake, "get_backend", lambda: "gloo")
    assert collectives.backend_device() == torch.device("cpu")
