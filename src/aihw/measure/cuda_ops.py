"""Every call of a CUDA-only (private aten) operator in the package, one small function each.

Kept apart so that the calls can be exercised on a machine without a GPU: ``tests/test_fake_gpu.py`` runs each
of them on fake CUDA tensors (``torch._subclasses.FakeTensorMode``), with the shapes, dtypes and layouts the
package prepares, for every compute capability that may run it (:mod:`aihw.chips.capability`). Shape, layout and
dtype errors (a row-major B, K not a multiple of 128, a wrong packing dtype) surface there, not first on a GPU.
The functions do no Python indexing (fake CUDA tensors of a CPU-only torch allow none): callers prepare operands.
"""

from __future__ import annotations

import torch


def pack_int4(q_uint8: torch.Tensor, inner_k_tiles: int = 8) -> torch.Tensor:
    """(N, K / 2) uint8 (element 2j in the high nibble) -> the opaque layout of the CUDA int4 kernel."""
    return torch._convert_weight_to_int4pack(q_uint8, inner_k_tiles)


def int4_weight_mm(x: torch.Tensor, packed: torch.Tensor, group_size: int,
                   scales_and_zeros: torch.Tensor) -> torch.Tensor:
    """x (M, K) bf16 @ dequant(packed).T: torch's tinygemm INT4 weight-only kernel (sm_80 and later)."""
    return torch._weight_int4pack_mm(x, packed, group_size, scales_and_zeros)


def int8_weight_mm(x: torch.Tensor, q: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """x (M, K) @ (q (N, K) int8 * scales (N,)).T: torch's INT8 weight-only kernel (naive on CUDA)."""
    return torch._weight_int8pack_mm(x, q, scales)


def fp8_mm(a: torch.Tensor, b_cols: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
           out_dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """FP8 a (M, K) row-major @ b_cols (K, N) column-major, per-tensor scales: ``torch._scaled_mm`` (sm_89+)."""
    return torch._scaled_mm(a, b_cols, scale_a=scale_a, scale_b=scale_b, out_dtype=out_dtype)


def int8_mm(a: torch.Tensor, b_cols: torch.Tensor) -> torch.Tensor:
    """INT8 a (M, K) @ b_cols (K, N) column-major -> INT32: ``torch._int_mm`` (cuBLASLt wants B column-major)."""
    return torch._int_mm(a, b_cols)
