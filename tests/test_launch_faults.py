"""The launcher under attack and under fault: what a local run listens on, and kills, interrupts and stray
processes from outside. Each test checks the outcome (who is still alive), never how long it took.

Robust on a loaded machine: every wait is for an event (a pid file, a process ending, a signal noted by a rank)
with a generous deadline that only a broken launcher reaches, never a fixed sleep; a stop's grace period is
passed explicitly (LaunchConfig.stop_grace_s) where the test needs a short or a long one."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from aihw.parallel import _demo_workers as workers
from aihw.parallel.launch import MAX_STOP_GRACE_S, LaunchConfig, WorkerError, launch

pytestmark = pytest.mark.distributed

LOOPBACK = {"127.0.0.1", "::1"}
PATIENCE_S = 240.0  # generous: start-up on a loaded 2-core machine takes seconds per rank (tens at load 25)

# A launching process of its own, for the tests that signal or kill the parent: argv = folder for the pid files,
# "obey" or "ignore" (SIGTERM), and the grace period between SIGTERM and SIGKILL when the ranks are stopped.
DRIVER = """
import sys
from aihw.parallel import _demo_workers as workers
from aihw.parallel.launch import LaunchConfig, launch
config = LaunchConfig(world_size=2, timeout_s=300, stop_grace_s=float(sys.argv[3]))
try:
    if sys.argv[4] == "return_when_orphaned":
        launch(workers.return_when_orphaned, sys.argv[1], config=config)
    else:
        launch(workers.record_pid_then_wait, sys.argv[1], sys.argv[2] == "ignore", True, config=config)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
"""

SOCKETS_DRIVER = """
import json
from aihw.parallel import _demo_workers as workers
from aihw.parallel.launch import LaunchConfig, launch
if __name__ == "__main__":
    print(json.dumps(launch(workers.listening_sockets, config=LaunchConfig(world_size=2, timeout_s=200))[0]))
