"""Start N ranks of a worker on this machine, collect their results, and never leave a process behind.

Two ways to run the same module-level worker ``fn(ctx: RankContext, *args)``:

* from a notebook or script: ``launch(fn, *args, config=LaunchConfig(world_size=2))`` spawns the ranks
  (start method "spawn", so it works in Jupyter) and returns their results as a list indexed by rank;
* from a shell: ``torchrun --standalone --nproc-per-node 2 -m my_module`` where ``my_module`` ends with
  ``if __name__ == "__main__": run_under_torchrun(fn)``.

Each ``launch`` gets a fresh port on 127.0.0.1 chosen by the operating system (a socket bound to
127.0.0.1:0 in the parent, handed to the TCPStore), so two runs at once never collide and nothing outside
this machine can reach the store. The ranks' own gloo (and NCCL bootstrap) sockets are pinned to the loopback
interface as well, whatever the machine's hostname resolves to: a local run listens on 127.0.0.1 only.
Results travel back pickled, by value: return plain Python values or CPU tensors (call ``.cpu()`` on GPU
tensors).

Each rank runs in its own process group, so stopping a rank also stops any process it started; processes a rank
started in a session or group of their own (``start_new_session=True``) are found by walking ``/proc`` for the
rank's descendants, by the rank itself as it ends and by the launcher as it stops the ranks. A rank whose
parent dies (a killed Jupyter kernel) stops itself and its process group.

A worker reports progress with ``ctx.progress("...")`` (rank 0's calls count); ``launch(..., on_progress=f)``
calls ``f(message)`` in the parent as each report arrives, e.g. to move a progress bar.

"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import pickle
import queue
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from aihw._validate import coerce_numbers, require_choice, require_positive
from aihw.runtime.device import BACKEND_CHOICES, Backend, pick_backend, rank_device

NCCL_ALGOS = ("default", "ring", "tree")
HOST = "127.0.0.1"  # every rank runs on this machine
DEFAULT_MAX_WORLD_SIZE = 16  # each rank is a whole Python process with torch loaded
STOP_GRACE_S = 3.0  # seconds between SIGTERM and SIGKILL when stopping ranks
EXIT_PATIENCE_S = 5.0  # seconds finished ranks get to tear down their process group before being stopped
# Ranks' own rendezvous/collective timeouts are timeout_s + this, so the parent's deadline always fires first
# and the reader sees one WorkerTimeout naming the stuck ranks rather than a gloo timeout from some rank.
CHILD_TIMEOUT_MARGIN_S = 30.0
MAX_TIMEOUT_S = 7 * 24 * 3600.0  # a week: timeout_s beyond it is a typo (and overflows timedelta and waits)
MAX_STOP_GRACE_S = 600.0  # ten minutes between SIGTERM and SIGKILL at most
SILENT_DEATH_GRACE_S = 1.0  # a rank that exited is declared failed if no report arrives within this
_NOTEBOOK_HINT = "define the worker in a module (spawn cannot pickle functions defined in a notebook)"


def _require_int(name: str, value: object, low: int, high: int, why: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}]{why}, got {value!r}")
    return value


def _require_seconds(name: str, value: object, most: float) -> None:
    """A positive finite number of seconds no larger than ``most`` (waits and timedelta overflow beyond)."""
    if require_positive(name, value) > most:
        raise ValueError(f"{name} must be at most {most:,.0f} s, got {value!r}")


@dataclass(frozen=True)
class LaunchConfig:
    """How to run one multi-process experiment on this machine."""

    world_size: int = 2  # number of ranks (processes), 1..max_world_size
    backend: Backend = "auto"  # see aihw.runtime.device.pick_backend
    timeout_s: float = 60.0  # wall-clock seconds for the whole run, start-up included (~2-5 s per rank)
    threads_per_rank: int = 1  # torch intra-op threads per rank; keep ranks x threads <= CPU cores
    max_world_size: int = DEFAULT_MAX_WORLD_SIZE  # guard against typos such as world_size=200
    # With fewer GPUs than ranks, compute on the GPUs (cuda:rank % gpus) and communicate through gloo. Only for
    # workers that communicate through all_reduce/broadcast/barrier (DDP): see pick_backend.
    gpu_compute: bool = False
    # NCCL's algorithm for this run's ranks: "default" leaves NCCL to choose; "ring" or "tree" sets NCCL_ALGO in
    # the ranks' own environment only (NCCL reads it at communicator creation). Refused when the run is not NCCL.
    nccl_algo: str = "default"
    # Seconds between SIGTERM and SIGKILL when the ranks are stopped (after an error, a timeout or Ctrl-C): the
    # time a rank's own SIGTERM handler gets to clean up.
    stop_grace_s: float = STOP_GRACE_S

    def __post_init__(self) -> None:
        coerce_numbers(self, "world_size", "timeout_s", "threads_per_rank", "max_world_size", "stop_grace_s")
        _require_int("max_world_size", self.max_world_size, 1, 4096)
        _require_int("world_size", self.world_size, 1, self.max_world_size,
                     f" (max_world_size, default {DEFAULT_MAX_WORLD_SIZE}, can be raised)")
        _require_seconds("timeout_s", self.timeout_s, MAX_TIMEOUT_S)
        require_choice("backend", self.backend, BACKEND_CHOICES)
        _require_int("threads_per_rank", self.threads_per_rank, 1, 1024)
        if not isinstance(self.gpu_compute, bool):
            raise ValueError(f"gpu_compute must be True or False, got {self.gpu_compute!r}")
        require_choice("nccl_algo", self.nccl_algo, NCCL_ALGOS)
        _require_seconds("stop_grace_s", self.stop_grace_s, MAX_STOP_GRACE_S)


@dataclass(frozen=True)
class RankContext:
    """What a worker receives as its first argument."""

    rank: int  # 0..world_size-1, unique across all ranks
    world_size: int  # number of ranks in the process group
    local_rank: int  # rank on this machine (equal to rank for launch())
    backend: str  # "gloo" or "nccl"
    device: torch.device  # where this rank keeps tensors: cpu for gloo, cuda:local_rank for nccl,
    #                       cuda:local_rank % gpus for gloo with LaunchConfig.gpu_compute
    reports: Any = field(default=None, repr=False, compare=False)  # the launcher's queue; None under torchrun

    def progress(self, message: str = "") -> None:
        """Tell the launcher one piece of work is done (rank 0 reports; other ranks and torchrun: no-op)."""
        if self.rank == 0 and self.reports is not None:
            self.reports.put(("progress", self.rank, message))


class WorkerError(RuntimeError):
    """A rank raised or died; ``remote_traceback`` is its traceback text (None if it died silently)."""

    def __init__(self, rank: int, remote_traceback: str | None, *, exitcode: int | None = None,
                 note: str = "") -> None:
        self.rank = rank
        self.remote_traceback = remote_traceback
        self.exitcode = exitcode
        if remote_traceback is not None:
            detail = f"\n{remote_traceback.rstrip()}"
        elif exitcode is not None and exitcode < 0:
            detail = (f" the process was killed by signal {_signal_name(-exitcode)} (exit code {exitcode}) "
                      "without reporting a result")
        else:
            detail = (f" the process exited with exit code {exitcode} without reporting a result "
                      "(os._exit, sys.exit in C code, or a crash)")
        super().__init__(f"rank {rank} failed:{detail}{note}")


class WorkerTimeout(TimeoutError):
    """Some ranks had not finished after ``timeout_s`` seconds; every rank was stopped."""

    def __init__(self, ranks: list[int], timeout_s: float) -> None:
        self.ranks = ranks
        self.timeout_s = timeout_s
        super().__init__(
            f"rank(s) {ranks} still running after timeout_s={timeout_s} s; all ranks were stopped. "
            "If the work is just slow, raise LaunchConfig.timeout_s (start-up alone takes a few seconds); "
            "otherwise look for a collective that some rank never joined.")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _worker_reference(fn: Callable) -> tuple[str, str]:
    """(module, qualified name) by which a spawned child can import ``fn``; ValueError if there is none."""
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    if not callable(fn) or not module or not qualname:
        raise ValueError(f"worker {fn!r} is not a plain function; {_NOTEBOOK_HINT}, import it and pass it, "
                         "and pass extra values through *args")
    if "<" in qualname:  # <lambda> or <locals>: closures and nested functions have no importable name
        raise ValueError(f"worker {module}.{qualname} is a lambda, closure or nested function; "
                         f"{_NOTEBOOK_HINT}, import it and pass it")
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if module == "__main__" and (main_file is None or not os.path.isfile(main_file)):  # `python -`: "<stdin>"
        raise ValueError(f"worker {qualname!r} is defined in __main__ (a notebook or interactive session); "
                         f"{_NOTEBOOK_HINT}, e.g. a .py file next to the notebook, and import it from there")
    try:
        target = _resolve((module, qualname))
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"worker {module}.{qualname} cannot be imported by name ({exc}); {_NOTEBOOK_HINT}") \
            from exc
    if target is not fn:
        raise ValueError(f"worker {module}.{qualname} is not the object found under that name (redefined, "
                         f"decorated or a bound method?); {_NOTEBOOK_HINT} as a plain top-level function")
    return module, qualname


def _resolve(reference: tuple[str, str]) -> Callable:
    module_name, qualname = reference
    target: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def _rank_device(device_type: str, local_rank: int) -> torch.device:
    device = rank_device(device_type, local_rank)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    return device


def loopback_interface() -> str:
    """Name of this machine's loopback network interface ("lo" on Linux, "lo0" on macOS/BSD)."""
    names = [name for _, name in socket.if_nameindex()]
    for candidate in ("lo", "lo0"):
        if candidate in names:
            return candidate
    raise RuntimeError(f"no loopback network interface (lo or lo0) among {names}; local runs need one")


