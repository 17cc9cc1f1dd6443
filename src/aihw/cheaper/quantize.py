"""Quantization maths on tensors: choose scale and zero point, quantize, dequantize.

The shape of the API follows torchao: the *granularity* (which elements share one scale) is a tiny frozen
dataclass, a :class:`QuantScheme` says the target format, and three functions do the work::

    qparams = choose_qparams(w, QuantScheme("int8", PerChannel(axis=0)))
    q = quantize(w, qparams)            # int8 storage (int4 values live in int8) or a torch float8 tensor
    w_hat = dequantize(q, qparams)      # fp32 again, with the rounding error

Integer formats are affine: ``q = clamp(round(x / scale + zero_point), qmin, qmax)`` and
``x_hat = (q - zero_point) * scale`` (Jacob et al. 2018). Symmetric schemes fix ``zero_point = 0``; the
scale rule is that of PyTorch's ``MinMaxObserver`` and the rounding that of ``torch.quantize_per_tensor``, so the
results agree with PyTorch bit for bit (tests/test_quantize.py). PyTorch's asymmetric per-channel kernel rounds
twice and can differ by one step on exact ties (about one element in 10^6). FP8 formats (E4M3, E5M2) scale each block
so that its largest magnitude lands on the format's largest finite value, then round with PyTorch's float8 dtypes.
Nothing here touches a model; :mod:`aihw.cheaper.quantize_model` swaps modules.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from aihw._validate import require_choice, require_positive
from aihw.formats.precision import get_format
from aihw.runtime.device import torch_dtype

#: integer formats: name -> (qmin, qmax)
INT_RANGES = {"int8": (-128, 127), "int4": (-8, 7), "int3": (-4, 3), "int2": (-2, 1)}
#: float formats: name -> torch dtype (from the registry of number formats, aihw.formats.precision)
FP8_DTYPES = {name: torch_dtype(name) for name in ("fp8_e4m3", "fp8_e5m2")}
DTYPES = (*INT_RANGES, *FP8_DTYPES)
BITS = {name: int(math.log2(hi - lo + 1)) for name, (lo, hi) in INT_RANGES.items()} | {
    name: get_format(name).bits for name in FP8_DTYPES}
_EPS = torch.finfo(torch.float32).eps  # smallest scale, as in PyTorch's observers


@dataclass(frozen=True)
class PerTensor:
    """One scale (and zero point) for the whole tensor."""


@dataclass(frozen=True)
class PerChannel:
    """One scale per slice along ``axis`` (for a Linear weight, axis 0 = one per output neuron)."""

    axis: int = 0


@dataclass(frozen=True)
class PerGroup:
    """One scale per ``size`` consecutive elements of the last axis (as in GPTQ/AWQ int4 weights)."""

    size: int = 32

    def __post_init__(self) -> None:
        require_positive("group size", self.size, integer=True)


Granularity = PerTensor | PerChannel | PerGroup


@dataclass(frozen=True)
class QuantScheme:
    """Target format: ``dtype`` (one of :data:`DTYPES`), granularity, and symmetric or asymmetric (ints only)."""

    dtype: str = "int8"
    granularity: Granularity = field(default_factory=PerTensor)
    symmetric: bool = True

    def __post_init__(self) -> None:
        require_choice("dtype", self.dtype, DTYPES)
        if not isinstance(self.granularity, PerTensor | PerChannel | PerGroup):
            raise ValueError(f"granularity must be PerTensor(), PerChannel(axis) or PerGroup(size), "
                             f"got {self.granularity!r}")
        if self.is_float and not self.symmetric:
            raise ValueError(f"{self.dtype} is a float format: only symmetric=True is supported "
                             "(a zero point makes no sense for floats)")

    @property
    def is_float(self) -> bool:
        return self.dtype in FP8_DTYPES

    @property
    def bits(self) -> int:
        return BITS[self.dtype]

    @property
    def qmin(self) -> float:
        return -self.qmax if self.is_float else INT_RANGES[self.dtype][0]

    @property
    def qmax(self) -> float:
        if self.is_float:
            return float(torch.finfo(FP8_DTYPES[self.dtype]).max)
        return INT_RANGES[self.dtype][1]

    def label(self) -> str:
        g = self.granularity
        gran = ("per-tensor" if isinstance(g, PerTensor) else
                f"per-channel(axis={g.axis})" if isinstance(g, PerChannel) else f"per-group({g.size})")
        sym = "" if self.is_float else (" sym" if self.symmetric else " asym")
        return f"{self.dtype} {gran}{sym}"


@dataclass(frozen=True, eq=False)
class QParams:
    """Scales and zero points, one per block (a 1-D tensor each), for a tensor of ``shape``."""

    scale: torch.Tensor  # fp32, one per block
    zero_point: torch.Tensor  # int32, one per block (all zero when symmetric)
    scheme: QuantScheme
    shape: tuple[int, ...]


def _blocks(x: torch.Tensor, granularity: Granularity) -> torch.Tensor:
    """A 2-D view of ``x``: one row per block that shares a scale."""
    if isinstance(granularity, PerTensor):
        return x.reshape(1, -1)
    if isinstance(granularity, PerChannel):
        if not -x.dim() <= granularity.axis < x.dim():
            raise ValueError(f"PerChannel axis {granularity.axis} is out of range for a {x.dim()}-D tensor")
        return x.movedim(granularity.axis, 0).reshape(x.shape[granularity.axis], -1)
    if x.dim() == 0 or x.shape[-1] % granularity.size:
        raise ValueError(f"PerGroup size {granularity.size} must divide the last dimension of the tensor, "
                         f"shape {tuple(x.shape)}")
    return x.reshape(-1, granularity.size)


def _unblocks(rows: torch.Tensor, shape: tuple[int, ...], granularity: Granularity) -> torch.Tensor:
    if isinstance(granularity, PerChannel):
        axis = granularity.axis % len(shape)
        moved = (shape[axis], *shape[:axis], *shape[axis + 1:])
        return rows.reshape(moved).movedim(0, axis)
    return rows.reshape(shape)


def choose_qparams(x: torch.Tensor, scheme: QuantScheme) -> QParams:
    """Scale and zero point per block from the block's min and max (PyTorch's MinMaxObserver rule)."""
    _check_tensor(x)
    if x.numel() == 0:
        raise ValueError("cannot choose quantization parameters for an empty tensor")
    rows = _blocks(x.detach().float(), scheme.granularity)
    lo = torch.clamp(rows.amin(dim=1), max=0.0)
    hi = torch.clamp(rows.amax(dim=1), min=0.0)
    if scheme.is_float:
        scale = torch.clamp(torch.maximum(-lo, hi) / scheme.qmax, min=_EPS)
        zero_point = torch.zeros_like(scale, dtype=torch.int32)
    elif scheme.symmetric:
        scale = torch.clamp(torch.maximum(-lo, hi) / ((scheme.qmax - scheme.qmin) / 2), min=_EPS)
        zero_point = torch.zeros_like(scale, dtype=torch.int32)
    else:
        scale = torch.clamp((hi - lo) / (scheme.qmax - scheme.qmin), min=_EPS)
        zero_point = torch.clamp(scheme.qmin - torch.round(lo / scale), scheme.qmin, scheme.qmax).to(torch.int32)
    if not bool(torch.isfinite(scale).all()):
        raise ValueError(f"the tensor's range ({float(lo.min()):.3g} to {float(hi.max()):.3g}) is too wide for an "
                         "fp32 scale: max - min overflows")
    return QParams(scale, zero_point, scheme, tuple(x.shape))


def _check_tensor(x: object) -> None:
    """A floating-point tensor with only finite values (NaN or inf would give NaN/inf scales)."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"expected a torch.Tensor, got {type(x).__name__}")
    if not (x.is_floating_point() or x.dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)):
        raise ValueError(f"expected a real-valued tensor, got dtype {x.dtype}")
    if x.is_floating_point() and x.numel() and not bool(torch.isfinite(x).all()):
        bad = x.detach().flatten()[~torch.isfinite(x.detach().flatten())]
        raise ValueError(f"the tensor holds {bad.numel()} NaN or inf value(s) (first: {bad[0].item()}); "
                         "quantization needs finite values: find where they come from first")