"""

SUM_DRIVER = """
from aihw.parallel import _demo_workers as workers
from aihw.parallel.launch import LaunchConfig, launch
print(sum(r["total"] for r in launch(workers.all_reduce_sum, config=LaunchConfig(world_size=2, timeout_s=200))))
"""


def _alive(pid: int) -> bool:
    """True if ``pid`` runs (zombies, which only wait to be reaped, count as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _wait_for(predicate, what: str, timeout_s: float = PATIENCE_S,
              driver: subprocess.Popen | None = None) -> None:
    """Poll ``predicate`` until true; fail after ``timeout_s``, or at once if ``driver`` (a launching process
    the awaited event depends on) has ended."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if driver is not None and driver.poll() is not None:
            raise AssertionError(f"the launching process ended (exit code {driver.returncode}) before {what}: "
                                 f"{driver.stderr.read()[-2000:] if driver.stderr else ''}")
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.05)


def _assert_all_end(pids: list[int], what: str) -> None:
    """Every process in ``pids`` ends. A SIGKILLed process is gone moments after the signal, not at the instant
    it is sent (later still on a loaded machine), so this waits with a generous deadline; processes nobody
    stopped (a rank's child sleeps an hour) are still there when it runs out."""
    deadline = time.monotonic() + PATIENCE_S
    while (left := [pid for pid in pids if _alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, f"{what} outlived the run: {left}"


def _pids(folder: Path, world_size: int = 2, child: bool = True,
          driver: subprocess.Popen | None = None) -> list[int]:
    names = [f"rank{r}.pid" for r in range(world_size)]
    if child:
        names += [f"rank{r}.child.pid" for r in range(world_size)]
    _wait_for(lambda: all((folder / n).exists() for n in names), f"the ranks to write {names}", driver=driver)
    return [int((folder / n).read_text()) for n in names]


def _start_driver(folder: Path, sigterm: str = "obey", stop_grace_s: float = 3.0,
                  worker: str = "record_pid_then_wait") -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", DRIVER, str(folder), sigterm, str(stop_grace_s), worker],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(process: subprocess.Popen) -> tuple[str, str]:
    try:
        return process.communicate(timeout=PATIENCE_S)
    except subprocess.TimeoutExpired:
        process.kill()
        raise


# ----- what a local run listens on -----------------------------------------------------------------------

def _check_loopback_only(sockets: list, launcher_pid: int) -> None:
    assert sockets, "found no listening socket at all (the store must be one)"
    assert {pid for pid, _, _ in sockets} - {launcher_pid}, f"no rank listens (gloo does): {sockets}"
    assert launcher_pid in {pid for pid, _, _ in sockets}, f"the store is not among {sockets}"
    exposed = [s for s in sockets if s[1] not in LOOPBACK]
    assert not exposed, f"listening beyond loopback (pid, address, port): {exposed}"


def test_every_listening_socket_of_a_run_is_on_loopback():
    sockets = launch(workers.listening_sockets, config=LaunchConfig(world_size=2, timeout_s=PATIENCE_S))[0]
    _check_loopback_only([tuple(s) for s in sockets], os.getpid())


def _lan_address() -> str | None:
    """This machine's address on its default route, without sending anything (None if it has none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: connecting a UDP socket only picks a route
        except OSError:
            return None
        address = probe.getsockname()[0]
    return None if address.startswith("127.") else address


def _namespaces_work() -> bool:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"], capture_output=True)
    return probe.returncode == 0


def test_loopback_only_even_when_the_hostname_resolves_to_a_lan_address(tmp_path):
    """In a private mount namespace /etc/hosts maps this machine's name to its LAN address (as on an ordinary
    machine), which is where gloo binds unless pinned; the run must still listen on loopback only."""
    address = _lan_address()
    if address is None or not _namespaces_work():
        pytest.skip("needs a non-loopback address and unprivileged mount namespaces (unshare)")
    hosts = tmp_path / "hosts"
    hosts.write_text(f"127.0.0.1 localhost\n::1 localhost\n{address} {socket.gethostname()}\n")
    script = tmp_path / "sockets.py"
    script.write_text(SOCKETS_DRIVER)
    shell = (f'mount --bind "{hosts}" /etc/hosts && '
             f'"{sys.executable}" -c "import socket; print(socket.gethostbyname(socket.gethostname()))" && '
             f'exec "{sys.executable}" "{script}"')
    done = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", shell],
                          capture_output=True, text=True, timeout=PATIENCE_S)
    assert done.returncode == 0, done.stderr[-3000:]
    resolved, listing = done.stdout.strip().splitlines()[-2:]
    assert resolved == address  # the hostname really resolves elsewhere inside the namespace
    sockets = [tuple(s) for s in json.loads(listing)]
    assert sockets and {addr for _, addr, _ in sockets} <= LOOPBACK, sockets


# ----- faults ----------------------------------------------------------------------------------------------

def test_rank_killed_mid_collective_is_named_and_nothing_is_left(tmp_path):
    """Rank 0 waits in an all-reduce; rank 1 is SIGKILLed from outside before joining it."""
    folder = tmp_path

    def kill_rank_one() -> None:
        rank0, rank1, child0, child1 = _pids(folder)
        os.kill(rank1, signal.SIGKILL)

    killer = threading.Thread(target=kill_rank_one, daemon=True)  # an error here shows as missing pid files
    killer.start()
    with pytest.raises(WorkerError) as info:
        launch(workers.record_pid_then_wait, str(folder), False, True,
               config=LaunchConfig(world_size=2, timeout_s=PATIENCE_S))
    killer.join()
    assert info.value.rank == 1 and info.value.exitcode == -signal.SIGKILL
    assert "SIGKILL" in str(info.value)
    _assert_all_end(_pids(folder), "ranks or their children")


class _StopTheRun(Exception):
    """Raised in the launching process to stop a run (as any error there, or Ctrl-C, would)."""


def test_rank_that_ignores_sigterm_and_its_child_are_killed(tmp_path):
    """An error in the launching process (here from the progress callback, once every rank has written its
    pids) stops the run: the launcher sends SIGTERM, which the ranks and their children ignore, and after the
    grace period (short here, passed explicitly) SIGKILL must end them all."""
    def stop_once_all_have_started(message: str) -> None:
        _pids(tmp_path)
        raise _StopTheRun(message)

    with pytest.raises(_StopTheRun):
        launch(workers.record_pid_then_wait, str(tmp_path), True, True, on_progress=stop_once_all_have_started,
               config=LaunchConfig(world_size=2, timeout_s=PATIENCE_S, stop_grace_s=1.0))
    _assert_all_end(_pids(tmp_path), "ranks that ignore SIGTERM or their children")


def test_a_ranks_own_child_does_not_outlive_a_successful_run(tmp_path):
    launch(workers.record_pid_then_wait, str(tmp_path), False, True, 0.0,
           config=LaunchConfig(world_size=2, timeout_s=PATIENCE_S))
    _assert_all_end(_pids(tmp_path), "processes started by ranks")


def test_a_child_in_a_new_session_does_not_outlive_the_run(tmp_path):
    """Signals to a rank's process group miss a child that started a session of its own; the launcher finds it
    by walking /proc for the rank's descendants."""
    launch(workers.start_session_child, str(tmp_path), config=LaunchConfig(world_size=2, timeout_s=PATIENCE_S))
    _assert_all_end(_pids(tmp_path), "children started in a new session")


def test_interrupt_stops_the_ranks_and_their_children(tmp_path):
    driver = _start_driver(tmp_path)
    pids = _pids(tmp_path, driver=driver)
    driver.send_signal(signal.SIGINT)
    out, err = _finish(driver)
    assert driver.returncode == 130 and "interrupted" in out, err[-2000:]
    _assert_all_end(pids, "ranks or their children of the interrupted run")


def test_second_interrupt_during_the_stop_grace_period_still_stops_everything(tmp_path):
    """The ranks ignore SIGTERM, so stopping them waits out the grace period; a second Ctrl-C arrives then.

    The grace period (the longest a launch accepts) is longer than the test's patience, so the run ends in time
    only if the second interrupt cuts it short; the test sends it once a rank has noted the launcher's SIGTERM,
    that is, inside the grace period whatever the machine's load."""
    assert MAX_STOP_GRACE_S > 2 * PATIENCE_S
    driver = _start_driver(tmp_path, sigterm="ignore", stop_grace_s=MAX_STOP_GRACE_S)
    pids = _pids(tmp_path, driver=driver)
    driver.send_signal(signal.SIGINT)
    _wait_for(lambda: any(tmp_path.glob("rank*.sigterm")), "a rank to note the launcher's SIGTERM", driver=driver)
    driver.send_signal(signal.SIGINT)
    out, err = _finish(driver)
    assert driver.returncode == 130 and "interrupted" in out, err[-2000:]
    _assert_all_end(pids, "ranks or their children of the twice-interrupted run")


@pytest.mark.parametrize("worker", ["record_pid_then_wait", "return_when_orphaned"])
def test_ranks_and_their_children_die_when_the_parent_is_killed(tmp_path, worker):
    """SIGKILL gives the parent no chance to clean up: the ranks' orphan watcher must end them, and a rank that
    ends on its own first (as when its collective fails because the parent's store is gone) ends its children
    on the way out."""
    driver = _start_driver(tmp_path, worker=worker)
    pids = _pids(tmp_path, driver=driver)
    driver.kill()
    driver.wait(timeout=PATIENCE_S)  # not communicate(): the orphans still hold the driver's pipes until they end
    _assert_all_end(pids, "the orphaned ranks or their children")
    driver.stdout.close()
    driver.stderr.close()


def test_two_launches_from_two_processes_at_once():
    drivers = [subprocess.Popen([sys.executable, "-c", SUM_DRIVER], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outcomes = [_finish(d) for d in drivers]
    for driver, (out, err) in zip(drivers, outcomes, strict=True):
        assert driver.returncode == 0, err[-2000:]
        assert out.strip() == "6.0"  # two ranks, each holding 1 + 2 after the all-reduce