def _pin_to_loopback() -> None:
    """Make this rank's gloo and NCCL-bootstrap sockets use the loopback interface only.

    torch offers no argument for the default group's gloo device (``init_process_group`` ignores gloo
    options), so the launcher sets the two variables that gloo and NCCL read, in this rank's own environment
    only, explicitly, for local runs. Without this gloo binds to whatever the hostname resolves to, which is
    a LAN address on an ordinary machine.
    """
    interface = loopback_interface()
    os.environ["GLOO_SOCKET_IFNAME"] = interface
    os.environ["NCCL_SOCKET_IFNAME"] = interface


def _nccl_env(backend: str, nccl_algo: str) -> dict[str, str]:
    """The variables a rank sets in its own environment for ``nccl_algo`` (NCCL_ALGO=Ring|Tree), or none."""
    if nccl_algo == "default":
        return {}
    if backend != "nccl":
        raise ValueError(f"nccl_algo={nccl_algo!r} applies to NCCL only, but this run uses {backend}")
    return {"NCCL_ALGO": nccl_algo.capitalize()}


def _own_process_group() -> None:
    """Make this rank the leader of a new process group, so the launcher can stop what it starts."""
    if hasattr(os, "setpgid"):
        os.setpgid(0, 0)


def _kill_group(process: Any, sig: int) -> None:
    """Send ``sig`` to the process group led by rank ``process`` (the rank and every process it started)."""
    pid = process.pid
    if pid is None:
        return
    if process.exitcode is None:  # alive (not reaped), so its pid cannot have been reused
        try:
            if not hasattr(os, "killpg") or os.getpgid(pid) != pid:  # no group of its own yet
                os.kill(pid, sig)
                return
        except ProcessLookupError:
            return
    elif not hasattr(os, "killpg"):
        return
    try:  # a reaped leader's children keep its group id; only ever signal the group, never the pid
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process (Linux /proc; empty elsewhere)."""
    table: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read(4096)
            table[int(entry)] = int(stat.rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return table


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, ...), whatever their session or group."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(children.get(child, []))
    return found


def _kill_pids(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _end_descendants() -> None:
    """SIGKILL every process this rank started that is outside its process group (a new session or group):
    the launcher's signals to the group would miss them."""
    if not hasattr(os, "getpgid"):
        return
    own = os.getpgrp()
    outside = []
    for pid in descendants(os.getpid()):
        try:
            if os.getpgid(pid) != own:
                outside.append(pid)
        except ProcessLookupError:
            continue
    _kill_pids(outside, signal.SIGKILL)


