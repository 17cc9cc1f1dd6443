"""Weight-only quantized decode: INT8 per channel and INT4 per group with two nibbles per byte.

Decode at small batch reads every weight once per token, so storing weights in fewer bytes should make it faster
in proportion, as long as the kernel reads the narrow weights and widens them on the fly rather than first
writing a full-width copy. Two kernels per format, always labelled:

* ``"aten"``: PyTorch's packed-weight matmuls, the kernels torchao and gpt-fast call for weight-only
  quantization (``torch._weight_int8pack_mm``; ``torch._weight_int4pack_mm_for_cpu`` on the CPU and
  ``torch._weight_int4pack_mm`` on CUDA). They are private ``aten`` ops, so they are probed before use and
  :func:`available_kernels` says which run here. torchao itself is not required.
* ``"reference"``: the course's own kernel in plain torch: unpack, dequantize to the activation dtype, matmul.
  It is exact and easy to read, and it moves *more* bytes than the full-precision model (it writes and reads the
  widened copy), which is the point it makes.

The scales come from the course's quantizer (:mod:`aihw.cheaper.quantize`): INT8 symmetric per output channel,
INT4 asymmetric per group of ``group`` inputs (as GPTQ/AWQ checkpoints store them).
"""

from __future__ import annotations

import copy
import functools
from typing import Literal, get_args

import torch
from torch import nn

from aihw._validate import require_choice
from aihw.cheaper.quantize import PerChannel, PerGroup, QuantScheme, choose_qparams, quantize
from aihw.chips.capability import INT4_K_MULTIPLE, Capability
from aihw.inference.model import GenGPT
from aihw.measure import cuda_ops

WeightDtype = Literal["int8", "int4"]
WEIGHT_DTYPES: tuple[str, ...] = get_args(WeightDtype)
Kernel = Literal["aten", "reference"]
KERNELS: tuple[str, ...] = get_args(Kernel)
INT4_GROUP = 32


def pack_int4(q: torch.Tensor) -> torch.Tensor:
    """(N, K) values in [0, 15] -> (N, K / 2) uint8, element 2j in the low nibble, 2j+1 in the high one."""
    q = q.to(torch.uint8)
    return q[:, 0::2] | (q[:, 1::2] << 4)


