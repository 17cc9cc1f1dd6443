"""Quantizing a whole model: module swapping, calibration, post-training quantization, real INT8 and FP8.

Two kinds of result, always labelled:

* **simulated** — weights (and, after calibration, activations) are rounded to the low-precision grid with
  :mod:`aihw.cheaper.quantize` and the arithmetic stays fp32. This measures the *accuracy* of any scheme (int2..int8,
  fp8, per-tensor/channel/group) on any machine, but is no faster.
* **real** — a low-precision kernel runs: dynamic INT8 ``Linear`` on the CPU (weights stored as int8, each
  batch of activations quantized on the fly, int8×int8→int32 matmul), through ``torch.ao.quantization``
  (deprecated in favour of torchao but still shipped with torch 2.13; torchao is used if asked for and
  installed); and FP8 matmuls through ``torch._scaled_mm`` on GPUs that have FP8 tensor cores (compute capability
  8.9 or newer: L4, H100, H200, B200…), detected at run time.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterable
from typing import Literal, get_args

import torch
from torch import nn

from aihw._validate import require_choice, require_positive
from aihw.cheaper.quantize import (
    PerTensor,
    QuantScheme,
    choose_qparams,
    dequantize,
    fake_quantize,
    quantize,
    quantized_size_bytes,
    sqnr_db,
)
from aihw.measure.device import fp8_matmul_support
from aihw.models.digits import IN_FEATURES, accuracy, latencies, make_mlp


def _linears(model: nn.Module) -> list[tuple[str, nn.Linear]]:
    return [(name, m) for name, m in model.named_modules() if isinstance(m, nn.Linear)]


def _replace(model: nn.Module, name: str, new: nn.Module) -> None:
    parent_name, _, child = name.rpartition(".")
    setattr(model.get_submodule(parent_name) if parent_name else model, child, new)


class FakeQuantLinear(nn.Module):
    """A Linear whose weight is stored rounded to ``weights`` and whose input is rounded with fixed
    (calibrated) activation qparams, if any. Arithmetic is fp32: the numerics are **simulated**."""

    def __init__(self, linear: nn.Linear, weights: QuantScheme, act_qparams=None) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight = nn.Parameter(fake_quantize(linear.weight.detach(), weights), requires_grad=False)
        self.bias = None if linear.bias is None else nn.Parameter(linear.bias.detach().clone(), requires_grad=False)
        self.weights_scheme, self.act_qparams = weights, act_qparams

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.act_qparams is not None:
            qp = self.act_qparams
            x = dequantize(quantize(x, _broadcast(qp, x.shape)), _broadcast(qp, x.shape))
        return nn.functional.linear(x, self.weight, self.bias)


def _broadcast(qparams, shape: torch.Size):
    """Per-tensor activation qparams, re-labelled for an input of ``shape`` (any batch size)."""
    return type(qparams)(qparams.scale, qparams.zero_point, qparams.scheme, tuple(shape))


def quantize_weights(model: nn.Module, scheme: QuantScheme) -> nn.Module:
    """A copy of ``model`` with every Linear weight rounded to ``scheme`` (weight-only, simulated)."""
    return post_training_quantize(model, weights=scheme)


@torch.inference_mode()
def calibrate(model: nn.Module, batches: Iterable[torch.Tensor]) -> dict[str, tuple[float, float]]:
    """Run ``batches`` through ``model`` and record the min and max input of every Linear (by name)."""
    ranges: dict[str, tuple[float, float]] = {}

    def hook(name):
        def record(_module, inputs):
            x = inputs[0]
            lo, hi = float(x.min()), float(x.max())
            old = ranges.get(name, (lo, hi))
            ranges[name] = (min(lo, old[0]), max(hi, old[1]))
        return record

    handles = [m.register_forward_pre_hook(hook(name)) for name, m in _linears(model)]
    seen = 0
    try:
        for batch in batches:
            if batch.numel():
                model(batch)
                seen += len(batch)
    finally:
        for h in handles:
            h.remove()
    if seen == 0:
        raise ValueError("the calibration set is empty: pass at least one non-empty batch of inputs")
    return ranges


def post_training_quantize(model: nn.Module, *, weights: QuantScheme, activations: QuantScheme | None = None,
                           calibration: Iterable[torch.Tensor] | None = None) -> nn.Module:
    """A copy of ``model`` with each Linear replaced by a :class:`FakeQuantLinear` (simulated numerics).

    With ``activations`` (a per-tensor scheme), the input range of every Linear is calibrated on
    ``calibration`` (an iterable of input batches) and fixed: static post-training quantization.
    """
    ranges = {}
    if activations is not None:
        if not isinstance(activations.granularity, PerTensor):
            raise ValueError(f"activation quantization here is per-tensor only, got {activations.label()}")
        if calibration is None:
            raise ValueError("static activation quantization needs a calibration set (calibration=...)")
        ranges = calibrate(model, calibration)
    quantized = copy.deepcopy(model).eval()
    for name, linear in _linears(quantized):
        act = None
        if activations is not None:
            act = choose_qparams(torch.tensor(ranges[name]), activations)
        _replace(quantized, name, FakeQuantLinear(linear, weights, act))
    return quantized


def layer_errors(model: nn.Module, schemes: Iterable[QuantScheme]) -> list[dict]:
    """For every Linear weight and scheme: SQNR (dB), worst absolute error and relative RMS error."""
    rows = []
    for name, linear in _linears(model):
        w = linear.weight.detach()
        for scheme in schemes:
            w_hat = fake_quantize(w, scheme)
            rows.append({"layer": name, "shape": tuple(w.shape), "scheme": scheme.label(),
                         "sqnr_db": sqnr_db(w, w_hat), "max_abs_error": float((w - w_hat).abs().max()),
                         "rel_rms_error": float((w - w_hat).norm() / w.norm())})
    return rows


def storage_bytes(model: nn.Module, scheme: QuantScheme | None = None) -> float:
    """Bytes of all Linear weights in ``scheme`` (fp32 if None) plus fp32 biases: the packed size on disk."""
    total = 0.0
    for _, linear in _linears(model):
        shape = tuple(linear.weight.shape)
        total += 4 * linear.weight.numel() if scheme is None else quantized_size_bytes(shape, scheme)
        total += 0 if linear.bias is None else 4 * linear.bias.numel()
    return total


def scheme_accuracies(model: nn.Module, data, schemes: Iterable[QuantScheme]) -> list[dict]:
    """Test accuracy and packed weight bytes of ``model`` with its weights in each scheme (simulated numerics).

    ``data`` is an :class:`aihw.models.digits.Digits`.
    """
    return [{"scheme": s.label(), "bits": s.bits, "accuracy": accuracy(quantize_weights(model, s), data.x_test,
                                                                       data.y_test),
             "size_bytes": storage_bytes(model, s)} for s in schemes]


def int8_speed_sweep(*, widths: Iterable[int] = (256, 1024), batches: Iterable[int] = (1, 16, 256),
                     repeats: int = 7, threads: int | None = 1) -> list[dict]:
    """Measured seconds per forward pass of a 64→w→w→10 MLP in fp32 and in dynamic INT8, per width and batch.

    The weights are random (latency depends on shapes, not values), so no training is needed.
    """
    rows = []
    for width in widths:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            fp32 = make_mlp((width, width)).eval()
        int8, backend = dynamic_int8(fp32)
        for batch in batches:
            x = torch.randn(batch, IN_FEATURES, generator=torch.Generator().manual_seed(batch))
            t = latencies({"fp32": fp32, "int8": int8}, x, repeats=repeats, threads=threads)
            rows.append({"width": width, "batch": batch, "fp32_s": t["fp32"], "int8_s": t["int8"],
                         "speedup": t["fp32"] / t["int8"], "backend": backend})
    return rows


def last_level_cache_bytes() -> int | None:
    """Size of this CPU's largest cache in bytes, read from Linux sysfs; None where it cannot be read."""
    from pathlib import Path

    sizes = []
    for f in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = f.read_text().strip().upper()
        try:
            value = int(text.rstrip("KMG"))
        except ValueError:
            continue
        sizes.append(value * {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1], 1))
    return max(sizes) if sizes else None


