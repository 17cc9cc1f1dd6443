"""torchrun runs the data-parallel module: standalone with 2 ranks, and as two "nodes" on this machine (loopback
c10d rendezvous); the ranks end with equal weights."""

from __future__ import annotations

import socket
import subprocess
import sys
import uuid

import pytest

pytestmark = pytest.mark.distributed


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start_nodes(port: int) -> list[subprocess.Popen]:
    run_id = uuid.uuid4().hex[:8]
    return [subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--node-rank", str(node),
         "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
         "--rdzv-id", run_id, "--max-restarts", "0",
         "-m", "aihw.parallel.data_parallel", "--mode", "naive", "--steps", "5", "--global-batch", "16"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for node in (0, 1)]


def test_two_nodes_train_together():
    for _attempt in range(3):  # a port taken between choosing and binding: pick another, never fail
        nodes = _start_nodes(_free_port())
        try:
            outputs = [node.communicate(timeout=150) for node in nodes]
        finally:
            for node in nodes:
                if node.poll() is None:
                    node.kill()
                    node.wait()
        if all(node.returncode == 0 for node in nodes) or not any("Address already in use" in err
                                                                  for _, err in outputs):
            break
    for node, (_, err) in zip(nodes, outputs, strict=True):
        assert node.returncode == 0, err[-3000:]
    lines = [line for out, _ in outputs for line in out.splitlines() if line.startswith("rank ")]
    assert sorted(line.split()[1] for line in lines) == ["0/2", "1/2"]
    digests = {line.split("weights_sha256=")[1] for line in lines}
    assert len(digests) == 1, lines  # both "nodes" hold bit-identical weights after training


def test_standalone_torchrun_trains_and_says_which_backend():
    # --standalone lets the rendezvous pick a free port itself: a port in use elsewhere cannot collide
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         "-m", "aihw.parallel.data_parallel", "--mode", "ddp", "--steps", "3", "--global-batch", "16"],
        capture_output=True, text=True, timeout=150)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if line.startswith("rank ")]
    assert sorted(line.split()[1] for line in lines) == ["0/2", "1/2"]
    assert len({line.split("weights_sha256=")[1] for line in lines}) == 1
    assert "backend gloo: no CUDA GPU is available" in proc.stdout or "backend nccl" in proc.stdout