def _check_shape(x: torch.Tensor, qparams: QParams) -> None:
    if tuple(x.shape) != qparams.shape:
        raise ValueError(f"tensor shape {tuple(x.shape)} does not match the qparams' shape {qparams.shape}")


def quantize(x: torch.Tensor, qparams: QParams) -> torch.Tensor:
    """Quantize ``x``: int8 storage for integer formats (int4 values in [-8, 7]), float8 for fp8 formats."""
    _check_tensor(x)
    _check_shape(x, qparams)
    scheme = qparams.scheme
    rows = _blocks(x.detach().float(), scheme.granularity)
    scale = qparams.scale[:, None]
    if scheme.is_float:
        q = torch.clamp(rows / scale, -scheme.qmax, scheme.qmax).to(FP8_DTYPES[scheme.dtype])
    else:
        # round(x * (1/scale) + zero_point) with one rounding (a fused multiply-add), as PyTorch's x86 kernels
        # do: the double-precision product and sum are exact, the cast to fp32 rounds once.
        inv_scale = (1.0 / scale).double()
        fused = (rows.double() * inv_scale + qparams.zero_point[:, None].double()).float()
        q = torch.clamp(torch.round(fused), scheme.qmin, scheme.qmax)
        q = q.to(torch.int8)
    return _unblocks(q, qparams.shape, scheme.granularity)