def int8_large_layer_speed(*, features: int = 8192, batch: int = 1, repeats: int = 7,
                           threads: int | None = 1) -> dict:
    """fp32 vs dynamic-INT8 latency of one ``features x features`` Linear at ``batch``: weights far beyond cache.

    At batch 1 a layer is a matrix-vector product: each weight is used once, so the time is the time to stream
    the weights from memory. Here INT8's four-times-smaller weights (64 MiB vs 256 MiB at 8192) can show the
    bandwidth effect that a small, cache-resident layer cannot.
    """
    from aihw.models.digits import latencies

    require_positive("features", features, integer=True)
    require_positive("batch", batch, integer=True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        fp32 = nn.Sequential(nn.Linear(features, features)).eval()
    int8, backend = dynamic_int8(fp32)
    x = torch.randn(batch, features, generator=torch.Generator().manual_seed(0))
    t = latencies({"fp32": fp32, "int8": int8}, x, repeats=repeats, threads=threads)
    weights = features * features
    return {"features": features, "batch": batch, "fp32_s": t["fp32"], "int8_s": t["int8"],
            "speedup": t["fp32"] / t["int8"], "backend": backend, "fp32_weight_bytes": 4 * weights,
            "int8_weight_bytes": weights, "llc_bytes": last_level_cache_bytes(),
            "fp32_gb_per_s": 4 * weights / t["fp32"] / 1e9, "int8_gb_per_s": weights / t["int8"] / 1e9}


def _torchao_available() -> bool:
    try:
        import torchao  # noqa: F401
    except ImportError:
        return False
    return True


# Whose kernels run the dynamic INT8 model; "auto": torch.ao when this torch has it, else torchao.
Backend = Literal["auto", "torch.ao", "torchao"]
BACKENDS: tuple[str, ...] = get_args(Backend)


def dynamic_int8(model: nn.Module, *, backend: Backend = "auto") -> tuple[nn.Module, str]:
    """A copy of ``model`` whose Linears run **real** INT8 kernels on the CPU (dynamic activation quantization).

    ``backend``: "torch.ao" (``torch.ao.quantization.quantize_dynamic``; per-tensor int8 weights, fbgemm or
    onednn kernels), "torchao" (``quantize_(model, Int8DynamicActivationInt8WeightConfig())``), or "auto"
    (torch.ao when it exists, else torchao). Returns the model and the backend used.
    """
    require_choice("backend", backend, BACKENDS)
    has_ao = hasattr(torch.ao.quantization, "quantize_dynamic")
    if backend == "auto":
        backend = "torch.ao" if has_ao else "torchao"
    if backend == "torchao" and not _torchao_available():
        raise ValueError("backend 'torchao' needs the torchao package (pip install torchao); use backend='torch.ao'")
    model = copy.deepcopy(model).eval()
    with warnings.catch_warnings():  # torch.ao prints deprecation notices on every call
        warnings.simplefilter("ignore")
        if backend == "torch.ao":
            return torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8), backend
        from torchao.quantization import Int8DynamicActivationInt8WeightConfig, quantize_

        quantize_(model, Int8DynamicActivationInt8WeightConfig())
        return model, backend


