"""The multi-process launcher: real gloo ranks on this CPU, failures, timeouts, and no leftover processes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
import types

import pytest
import torch

from aihw.parallel import _demo_workers as workers
from aihw.parallel.launch import (
    STOP_GRACE_S,
    LaunchConfig,
    WorkerError,
    WorkerTimeout,
    launch,
    run_under_torchrun,
)

pytestmark = pytest.mark.distributed


def _live_children() -> list[int]:
    """Running descendants of this process, except multiprocessing's shared resource tracker."""
    try:
        import psutil
    except ImportError:
        return _live_children_from_proc()
    alive = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE and "resource_tracker" not in " ".join(child.cmdline()):
                alive.append(child.pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def _live_children_from_proc() -> list[int]:
    import multiprocessing

    alive = [p.pid for p in multiprocessing.active_children()]
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z" and b"resource_tracker" not in cmdline:
            alive.append(int(entry))
    return sorted(set(alive))


@pytest.fixture
def no_leftover_processes():
    before = set(_live_children())
    yield
    leftover = set(_live_children()) - before
    assert not leftover, f"processes outlived the run: {sorted(leftover)}"


def test_two_rank_all_reduce_gives_sum_on_every_rank_in_rank_order(no_leftover_processes):
    messages = []
    results = launch(workers.all_reduce_sum, config=LaunchConfig(world_size=2, timeout_s=60),
                     on_progress=messages.append)
    assert messages == ["summed on 2 ranks"]  # rank 0's progress report, delivered in the parent
    assert [r["rank"] for r in results] == [0, 1]
    assert [r["total"] for r in results] == [workers.expected_sum(2)] * 2 == [3.0, 3.0]
    assert all(r["backend"] == "gloo" and r["threads"] == 1 for r in results)
    assert len({r["pid"] for r in results} | {os.getpid()}) == 3  # separate processes


def test_raising_rank_reports_its_traceback_and_stops_the_others(no_leftover_processes):
    start = time.monotonic()
    with pytest.raises(WorkerError) as info:
        launch(workers.raise_on_rank, 1, "boom from the test",
               config=LaunchConfig(world_size=2, timeout_s=60))
    assert time.monotonic() - start < 30  # rank 0 sits in a barrier forever; it must be stopped, not awaited
    assert info.value.rank == 1
    assert "rank 1 failed:" in str(info.value)
    assert "RuntimeError: boom from the test on rank 1" in str(info.value)
    assert "raise_on_rank" in info.value.remote_traceback


def test_hanging_rank_times_out_and_is_stopped(no_leftover_processes):
    timeout_s = 5.0
    start = time.monotonic()
    with pytest.raises(WorkerTimeout) as info:
        launch(workers.hang_on_rank, 1, config=LaunchConfig(world_size=2, timeout_s=timeout_s))
    assert time.monotonic() - start < timeout_s + STOP_GRACE_S + 5
    assert 1 in info.value.ranks
    assert "timeout_s=5.0" in str(info.value)


def test_rank_that_exits_without_reporting_names_its_exit_code(no_leftover_processes):
    with pytest.raises(WorkerError) as info:
        launch(workers.exit_on_rank, 1, 3, config=LaunchConfig(world_size=2, timeout_s=60))
    assert info.value.rank == 1 and info.value.exitcode == 3
    assert "rank 1 failed:" in str(info.value) and "exit code 3" in str(info.value)


def test_two_launches_at_once_three_and_two_ranks_get_separate_ports(no_leftover_processes):
    """Also the 3-rank sum and threads_per_rank, so the file starts fewer processes on a 2-core machine."""
    configs = [LaunchConfig(world_size=3, timeout_s=120, threads_per_rank=2),
               LaunchConfig(world_size=2, timeout_s=120)]
    outcomes: dict[int, object] = {}

    def run(index: int) -> None:
        try:
            outcomes[index] = launch(workers.all_reduce_sum, config=configs[index])
        except Exception as exc:  # recorded, then asserted on in the main thread
            outcomes[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(150)
    three, two = outcomes[0], outcomes[1]
    assert [r["rank"] for r in three] == [0, 1, 2], three
    assert [r["total"] for r in three] == [workers.expected_sum(3)] * 3 == [6.0] * 3
    assert [r["threads"] for r in three] == [2, 2, 2]
    assert [r["total"] for r in two] == [3.0, 3.0], two


def _nested_worker_factory():
    def nested(ctx):
        return ctx.rank
    return nested


@pytest.mark.parametrize("fn", [lambda ctx: ctx.rank, _nested_worker_factory()], ids=["lambda", "closure"])
def test_worker_without_importable_name_is_refused(fn):
    with pytest.raises(ValueError, match=r"define the worker in a module \(spawn cannot pickle functions "
                                         r"defined in a notebook\)"):
        launch(fn, config=LaunchConfig(world_size=2))


def test_worker_defined_in_a_notebook_main_is_refused(monkeypatch):
    notebook_main = types.ModuleType("__main__")  # a kernel's __main__ has no __file__
    monkeypatch.setitem(sys.modules, "__main__", notebook_main)

    def cell_worker(ctx):
        return ctx.rank

    cell_worker.__module__, cell_worker.__qualname__ = "__main__", "cell_worker"
    notebook_main.cell_worker = cell_worker
    with pytest.raises(ValueError, match=r"'cell_worker' is defined in __main__.*define the worker in a mod"):
        launch(cell_worker, config=LaunchConfig(world_size=2))


def test_unpicklable_arguments_are_refused_before_starting():
    with pytest.raises(ValueError, match="picklable"):
        launch(workers.all_reduce_sum, threading.Lock(), config=LaunchConfig(world_size=2))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only answer")
def test_nccl_on_cpu_machine_is_refused_before_starting():
    with pytest.raises(ValueError, match="nccl.*no CUDA GPU"):
        launch(workers.all_reduce_sum, config=LaunchConfig(world_size=2, backend="nccl"))


@pytest.mark.parametrize(("field", "value", "pattern"), [
    ("world_size", 0, r"world_size must be an integer in \[1, 16\].*max_world_size, default 16"),
    ("world_size", 17, r"world_size .*\[1, 16\].*got 17"),
    ("world_size", 2.0, r"world_size .*got 2\.0"),
    ("timeout_s", 0, r"timeout_s must be a positive.*got 0"),
    ("timeout_s", float("nan"), r"timeout_s.*got nan"),
    ("backend", "glo", r"unknown backend 'glo'; allowed: auto, gloo, nccl; did you mean 'gloo'"),
    ("threads_per_rank", 0, r"threads_per_rank must be an integer in \[1, 1024\], got 0"),
    ("stop_grace_s", 0, r"stop_grace_s must be a positive.*got 0"),
    ("stop_grace_s", float("inf"), r"stop_grace_s must be a finite number"),
    ("stop_grace_s", 2.0**31, r"stop_grace_s must be at most 600 s"),
    ("timeout_s", 1e14, r"timeout_s must be at most 604,800 s"),
])
def test_bad_config_values_are_named(field, value, pattern):
    with pytest.raises(ValueError, match=pattern):
        LaunchConfig(**{field: value})


def test_max_world_size_can_be_raised():
    assert LaunchConfig(world_size=32, max_world_size=64).world_size == 32


def test_run_under_torchrun_outside_torchrun_says_how_to_start(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match=r"missing RANK, WORLD_SIZE.*torchrun --standalone"):
        run_under_torchrun(workers.all_reduce_sum)


def test_demo_worker_runs_under_torchrun():
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               "-m", "aihw.parallel._demo_workers"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = sorted(re.findall(r"rank \d/2 backend=\w+ total=\d+ expected=\d+", done.stdout))
    assert lines == ["rank 0/2 backend=gloo total=3 expected=3", "rank 1/2 backend=gloo total=3 expected=3"]


def test_sigint_deferred_holds_ctrl_c_until_the_block_ends():
    import signal as _signal

    from aihw.parallel.launch import _sigint_deferred

    reached_end = False
    with pytest.raises(KeyboardInterrupt):
        with _sigint_deferred():
            _signal.raise_signal(_signal.SIGINT)
            reached_end = True  # the interrupt waits for the end of the block
    assert reached_end and _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler


def test_worker_from_python_stdin_gets_the_module_hint():
    import subprocess
    import sys

    code = ("from aihw.parallel.launch import launch\n"
            "def work(ctx):\n    return 1\n"
            "try:\n    launch(work)\nexcept ValueError as e:\n    print('ValueError:', e)\n")
    out = subprocess.run([sys.executable, "-"], input=code, capture_output=True, text=True, timeout=120)
    assert "define the worker in a module" in out.stdout, out.stdout + out.stderr[-2000:]