def _end_group_if_orphaned(parent_pid: int) -> None:
    """If the launching process is gone, SIGKILL this rank's process group: the rank and whatever it started.

    Nobody else will: the launcher, which stops a finished rank's group, is dead."""
    if os.getppid() != parent_pid and hasattr(os, "killpg") and os.getpgrp() == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)


def _exit_when_orphaned(parent_pid: int, interval_s: float = 0.5) -> None:
    """Start a daemon thread that ends this process, and the processes it started, if its parent dies
    (e.g. a killed Jupyter kernel). A rank that ends on its own after its parent died (its collective fails
    when the parent's store goes away) ends its group on the way out too (:func:`_child_main`), because this
    thread dies with it before its next look."""
    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(interval_s)
        _end_group_if_orphaned(parent_pid)
        os._exit(70)

    threading.Thread(target=watch, name="aihw-orphan-watch", daemon=True).start()


def _child_main(fn_ref: tuple[str, str], args_blob: bytes, rank: int, world_size: int, backend: str,
                device_type: str, store_port: int, threads: int, timeout_s: float, results: Any,
                parent_pid: int, nccl_algo: str = "default") -> None:
    """Body of one spawned rank: join the group, run the worker, report ("ok"|"error", rank, payload)."""
    _own_process_group()
    _exit_when_orphaned(parent_pid)
    report: tuple[str, int, Any]
    try:
        _pin_to_loopback()
        os.environ.update(_nccl_env(backend, nccl_algo))  # this rank's own environment, before NCCL starts
        torch.set_num_threads(threads)
        fn = _resolve(fn_ref)
        args = pickle.loads(args_blob)
        device = _rank_device(device_type, rank)
        timeout = timedelta(seconds=timeout_s + CHILD_TIMEOUT_MARGIN_S)
        store = dist.TCPStore(HOST, store_port, is_master=False, timeout=timeout)
        dist.init_process_group(backend, store=store, rank=rank, world_size=world_size, timeout=timeout)
        result = fn(RankContext(rank, world_size, rank, backend, device, results), *args)
        try:
            report = ("ok", rank, pickle.dumps(result))
        except Exception as exc:
            raise TypeError(f"the result of rank {rank} cannot be pickled ({exc}); "
                            "return plain Python values or CPU tensors") from exc
    except BaseException:  # SystemExit and KeyboardInterrupt too: the parent must hear about them
        report = ("error", rank, traceback.format_exc())
    try:
        results.put(report)  # report before teardown, so a slow teardown cannot hide the result
    finally:
        try:
            if dist.is_initialized():
                dist.destroy_process_group()
        finally:
            try:
                _end_descendants()
            finally:
                _end_group_if_orphaned(parent_pid)