def dequantize(q: torch.Tensor, qparams: QParams) -> torch.Tensor:
    """Back to fp32: ``(q - zero_point) * scale`` per block."""
    _check_shape(q, qparams)
    rows = _blocks(q.float(), qparams.scheme.granularity)
    x_hat = (rows - qparams.zero_point[:, None].float()) * qparams.scale[:, None]
    return _unblocks(x_hat, qparams.shape, qparams.scheme.granularity)


def fake_quantize(x: torch.Tensor, scheme: QuantScheme) -> torch.Tensor:
    """``dequantize(quantize(x))`` with qparams chosen from ``x`` itself: the value a kernel would compute with."""
    qparams = choose_qparams(x, scheme)
    return dequantize(quantize(x, qparams), qparams).to(x.dtype)


def sqnr_db(x: torch.Tensor, x_hat: torch.Tensor) -> float:
    """Signal-to-quantization-noise ratio in dB: 10·log10(Σx² / Σ(x − x̂)²); ``inf`` when exact."""
    noise = float(((x.double() - x_hat.double()) ** 2).sum())
    signal = float((x.double() ** 2).sum())
    return math.inf if noise == 0 else 10 * math.log10(signal / noise)


def quantized_size_bytes(shape: tuple[int, ...], scheme: QuantScheme) -> float:
    """Bytes to store a tensor of ``shape`` in ``scheme``: packed values + one fp32 scale per block
    (+ one int32 zero point per block if asymmetric)."""
    numel = math.prod(shape)
    if numel == 0:
        return 0.0
    g = scheme.granularity
    blocks = (1 if isinstance(g, PerTensor) else shape[g.axis] if isinstance(g, PerChannel)
              else numel // g.size)
    per_block = 4 + (0 if scheme.symmetric else 4)
    return numel * scheme.bits / 8 + blocks * per_block


def grid(qparams: QParams, block: int = 0) -> torch.Tensor:
    """The values block ``block`` can represent after dequantization (every level, for plots)."""
    scheme = qparams.scheme
    if scheme.is_float:
        codes = torch.arange(256, dtype=torch.uint8).view(FP8_DTYPES[scheme.dtype]).float()
        levels = torch.unique(codes[torch.isfinite(codes)])
    else:
        levels = torch.arange(scheme.qmin, scheme.qmax + 1, dtype=torch.float32) - qparams.zero_point[block]
    return levels * qparams.scale[block]


__all__ = ["PerTensor", "PerChannel", "PerGroup", "Granularity", "QuantScheme", "QParams", "DTYPES",
           "choose_qparams", "quantize", "dequantize", "fake_quantize", "sqnr_db", "quantized_size_bytes", "grid"]