class Fp8Linear(nn.Module):
    """A Linear in FP8 E4M3 with one scale per tensor for the weight and for each input batch.

    ``real`` is True when ``torch._scaled_mm`` runs it (FP8 tensor cores; both dimensions multiples of 16);
    otherwise the same rounding is **simulated** in fp32.
    """

    SCHEME = QuantScheme("fp8_e4m3")

    def __init__(self, linear: nn.Linear, *, real: bool) -> None:
        super().__init__()
        w = linear.weight.detach()
        self.real = real and w.shape[0] % 16 == 0 and w.shape[1] % 16 == 0
        self.w_qparams = choose_qparams(w, self.SCHEME)
        self.w_fp8: torch.Tensor
        self.register_buffer("w_fp8", quantize(w, self.w_qparams))
        self.bias = None if linear.bias is None else nn.Parameter(linear.bias.detach().clone(), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x_qp = choose_qparams(x, self.SCHEME)
        x_fp8 = quantize(x, x_qp)
        if self.real:
            y = torch._scaled_mm(x_fp8, self.w_fp8.t(), scale_a=x_qp.scale.reshape(()),
                                 scale_b=self.w_qparams.scale.reshape(()), out_dtype=torch.float32)
        else:
            y = dequantize(x_fp8, x_qp) @ dequantize(self.w_fp8, self.w_qparams).t()
        return y if self.bias is None else y + self.bias


def fp8_model(model: nn.Module, *, device: torch.device | str = "cpu") -> tuple[nn.Module, str]:
    """A copy of ``model`` on ``device`` with Fp8Linear layers; the label says "real FP8 (...)" or "simulated"."""
    reason = fp8_matmul_support(device)
    quantized = copy.deepcopy(model).eval().to(device)
    for name, linear in _linears(quantized):
        _replace(quantized, name, Fp8Linear(linear, real=reason is None))
    layers = [m for m in quantized.modules() if isinstance(m, Fp8Linear)]
    n_real = sum(m.real for m in layers)
    if n_real == len(layers):
        label = "real FP8 (torch._scaled_mm)"
    elif n_real:
        label = f"real FP8 in {n_real} of {len(layers)} layers (the others' sizes are not multiples of 16: simulated)"
    else:
        label = f"simulated FP8 ({reason or 'layer sizes are not multiples of 16'})"
    return quantized, label


__all__ = ["FakeQuantLinear", "quantize_weights", "calibrate", "post_training_quantize", "layer_errors",
           "storage_bytes", "scheme_accuracies", "int8_speed_sweep", "dynamic_int8", "Fp8Linear", "fp8_model", "BACKENDS"]