def _pickle_args(args: tuple) -> bytes:
    try:
        return pickle.dumps(args)
    except Exception as exc:
        raise ValueError(f"the worker arguments must be picklable to reach the ranks: {exc}") from exc


def launch(fn: Callable, *args: Any, config: LaunchConfig = LaunchConfig(),
           on_progress: Callable[[str], None] | None = None) -> list:
    """Run ``fn(ctx, *args)`` in ``config.world_size`` spawned ranks; return their results, index = rank.

    ``on_progress(message)`` runs here, in the parent, for each ``ctx.progress(message)`` of rank 0.

    Raises WorkerError (first failing rank, with its traceback) or WorkerTimeout; in every case, including
    KeyboardInterrupt, all ranks are stopped before this returns.
    """
    fn_ref = _worker_reference(fn)
    args_blob = _pickle_args(args)
    choice = pick_backend(config.world_size, preference=config.backend, gpu_compute=config.gpu_compute)
    _nccl_env(choice.backend, config.nccl_algo)  # refuse before starting anything
    context = mp.get_context("spawn")
    results = context.Queue()
    store = _loopback_store(timedelta(seconds=config.timeout_s + CHILD_TIMEOUT_MARGIN_S))
    processes: list = []
    finished = False
    try:
        for rank in range(config.world_size):
            process = context.Process(
                target=_child_main, name=f"aihw-rank-{rank}",
                args=(fn_ref, args_blob, rank, config.world_size, choice.backend, choice.device_type,
                      store.port, config.threads_per_rank, config.timeout_s, results, os.getpid(),
                      config.nccl_algo))
            with _sigint_deferred():  # a Ctrl-C here would leave a started rank out of `processes`
                process.start()
                processes.append(process)
        outcome = _collect(processes, results, config.timeout_s, on_progress)
        finished = True
        return outcome
    finally:
        try:
            _stop_all(processes, patience_s=EXIT_PATIENCE_S if finished else 0.0, grace_s=config.stop_grace_s)
        finally:  # release the queue's pipe, feeder thread and semaphores, and the store's socket, even then
            results.close()
            results.join_thread()
            for process in processes:
                try:
                    process.close()
                except ValueError:  # still running: _stop_all was itself interrupted
                    pass
            del store