def unpack_int4(packed: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`pack_int4`: (N, K / 2) uint8 -> (N, K) uint8 in [0, 15]."""
    lo, hi = packed & 0xF, packed >> 4
    return torch.stack([lo, hi], dim=-1).reshape(packed.shape[0], -1)


@functools.cache
def available_kernels(device_type: str = "cpu") -> dict[str, str]:
    """For each weight dtype, "aten" if PyTorch's packed kernel runs on this device type, else the reason."""
    out: dict[str, str] = {}
    dtypes: tuple[WeightDtype, ...] = ("int8", "int4")
    k = INT4_K_MULTIPLE  # the CUDA int4 packer needs in_features % 128 == 0: a smaller probe always fails there
    for dtype in dtypes:
        try:
            layer = QuantizedLinear(nn.Linear(k, 64, bias=False).to(device_type), dtype, "aten")
            layer(torch.zeros(1, k, device=device_type, dtype=torch.bfloat16))
            out[dtype] = "aten"
        except (RuntimeError, AttributeError, NotImplementedError) as err:
            out[dtype] = f"unavailable: {str(err).splitlines()[0][:120]}"
    return out


def _require_cuda_int4(device: torch.device, in_features: int) -> None:
    """Refuse the CUDA int4 kernel where it would fail or return garbage: below sm_80, or K % 128 != 0."""
    major, minor = torch.cuda.get_device_capability(device)
    reason = Capability(int(major), int(minor)).skip_reason("int4 weight-only")
    if reason is not None:
        raise RuntimeError(reason)
    if in_features % INT4_K_MULTIPLE:
        raise ValueError(f"the CUDA int4 kernel needs in_features divisible by {INT4_K_MULTIPLE}, got {in_features}")


class QuantizedLinear(nn.Module):
    """A Linear with INT8 or INT4 weights; activations and bias in bf16 (the ``aten`` kernels' dtype)."""

    q: torch.Tensor  # int8: (N, K) codes
    scale: torch.Tensor  # int8: (N,); int4 reference: (N, K / group)
    zero: torch.Tensor  # int4 reference: (N, K / group)
    packed: torch.Tensor  # int4: two codes per byte (reference) or the aten kernel's opaque layout
    scales_and_zeros: torch.Tensor  # int4 aten: (K / group, N, 2)
    bias: torch.Tensor | None

    def __init__(self, linear: nn.Linear, dtype: WeightDtype, kernel: Kernel = "aten") -> None:
        super().__init__()
        self.dtype, self.kernel = require_choice("dtype", dtype, WEIGHT_DTYPES), require_choice("kernel", kernel,
                                                                                                KERNELS)
        w = linear.weight.detach().float()
        self.out_features, self.in_features = w.shape
        bias = None if linear.bias is None else linear.bias.detach().to(torch.bfloat16)
        self.register_buffer("bias", bias)
        if dtype == "int8":
            qp = choose_qparams(w, QuantScheme("int8", PerChannel(0)))
            self.register_buffer("q", quantize(w, qp))  # (N, K) int8
            self.register_buffer("scale", qp.scale.to(torch.bfloat16))  # (N,)
            return
        if self.in_features % INT4_GROUP or self.in_features % 2:
            raise ValueError(f"int4 needs in_features divisible by {INT4_GROUP}, got {self.in_features}")
        qp = choose_qparams(w, QuantScheme("int4", PerGroup(INT4_GROUP), symmetric=False))
        q = quantize(w, qp).to(torch.int32) + 8  # [-8, 7] -> [0, 15]
        groups = self.in_features // INT4_GROUP
        scale = qp.scale.view(self.out_features, groups)
        zero = -qp.zero_point.view(self.out_features, groups).float() * scale  # w = (q - 8) * scale + zero
        if kernel == "aten":
            if w.device.type == "cpu":
                packed = torch._convert_weight_to_int4pack_for_cpu(q, 1)
            else:  # CUDA layout (as gpt-fast/torchao): element 2j in the HIGH nibble; not run on this course's CI
                _require_cuda_int4(w.device, self.in_features)
                hi_first = (q[:, 0::2] << 4 | q[:, 1::2]).to(torch.uint8)
                packed = cuda_ops.pack_int4(hi_first, 8)
            self.register_buffer("packed", packed)
            self.register_buffer("scales_and_zeros", torch.stack([scale.T, zero.T], dim=-1).to(torch.bfloat16)
                                 .contiguous())  # (K / group, N, 2)
        else:
            self.register_buffer("packed", pack_int4(q))  # (N, K / 2) uint8: two weights per byte
            self.register_buffer("scale", scale.to(torch.bfloat16))  # (N, K / group)
            self.register_buffer("zero", zero.to(torch.bfloat16))

    def dequantized_weight(self) -> torch.Tensor:
        """The bf16 weight the kernel computes with (the reference kernel's first step)."""
        if self.dtype == "int8":
            return self.q.to(torch.bfloat16) * self.scale[:, None]
        q = unpack_int4(self.packed) if self.kernel == "reference" else None
        if q is None:
            raise ValueError("the aten int4 layout is opaque; use kernel='reference' to read weights back")
        g = (q.view(self.out_features, -1, INT4_GROUP).to(torch.bfloat16) - 8) * self.scale[..., None]
        return (g + self.zero[..., None]).view(self.out_features, self.in_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        x2 = x.reshape(-1, shape[-1]).to(torch.bfloat16)
        if self.kernel == "reference":
            y = x2 @ self.dequantized_weight().T
        elif self.dtype == "int8":
            y = torch._weight_int8pack_mm(x2, self.q, self.scale) if x2.device.type == "cpu" else \
                cuda_ops.int8_weight_mm(x2, self.q, self.scale)
        elif x2.device.type == "cpu":
            y = torch._weight_int4pack_mm_for_cpu(x2, self.packed, INT4_GROUP, self.scales_and_zeros)
        else:
            y = cuda_ops.int4_weight_mm(x2, self.packed, INT4_GROUP, self.scales_and_zeros)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*shape[:-1], self.out_features)


def quantize_weights(model: GenGPT, dtype: WeightDtype, kernel: Kernel = "aten") -> GenGPT:
    """A bf16 copy of ``model`` whose Linear layers inside the blocks hold INT8 or INT4 weights (the embedding and
    the tied output head stay bf16, as weight-only recipes usually leave them)."""
    out = copy.deepcopy(model).to(torch.bfloat16)
    for block in out.blocks:
        for name, child in list(block.named_modules()):
            if isinstance(child, nn.Linear):
                parent = block.get_submodule(name.rsplit(".", 1)[0]) if "." in name else block
                setattr(parent, name.rsplit(".", 1)[-1], QuantizedLinear(child, dtype, kernel))
    return out


def stored_bytes(model: nn.Module) -> int:
    """Bytes of every parameter and buffer (quantized weights, scales, zeros included; masks excluded)."""
    tensors = list(model.parameters()) + [b for n, b in model.named_buffers() if "mask" not in n]
    seen: set[int] = set()
    total = 0
    for t in tensors:
        if t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            total += t.numel() * t.element_size()
    return total


def quantized_decode_points(model: GenGPT, *, bandwidth: float, peak_flops: float, kernel: Kernel = "aten",
                            repeats: int = 5, context: int = 16) -> list:
    """Decode at batch 1 in fp32, bf16, INT8 and INT4 (weight-only): measured time per token beside
    bytes / bandwidth for the bytes each variant stores (scales and zeros included)."""
    from aihw.inference.decode import DecodePoint, step_flops, time_decode

    variants: list[tuple[str, GenGPT]] = [("fp32", model.float()), ("bf16", copy.deepcopy(model).to(torch.bfloat16))]
    variants += [(f"{d} ({kernel})", quantize_weights(model, d, kernel)) for d in ("int8", "int4")]
    points = []
    for label, m in variants:
        pos = m.embed.pos.weight
        nbytes = stored_bytes(m) - pos.numel() * pos.element_size()
        compute_s = step_flops(m.cfg, batch=1, context=context) / peak_flops
        timing = time_decode(m, batch=1, context=context, repeats=repeats)
        memory_s = nbytes / bandwidth
        points.append(DecodePoint(label, float(nbytes), 1, timing, max(memory_s, compute_s), memory_s, compute_s))
    return points
