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
from pathlib import Path
from typing import Literal, get_args

import torch
from torch import nn

from aihw._validate import require_choice, require_positive
from aihw.cheaper.quantize import (
    PerChannel,
    PerTensor,
    QuantScheme,
    choose_qparams,
    dequantize,
    fake_quantize,
    quantize,
    quantized_size_bytes,
    sqnr_db,
)
from aihw.measure import cuda_ops
from aihw.models.digits import IN_FEATURES, Digits, TrainConfig, accuracy, latencies, make_mlp
from aihw.runtime.device import fp8_matmul_support, gpu_capability


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


W8A8_LABEL = "W8A8: int8 weights + calibrated int8 activations"
DYNAMIC_INT8_LABEL = "int8 dynamic (real kernels)"


def scheme_accuracies_seeds(config: TrainConfig, data: Digits, schemes: Iterable[QuantScheme], *,
                            seeds: tuple[int, ...] = (0, 1, 2, 3, 4), w8a8: bool = True, dynamic: bool = True,
                            calibration_images: int = 256, cache_dir: str | Path | None = None,
                            threads: int | None = 1) -> dict:
    """:func:`scheme_accuracies` over ``seeds``: one base model per seed (``config`` with that seed, trained once
    and cached under ``cache_dir`` by :func:`aihw.models.digits.trained_mlps`), quantized with each scheme.

    ``w8a8`` adds int8 per-channel weights with calibrated int8 activations (:data:`W8A8_LABEL`, calibrated on the
    first ``calibration_images`` training images); ``dynamic`` adds the real dynamic-INT8 model
    (:data:`DYNAMIC_INT8_LABEL`, :func:`dynamic_int8`). Returns ``seeds``, ``fp32`` (the unquantized models'
    accuracies, one per seed), ``fp32_ci`` and ``rows``: scheme, bits, size_bytes, ``accuracies`` (per seed),
    ``ci`` (mean and 95% interval) and ``vs_fp32`` (paired interval of quantized − fp32, seed by seed: the same
    model before and after rounding). Rounding takes milliseconds, so only the trained weights are cached.
    ``threads``: torch intra-op threads for the whole run (:func:`aihw.models.digits.torch_threads`; one thread
    is many times faster for these small matrices on a busy machine).
    """
    from aihw.models.digits import torch_threads

    with torch_threads(threads):
        return _scheme_accuracies_seeds(config, data, list(schemes), seeds, w8a8, dynamic, calibration_images,
                                        cache_dir)


def _scheme_accuracies_seeds(config, data, schemes, seeds, w8a8, dynamic, calibration_images, cache_dir) -> dict:
    from aihw.models.digits import trained_mlps
    from aihw.stats import with_intervals

    require_positive("calibration_images", calibration_images, integer=True)
    models, _ = trained_mlps(config, seeds, data=data, cache_dir=cache_dir)
    test = (data.x_test, data.y_test)
    rows: list[dict] = [{"scheme": s.label(), "bits": s.bits, "size_bytes": storage_bytes(models[0], s),
             "accuracies": [accuracy(quantize_weights(m, s), *test) for m in models]} for s in schemes]
    if w8a8:
        w8 = QuantScheme("int8", PerChannel(0))
        rows.append({"scheme": W8A8_LABEL, "bits": 8, "size_bytes": storage_bytes(models[0], w8), "accuracies": [
            accuracy(post_training_quantize(m, weights=w8, activations=QuantScheme("int8", symmetric=False),
                                            calibration=[data.x_train[:calibration_images]]), *test)
            for m in models]})
    if dynamic:
        int8 = [dynamic_int8(m) for m in models]
        rows.append({"scheme": DYNAMIC_INT8_LABEL, "bits": 8, "backend": int8[0][1],
                     "size_bytes": storage_bytes(models[0], QuantScheme("int8")),
                     "accuracies": [accuracy(q, *test) for q, _ in int8]})
    fp32 = [accuracy(m, *test) for m in models]
    return with_intervals({"seeds": list(seeds), "fp32": fp32, "rows": rows}, "fp32", "vs_fp32")


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
            y = cuda_ops.fp8_mm(x_fp8, self.w_fp8.t(), x_qp.scale.reshape(()), self.w_qparams.scale.reshape(()))
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


