"""Every CUDA-only operator call of the package, run on fake CUDA tensors on the CPU, for each compute capability.

``FakeTensorMode`` runs torch's own meta kernels (the same shape, dtype and layout checks the CUDA kernels make)
on tensors that claim to live on ``cuda:0``; nothing is computed. Operands are prepared the way the package
prepares them (on the CPU where that needs indexing, which fake CUDA tensors of a CPU-only torch do not allow),
then handed to :mod:`aihw.measure.cuda_ops` as fake CUDA tensors of the same shape, dtype and strides. For each
chip, a call runs here exactly when :mod:`aihw.chips.capability` lets that chip run it.
"""

from __future__ import annotations

import logging

import pytest
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

from aihw.chips.capability import Capability
from aihw.measure import cuda_ops

logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)  # expected failures log otherwise

CHIPS = {"T4": (7, 5), "A100": (8, 0), "L4": (8, 9), "H100": (9, 0)}


def fake_cuda(t: torch.Tensor) -> torch.Tensor:
    """Inside a FakeTensorMode: a fake cuda:0 tensor with ``t``'s shape, dtype and strides."""
    return torch.empty_strided(tuple(t.shape), t.stride(), dtype=t.dtype, device="cuda")


def _is_fake_cuda(t: torch.Tensor) -> bool:
    return isinstance(t, FakeTensor) and t.device == torch.device("cuda", 0)


def int4_call(k: int):
    from aihw.cheaper import quantize_model as qm

    w = torch.randn(64, k)
    q, sz = qm.int4_weight_only(w, 128)  # the package's quantiser, on the CPU
    q_uint8 = (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8)  # the packing _int4_matmul does before the kernel
    x, sz16 = torch.randn(16, k, dtype=torch.bfloat16), sz.to(torch.bfloat16)
    with FakeTensorMode():
        packed = cuda_ops.pack_int4(fake_cuda(q_uint8), 8)
        return cuda_ops.int4_weight_mm(fake_cuda(x), packed, 128, fake_cuda(sz16))


def int8_weight_call(half: torch.dtype):
    from aihw.cheaper import quantize_model as qm

    q8, s8 = qm.int8_weight_only(torch.randn(64, 256))
    x, s = torch.randn(16, 256, dtype=half), s8.to(half)
    with FakeTensorMode():
        return cuda_ops.int8_weight_mm(fake_cuda(x), fake_cuda(q8), fake_cuda(s))


def fp8_layer_call():
    """The operands Fp8Linear hands _scaled_mm: its FP8 weight transposed (a column-major view), scalar scales."""
    from aihw.cheaper.quantize import choose_qparams, quantize
    from aihw.cheaper.quantize_model import Fp8Linear

    layer = Fp8Linear(nn.Linear(256, 64, bias=False), real=True)  # weights quantised by the package, on the CPU
    x = torch.randn(16, 256)
    x_qp = choose_qparams(x, layer.SCHEME)
    x_fp8, w_t = quantize(x, x_qp), layer.w_fp8.t()
    sa, sb = x_qp.scale.reshape(()), layer.w_qparams.scale.reshape(())
    with FakeTensorMode():
        return cuda_ops.fp8_mm(fake_cuda(x_fp8), fake_cuda(w_t), fake_cuda(sa), fake_cuda(sb))


def roofline_fp8_call():
    from aihw.measure.roofline import _matmul_op

    with FakeTensorMode():
        return _matmul_op("fp8", 64, torch.device("cuda", 0))()


def int8_mm_call():
    from aihw.measure.gpu_report import int8_operands

    with FakeTensorMode():
        a8, b8 = int8_operands(64, torch.device("cuda", 0))
        return cuda_ops.int8_mm(a8, b8)


@pytest.mark.parametrize("chip", sorted(CHIPS))
def test_every_cuda_only_call_the_chip_may_run_accepts_the_package_operands(chip):
    cap = Capability(*CHIPS[chip])
    half = torch.bfloat16 if cap.half_dtype == "bf16" else torch.float16
    calls = {"int8 weight-only": (None, lambda: int8_weight_call(half), (16, 64)),
             "int4 weight-only": ("int4 weight-only", lambda: int4_call(256), (16, 64)),
             "fp8 layer": ("fp8", fp8_layer_call, (16, 64)),
             "fp8 roofline": ("fp8", roofline_fp8_call, (64, 64)),
             "int8 _int_mm": ("int8", int8_mm_call, (64, 64))}
    ran = set()
    for name, (feature, call, shape) in calls.items():
        if feature is not None and not cap.has(feature):
            continue
        out = call()
        assert _is_fake_cuda(out) and tuple(out.shape) == shape, (name, out)
        ran.add(name)
    expected = {"T4": {"int8 weight-only", "int8 _int_mm"},
                "A100": {"int8 weight-only", "int8 _int_mm", "int4 weight-only"}}.get(chip, set(calls))
    assert ran == expected


def test_the_fake_layer_catches_the_errors_a_gpu_would_raise():
    with FakeTensorMode():
        # K = 64 (the old availability probe): the packer's K / 128 tiles round down to none; CUDA refuses it
        assert cuda_ops.pack_int4(torch.empty(64, 32, dtype=torch.uint8, device="cuda"), 8).shape[1] == 0
        assert cuda_ops.pack_int4(torch.empty(64, 64, dtype=torch.uint8, device="cuda"), 8).shape[1] == 1
        with pytest.raises(RuntimeError, match="uint8"):  # unpacked int32 codes (the pre-2.5 layout)
            cuda_ops.pack_int4(torch.empty(64, 128, dtype=torch.int32, device="cuda"), 8)
        a = torch.empty(16, 64, device="cuda").to(torch.float8_e4m3fn)
        b = torch.empty(32, 64, device="cuda").to(torch.float8_e4m3fn)
        one = torch.ones((), device="cuda")
        with pytest.raises(RuntimeError, match="col_major"):
            cuda_ops.fp8_mm(a, torch.empty(64, 32, device="cuda").to(torch.float8_e4m3fn), one, one)  # row-major B
        cuda_ops.fp8_mm(a, b.t(), one, one)  # the column-major view the package passes
