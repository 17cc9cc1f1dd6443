"""Small module-level workers for aihw.parallel.launch: a correct all-reduce, ways a rank can go wrong, and a
look at the sockets a run listens on.

Used by the tests and the docs. Each takes ``ctx: RankContext`` first, like every worker. Run the
all-reduce under torchrun with::

    torchrun --standalone --nproc-per-node 2 -m aihw.parallel._demo_workers
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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


def record_pid_then_wait(ctx: RankContext, directory: str, ignore_sigterm: bool = False,
                         start_child: bool = False, seconds: float = 3600.0) -> int:
    """Write ``rank<r>.pid`` (and ``rank<r>.child.pid`` for a started child) into ``directory``, then wait.

    For fault-injection tests: the test reads the pids and kills or interrupts from outside. Rank 0 waits in
    an all-reduce (a collective) that the other ranks join only after ``seconds``. With ``ignore_sigterm`` the
    rank and its child ignore SIGTERM; the rank notes each SIGTERM it receives in ``rank<r>.sigterm`` (when its
    Python code runs: a rank waiting in a collective notes nothing), so a test can tell the launcher has
    started stopping the ranks.
    """
    folder = Path(directory)
    if ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # inherited by the child below, which ignores it too
    if start_child:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        _write_atomically(folder / f"rank{ctx.rank}.child.pid", str(child.pid))
    if ignore_sigterm:
        def note_sigterm(signum: int, frame: object) -> None:
            _write_atomically(folder / f"rank{ctx.rank}.sigterm", "SIGTERM received and ignored")

        signal.signal(signal.SIGTERM, note_sigterm)
    _write_atomically(folder / f"rank{ctx.rank}.pid", str(os.getpid()))
    ctx.progress("pid written")  # rank 0's reaches launch(on_progress=...): a test can act once the run is up
    if ctx.rank != 0:
        time.sleep(seconds)
    dist.all_reduce(torch.zeros(1, device=ctx.device))
    return ctx.rank


def return_when_orphaned(ctx: RankContext, directory: str) -> int:
    """Start a child, write the pids as :func:`record_pid_then_wait` does, then return as soon as the launching
    process is gone (polling every 10 ms, faster than the orphan watcher's look): a rank that ends on its own
    after its parent died, as one whose collective fails when the parent's store goes away does."""
    folder = Path(directory)
    parent = os.getppid()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    _write_atomically(folder / f"rank{ctx.rank}.child.pid", str(child.pid))
    _write_atomically(folder / f"rank{ctx.rank}.pid", str(os.getpid()))
    while os.getppid() == parent:
        time.sleep(0.01)
    return ctx.rank


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".part")
    partial.write_text(text)
    partial.replace(path)


def listening_sockets(ctx: RankContext) -> list[tuple[int, str, int]]:
    """(pid, address, port) of every listening TCP socket held by this run's processes (Linux /proc).

    Called while the process group is up, so the store (in the launching process) and every rank's gloo
    sockets exist. Rank 0 reads the OS's socket tables; the others wait in a barrier.
    """
    dist.barrier()
    found: list[tuple[int, str, int]] = []
    if ctx.rank == 0:
        parent = os.getppid()
        pids = [parent, *_children_of(parent)]
        listening = _listening_by_inode()
        for pid in pids:
            for inode in _socket_inodes(pid):
                if inode in listening:
                    found.append((pid, *listening[inode]))
    dist.barrier()
    return sorted(found)


def _children_of(parent: int) -> list[int]:
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                children.append(int(entry))
    return children


def _socket_inodes(pid: int) -> set[int]:
    inodes: set[int] = set()
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return inodes
    for name in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def _listening_by_inode() -> dict[int, tuple[str, int]]:
    """inode -> (address, port) of every TCP socket in state LISTEN (0A) in /proc/net/tcp and tcp6."""
    import ipaddress

    table: dict[int, tuple[str, int]] = {}
    for name, width in (("tcp", 4), ("tcp6", 16)):
        try:
            lines = Path(f"/proc/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] != "0A":
                continue
            hex_address, hex_port = fields[1].split(":")
            raw = bytes.fromhex(hex_address)
            # /proc prints each 32-bit word in host byte order
            words = raw if sys.byteorder == "big" else b"".join(raw[i:i + 4][::-1] for i in range(0, width, 4))
            address = str(ipaddress.ip_address(words))
            table[int(fields[9])] = (address, int(hex_port, 16))
    return table


def _main() -> None:
    result = run_under_torchrun(all_reduce_sum)
    line = (f"rank {result['rank']}/{result['world_size']} backend={result['backend']} "
            f"total={result['total']:g} expected={expected_sum(result['world_size']):g}\n")
    sys.stdout.write(line)  # one write per line: ranks share the pipe, print() may split text and newline
    sys.stdout.flush()


if __name__ == "__main__":
    _main()


def start_session_child(ctx: RankContext, directory: str) -> int:
    """Start a child in a session of its own (``start_new_session=True``: outside the rank's process group, out
    of reach of signals to that group), write its pid as ``rank<r>.child.pid`` and the rank's as ``rank<r>.pid``,
    and return: the launcher must still stop the child."""
    folder = Path(directory)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"], start_new_session=True)
    _write_atomically(folder / f"rank{ctx.rank}.child.pid", str(child.pid))
    _write_atomically(folder / f"rank{ctx.rank}.pid", str(os.getpid()))
    return ctx.rank
