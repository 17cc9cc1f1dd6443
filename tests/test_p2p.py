"""Point-to-point helpers: a 2-rank ping-pong moves the right tensors and records honest sizes and times."""

import pytest
import torch

from aihw.parallel import p2p
from aihw.parallel.launch import LaunchConfig, launch
from aihw.runtime.tensors import tensor_bytes


def ping_pong(ctx):
    """Rank 0 sends an activation forward; rank 1 returns a gradient (module-level: spawn imports it)."""
    shape = (2, 3, 5)
    if ctx.rank == 0:
        pending, sent = p2p.send_forward(torch.arange(30.0).view(shape), rank=0, micro_batch=7)
        grad, got = p2p.recv_backward(shape, rank=0, micro_batch=7)
        p2p.wait_all([pending])
        return sent, got, grad
    x, got = p2p.recv_forward(shape, rank=1, micro_batch=7)
    pending, sent = p2p.send_backward(-x.detach(), rank=1, micro_batch=7)
    p2p.wait_all([pending])
    return sent, got, x


def test_tensor_bytes():
    assert tensor_bytes(torch.zeros(4, 8)) == 128
    assert tensor_bytes(torch.zeros(4, 8, dtype=torch.bfloat16)) == 64


@pytest.mark.distributed
def test_ping_pong():
    (sent0, got0, grad), (sent1, got1, x) = launch(ping_pong, config=LaunchConfig(world_size=2, backend="gloo"))
    torch.testing.assert_close(x, torch.arange(30.0).view(2, 3, 5))
    torch.testing.assert_close(grad, -torch.arange(30.0).view(2, 3, 5))
    assert x.requires_grad  # ready to receive a gradient
    for record, kind, peer, tag in ((sent0, "send", 1, "activation"), (got1, "recv", 0, "activation"),
                                    (sent1, "send", 0, "gradient"), (got0, "recv", 1, "gradient")):
        assert (record.kind, record.peer, record.tag, record.micro_batch, record.nbytes) == (kind, peer, tag, 7, 120)
        assert record.end >= record.start
    assert got1.end >= sent0.start  # one clock for both processes: arrival after posting