# --- weight-only INT8/INT4, FP8 and 2:4 sparsity as real kernels, one row each -------------------------------

LOW_PRECISION_ROWS = ("int8 weight-only", "int4 weight-only", "fp8 (e4m3, per-tensor)", "2:4 sparse")


def low_precision_skip_reason(kind: str, device: torch.device | str) -> str | None:
    """Why ``kind`` (one of LOW_PRECISION_ROWS) has no real kernel on ``device`` here, or None if it has one."""
    require_choice("kind", kind, LOW_PRECISION_ROWS)
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        return "no CUDA GPU is available"
    cap = gpu_capability(device)
    if kind == "int8 weight-only":
        if not hasattr(torch, "_weight_int8pack_mm"):
            return f"this torch ({torch.__version__}) has no torch._weight_int8pack_mm"
        return None  # CPU and CUDA kernels (x float, w int8 with one scale per output row)
    if kind == "int4 weight-only":
        if cap is None:
            if device.type != "cpu" or not hasattr(torch, "_weight_int4pack_mm_for_cpu"):
                return f"no INT4 weight-only kernel for {device.type} in this torch ({torch.__version__})"
            return None
        if not hasattr(torch, "_weight_int4pack_mm") or not hasattr(torch, "_convert_weight_to_int4pack"):
            return f"this torch ({torch.__version__}) has no torch._weight_int4pack_mm"
        return cap.skip_reason("int4 weight-only")
    if kind.startswith("fp8"):
        return fp8_matmul_support(device)
    if cap is None:
        return f"2:4 semi-structured sparse kernels (cuSPARSELt/CUTLASS) run only on CUDA GPUs, not on {device.type}"
    if (reason := cap.skip_reason("2:4 sparse")) is not None:
        return reason
    try:
        from torch.sparse import to_sparse_semi_structured  # noqa: F401
    except ImportError:
        return "this torch has no torch.sparse.to_sparse_semi_structured"
    return None