class _sigint_deferred:
    """Hold back SIGINT (Ctrl-C) in the main thread for the ``with`` body; deliver it on exit as
    KeyboardInterrupt. Elsewhere (another thread, another handler installed) it does nothing."""

    def __enter__(self) -> _sigint_deferred:
        self.pending = False
        self.previous: Any = None
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self.previous = signal.signal(signal.SIGINT, self._note)
        return self

    def _note(self, signum: int, frame: object) -> None:
        self.pending = True

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)
            if self.pending:
                raise KeyboardInterrupt


def _loopback_store(timeout: timedelta) -> dist.TCPStore:
    """The run's rendezvous store, listening on 127.0.0.1 only, on a port the OS picks (so runs never collide).

    Given a host and port, TCPStore listens on every interface; handed a socket already bound to
    127.0.0.1:0, it listens there and nowhere else.
    """
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind((HOST, 0))
        listener.listen(128)
        store = dist.TCPStore(HOST, listener.getsockname()[1], None, is_master=True, wait_for_workers=False,
                              timeout=timeout, master_listen_fd=listener.fileno(), use_libuv=True)
    except BaseException:
        listener.close()
        raise
    listener.detach()  # the store owns the descriptor now and closes it itself
    return store


def _collect(processes: list, results: Any, timeout_s: float,
             on_progress: Callable[[str], None] | None = None) -> list:
    """Gather one report per rank until done, the first error, a silent death, or the deadline."""
    deadline = time.monotonic() + timeout_s
    values: dict[int, Any] = {}
    dead_since: dict[int, float] = {}
    while len(values) < len(processes):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WorkerTimeout(sorted(set(range(len(processes))) - set(values)), timeout_s)
        try:
            status, rank, payload = results.get(timeout=min(0.1, remaining))
        except queue.Empty:
            _check_silent_deaths(processes, values, dead_since)
            continue
        if status == "progress":
            if on_progress is not None:
                on_progress(payload)
            continue
        if status != "ok":
            _raise_silent_death(processes, values, reporter=rank, report=payload)
            raise WorkerError(rank, payload)
        values[rank] = pickle.loads(payload)
    return [values[rank] for rank in range(len(processes))]


def _check_silent_deaths(processes: list, values: dict, dead_since: dict[int, float]) -> None:
    now = time.monotonic()
    for rank, process in enumerate(processes):
        if rank in values or process.exitcode is None:
            continue
        first_seen = dead_since.setdefault(rank, now)
        if now - first_seen > SILENT_DEATH_GRACE_S:  # its report, if any, would have arrived by now
            raise WorkerError(rank, None, exitcode=process.exitcode)


def _raise_silent_death(processes: list, values: dict, *, reporter: int, report: str,
                        wait_s: float = 0.3) -> None:
    """If another rank crashed (non-zero exit, no report), raise for it: it is the likelier root cause of
    ``reporter``'s error (e.g. gloo's "Connection reset by peer")."""
    deadline = time.monotonic() + wait_s
    while True:
        for rank, process in enumerate(processes):
            if rank not in values and rank != reporter and process.exitcode not in (None, 0):
                last_line = report.strip().splitlines()[-1] if report.strip() else "(no traceback)"
                raise WorkerError(rank, None, exitcode=process.exitcode,
                                  note=f"\nrank {reporter} then failed too: {last_line}")
        if time.monotonic() >= deadline:
            return
        time.sleep(0.02)


def _stop_all(processes: list, *, patience_s: float, grace_s: float = STOP_GRACE_S) -> None:
    """Wait ``patience_s`` for ranks to exit, then SIGTERM, then SIGKILL after ``grace_s``; join all.

    Signals go to each rank's process group, so processes a rank started go too. A second interrupt
    (Ctrl-C again while ranks are being stopped) cuts the grace period short, kills everything at once,
    and is raised only after every rank is gone.
    """
    below: set[int] = set()  # every rank's descendants, seen while the rank is alive (before they reparent)
    try:
        below.update(_descendants_of(processes))
        deadline = time.monotonic() + patience_s
        for process in processes:
            process.join(max(0.0, deadline - time.monotonic()))
        below.update(_descendants_of(processes))
        for process in processes:
            if process.exitcode is None:
                _kill_group(process, signal.SIGTERM)
        _kill_pids(sorted(below), signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for process in processes:
            process.join(max(0.0, deadline - time.monotonic()))
    finally:  # SIGKILL whatever is left, however the wait above ended (an interrupt, an error, an overflow)
        below.update(_descendants_of(processes))
        _kill_pids(sorted(below), signal.SIGKILL)
        _kill_all(processes)


def _descendants_of(processes: list) -> list[int]:
    found: list[int] = []
    for process in processes:
        if process.pid is not None and process.exitcode is None:
            found.extend(descendants(process.pid))
    return found


def _kill_all(processes: list) -> None:
    """SIGKILL every rank's process group and reap the ranks; interrupts cannot cut this short."""
    pending: BaseException | None = None
    for process in processes:
        _kill_group(process, signal.SIGKILL)
    for process in processes:
        while True:
            try:
                process.join()
                break
            except KeyboardInterrupt as exc:  # SIGKILL is on its way: finish reaping, then re-raise
                pending = exc
    if pending is not None:
        raise pending


def _run_each(ctx: RankContext, worker: Callable, configs: tuple) -> list:
    results = []
    for config in configs:
        dist.barrier()  # no rank starts a config while another still times the previous one
        results.append(worker(ctx, config))
    return results


def launch_each(worker: Callable, configs: tuple, *, config: LaunchConfig,
                on_progress: Callable[[str], None] | None = None) -> list[list]:
    """Run ``worker(ctx, c)`` for each ``c`` in ``configs`` inside ONE launch (one start-up for many runs).

    Returns ``result[i][rank]``: config i's result on ``rank``. ``worker`` must be module-level, as for launch.
    """
    per_rank = launch(_run_each, worker, tuple(configs), config=config, on_progress=on_progress)
    return [[per_rank[rank][i] for rank in range(config.world_size)] for i in range(len(configs))]


def _call_job(ctx: RankContext, job: tuple) -> Any:
    worker, config = job
    return worker(ctx, config)


def run(jobs: tuple[tuple[Callable, Any], ...], *, world_size: int = 2, timeout_s: float = 120.0,
        backend: Backend = "auto") -> list[list]:
    """The course's multi-rank runner shape: run each ``(worker, config)`` job on ``world_size`` ranks in ONE
    launch and return ``result[job][rank]``.

    Experiment modules expose ``run(configs, *, world_size, timeout_s)`` on top of this (or of
    :func:`launch_each` when every config uses the same worker); mixing workers in one launch saves the
    start-up of a process group per experiment (seconds per rank on a small machine).
    """
    return launch_each(_call_job, tuple(jobs),
                       config=LaunchConfig(world_size=world_size, timeout_s=timeout_s, backend=backend))


def run_under_torchrun(fn: Callable, *args: Any, backend: Backend = "auto", gpu_compute: bool = False) -> Any:
    """Run ``fn(ctx, *args)`` in a process started by torchrun (which sets RANK, WORLD_SIZE, ...).

    For ``if __name__ == "__main__": run_under_torchrun(fn)`` at the end of an experiment module. The process
    group is created from the environment (``env://``) and destroyed in ``finally``.
    """
    needed = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
    missing = [name for name in needed if name not in os.environ]
    if missing:
        raise ValueError("run_under_torchrun needs the variables torchrun sets; "
                         f"missing {', '.join(missing)}. Start it with: "
                         "torchrun --standalone --nproc-per-node 2 -m <module>, "
                         "or call aihw.parallel.launch.launch() from Python")
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    local_world_size = int(os.environ.get("LOCAL_WORLD_SIZE", world_size))
    choice = pick_backend(local_world_size, preference=backend, gpu_compute=gpu_compute)
    device = _rank_device(choice.device_type, local_rank)
    dist.init_process_group(choice.backend, init_method="env://", rank=rank, world_size=world_size)
    try:
        return fn(RankContext(rank, world_size, local_rank, choice.backend, device), *args)
    finally:
        dist.destroy_process_group()