def int8_weight_only(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric INT8 per output row of ``w`` (out x in): int8 values and fp32 scales, w ≈ q * scale[:, None]."""
    scale = w.abs().amax(dim=1).clamp(min=1e-12) / 127
    q = torch.clamp(torch.round(w / scale[:, None]), -127, 127).to(torch.int8)
    return q, scale.float()


def int4_weight_only(w: torch.Tensor, group_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Asymmetric INT4 in groups of ``group_size`` along the input dimension, in the layout of torch's tinygemm
    kernels: integer values 0..15 (int32, out x in) and ``scales_and_zeros`` (in/group, out, 2) with
    w ≈ (q - 8) * scale + zero, where zero = min + 8 * scale (so w ≈ q * scale + min)."""
    out, inp = w.shape
    if inp % group_size:
        raise ValueError(f"in_features={inp} is not a multiple of group_size={group_size}")
    groups = w.float().reshape(out, inp // group_size, group_size)
    low, high = groups.amin(dim=2, keepdim=True), groups.amax(dim=2, keepdim=True)
    scale = (high - low).clamp(min=1e-6) / 15
    q = torch.clamp(torch.round((groups - low) / scale), 0, 15).to(torch.int32).reshape(out, inp)
    zero = low + 8 * scale
    scales_and_zeros = torch.cat([scale, zero], dim=2).transpose(0, 1).contiguous()  # (in/group, out, 2)
    return q, scales_and_zeros


def dequantize_int4(q: torch.Tensor, scales_and_zeros: torch.Tensor, group_size: int) -> torch.Tensor:
    """The fp32 weight that :func:`int4_weight_only`'s values stand for."""
    out, inp = q.shape
    sz = scales_and_zeros.transpose(0, 1)  # (out, in/group, 2)
    groups = q.float().reshape(out, inp // group_size, group_size)
    return ((groups - 8) * sz[..., :1] + sz[..., 1:]).reshape(out, inp)


def _int4_matmul(x: torch.Tensor, q: torch.Tensor, scales_and_zeros: torch.Tensor, group_size: int,
                 inner_k_tiles: int = 8):
    """A callable running x @ dequant(q).T through torch's INT4 kernel for x's device."""
    if x.device.type == "cpu":
        packed = torch._convert_weight_to_int4pack_for_cpu(q, inner_k_tiles)
        return lambda: torch._weight_int4pack_mm_for_cpu(x, packed, group_size, scales_and_zeros.to(x.dtype))
    q_uint8 = (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8)  # two 4-bit values per byte, the first in the high half
    packed = cuda_ops.pack_int4(q_uint8, inner_k_tiles)
    return lambda: cuda_ops.int4_weight_mm(x, packed, group_size, scales_and_zeros.to(x.dtype))


def _median_seconds(fn, repeats_s: float) -> float:
    from torch.utils import benchmark  # synchronises CUDA around its timed blocks

    fn()
    return benchmark.Timer(stmt="fn()", globals={"fn": fn}).blocked_autorange(min_run_time=repeats_s).median


def low_precision_matmuls(*, device: torch.device | str | None = None, m: int | None = None,
                          k: int | None = None, n: int | None = None, group_size: int = 128,
                          min_run_time: float | None = None, seed: int = 0) -> list[dict]:
    """One row per low-precision matmul (LOW_PRECISION_ROWS) of an (m x k) input by a k -> n weight: whether a
    real kernel ran on ``device`` or why it was skipped, its speed-up over the dense matmul at the reference
    dtype (bf16 on a GPU, fp32 on a CPU) and its error against the fp32 reference.

    ``max_rel_error`` = max |y - y_fp32| / max |y_fp32|: quantization plus kernel rounding. ``kernel_error`` (for
    the weight-only rows) = the same against x @ dequantized(w).T in the reference dtype: the kernel alone.
    Defaults: m=16 (a decode-like batch, where weight-only kernels pay off), k=n=8192 on a GPU, 1024 on a CPU.
    """
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    on_gpu = device.type == "cuda"
    if on_gpu and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was requested but no CUDA GPU is available")
    size = 8192 if on_gpu else 1024
    m, k, n = (int(require_positive(name, value or default, integer=True))
               for name, value, default in (("m", m, 16), ("k", k, size), ("n", n, size)))
    if group_size not in (32, 64, 128, 256):
        raise ValueError(f"group_size must be one of 32, 64, 128, 256 (torch's INT4 kernels), got {group_size!r}")
    if k % group_size or n % 16 or k % 16 or m % 16:
        raise ValueError(f"m, k and n must be multiples of 16 and k of group_size={group_size}; got m={m}, k={k}, "
                         f"n={n}")
    run_s = min_run_time or (0.2 if on_gpu else 0.05)
    cap = gpu_capability(device)  # a GPU's reference is its tensor-core half type: fp16 on a T4 (no bf16 cores)
    half = cap.half_dtype if cap is not None else None
    ref_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, None: torch.float32}[half]
    gen = torch.Generator().manual_seed(seed)
    w32 = (torch.randn(n, k, generator=gen) / k**0.5).to(device)
    x32 = torch.randn(m, k, generator=gen).to(device)
    y32 = x32 @ w32.t()
    x, w = x32.to(ref_dtype), w32.to(ref_dtype)
    dense_s = _median_seconds(lambda: x @ w.t(), run_s)
    scale = y32.abs().max().item()
    ref_name = half or "fp32"

    def row(kind: str, fn=None, label: str = "", kernel_ref: torch.Tensor | None = None) -> dict:
        out: dict[str, object] = {"name": kind, "device": str(device),
                                  "reference": f"dense {ref_name} x @ w.T, {m}x{k} by {k}x{n}"}
        reason = low_precision_skip_reason(kind, device)
        if reason is not None or fn is None:
            return {**out, "status": "skipped", "reason": reason or label}
        try:
            y = fn()
            seconds = _median_seconds(fn, run_s)
        except (RuntimeError, ValueError) as err:  # a kernel missing for this shape or build: say so
            return {**out, "status": "skipped", "reason": f"failed: {str(err).splitlines()[0][:200]}"}
        out.update(status="ran", label=label, seconds=seconds, dense_seconds=dense_s, speedup=dense_s / seconds,
                   max_rel_error=(y.float() - y32).abs().max().item() / scale)
        if kernel_ref is not None:
            out["kernel_error"] = (y.float() - kernel_ref.float()).abs().max().item() / scale
        return out

    rows = []
    q8, s8 = int8_weight_only(w32)
    rows.append(row("int8 weight-only", lambda: torch._weight_int8pack_mm(x, q8, s8.to(ref_dtype)),
                    f"real: torch._weight_int8pack_mm on {device.type} (int8 weights, one scale per output row)"
                    + ("; on CUDA this is torch's naive kernel (no tensor cores, no tuned tiling), so slower than "
                       "the dense matmul is expected here: tuned weight-only kernels are what make fewer bytes win"
                       if on_gpu else ""),
                    x @ (q8.to(ref_dtype) * s8.to(ref_dtype)[:, None]).t()))
    if low_precision_skip_reason("int4 weight-only", device) is None:
        q4, sz = int4_weight_only(w32, group_size)
        # the CUDA kernel takes bf16 activations; the CPU one fp32 here
        rows.append(row("int4 weight-only", _int4_matmul(x, q4, sz, group_size),
                        f"real: torch._weight_int4pack_mm{'_for_cpu' if not on_gpu else ''} (groups of {group_size})",
                        x @ dequantize_int4(q4, sz, group_size).to(ref_dtype).t()))
    else:
        rows.append(row("int4 weight-only"))
    if fp8_matmul_support(device) is None:
        layer = nn.Linear(k, n, bias=False).to(device)
        with torch.no_grad():
            layer.weight.copy_(w32)
        fp8, label = fp8_model(nn.Sequential(layer), device=device)
        lin = next(m for m in fp8.modules() if isinstance(m, Fp8Linear))
        x_qp = choose_qparams(x32, Fp8Linear.SCHEME)
        x_fp8 = quantize(x32, x_qp)  # quantised once, outside the timed call

        def fp8_matmul_only() -> torch.Tensor:
            return cuda_ops.fp8_mm(x_fp8, lin.w_fp8.t(), x_qp.scale.reshape(()), lin.w_qparams.scale.reshape(()))

        fp8_row = row("fp8 (e4m3, per-tensor)", fp8_matmul_only if lin.real else (lambda: fp8(x32)),
                      f"{label}; seconds: the FP8 matmul alone (input quantised beforehand); "
                      "seconds_with_quantisation: quantising the input each call as well")
        if fp8_row["status"] == "ran":
            with_q = _median_seconds(lambda: fp8(x32), run_s)
            fp8_row.update(seconds_with_quantisation=with_q, speedup_with_quantisation=dense_s / with_q)
        rows.append(fp8_row)
    else:
        rows.append(row("fp8 (e4m3, per-tensor)"))
    if low_precision_skip_reason("2:4 sparse", device) is None:
        from torch.sparse import to_sparse_semi_structured

        mask = torch.tensor([1, 1, 0, 0], device=device, dtype=torch.bool).tile(n, k // 4)
        pruned = w * mask  # magnitude-agnostic 2:4 pattern: the error column shows what pruning costs
        sparse = to_sparse_semi_structured(pruned)
        rows.append(row("2:4 sparse", lambda: torch.nn.functional.linear(x, sparse),
                        f"real: to_sparse_semi_structured, {ref_name} (half the weights pruned)",
                        x @ pruned.t()))
    else:
        rows.append(row("2:4 sparse"))
    return rows


__all__ = ["FakeQuantLinear", "quantize_weights", "calibrate", "post_training_quantize", "layer_errors",
           "storage_bytes", "scheme_accuracies", "scheme_accuracies_seeds", "W8A8_LABEL", "DYNAMIC_INT8_LABEL",
           "int8_speed_sweep", "dynamic_int8", "Fp8Linear", "fp8_model", "BACKENDS",
           "LOW_PRECISION_ROWS", "low_precision_skip_reason", "int8_weight_only", "int4_weight_only",
           "dequantize_int4", "low_precision_matmuls"]
