"""Custom GPU kernels written in Triton: a fused row-wise softmax (one program per row, one read, one write) and
the fusion chapter's element-wise chain fused by hand.

Triton (Tillet, Kung, Cox, MAPL 2019) compiles a Python function over blocks of elements to GPU code. On a
machine without a GPU, Triton's *interpreter* runs the same kernel with numpy on CPU tensors: slow, but exact, so
the kernel can be read, run and tested anywhere. The interpreter is chosen by the environment variable
``TRITON_INTERPRET=1``, and it must be set **before Triton is imported** (``triton.language``'s own functions,
such as ``tl.max``, are decorated at import). Nothing here sets it behind your back: call
:func:`use_interpreter` first thing in a CPU session (the chapter and the lab do, in their first cell). It sets
the variable for this process and reports whether that worked; if Triton was already imported in compiled mode
(``torch.compile`` imports it), it says so and the interpreted kernel cannot run until the kernel restarts.
On a GPU, do not call it: the kernel is compiled.
"""

from __future__ import annotations

import functools
import os
import sys

import torch

MAX_COLUMNS = 1 << 16  # one row must fit one program's block


def triton_status() -> str:
    """"ok (Triton <version>, interpreter|compiled)" or why Triton cannot run here."""
    try:
        import triton
    except ImportError:
        return "Triton is not installed (pip install triton; Linux x86-64 or aarch64 only)"
    mode = "interpreter" if os.environ.get("TRITON_INTERPRET") == "1" else "compiled"
    return f"ok (Triton {triton.__version__}, {mode})"


def use_interpreter() -> str:
    """Set ``TRITON_INTERPRET=1`` for this process before Triton is imported; returns what happened.

    Returns "interpreter on", or a sentence saying why not (Triton already imported in compiled mode, or not
    installed). Never raises: a notebook shows the sentence.
    """
    if "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1":
        return ("Triton was already imported in compiled mode (torch.compile imports it), so its interpreter "
                "cannot be switched on in this process: restart and call use_interpreter() first")
    os.environ["TRITON_INTERPRET"] = "1"
    status = triton_status()
    return "interpreter on" if status.startswith("ok") else status


@functools.lru_cache(maxsize=1)
def _build():
    """The softmax kernel; interpreted or compiled as TRITON_INTERPRET said when Triton was imported."""
    import triton
    import triton.language as tl

    @triton.jit
    def softmax_kernel(out_ptr, in_ptr, row_stride, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)                                  # one program per row
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(in_ptr + row * row_stride + cols, mask=mask, other=-float("inf"))
        x = x - tl.max(x, axis=0)                               # stable: subtract the row max
        e = tl.exp(x)
        tl.store(out_ptr + row * row_stride + cols, e / tl.sum(e, axis=0), mask=mask)

    @triton.jit
    def chain_kernel(out_ptr, in_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)   # one block of elements per program
        mask = offs < n
        x = tl.load(in_ptr + offs, mask=mask)                   # the only read
        z = tl.maximum(x * 1.5 + 0.5, 0.0) * x                  # relu(x * 1.5 + 0.5) * x, in registers
        y = 1.0 - 2.0 / (tl.exp(2.0 * z) + 1.0)                 # tanh(z)
        tl.store(out_ptr + offs, y, mask=mask)                  # the only write

    return softmax_kernel, chain_kernel, triton.next_power_of_2


def _ready(x: torch.Tensor) -> None:
    status = triton_status()
    if not status.startswith("ok"):
        raise ValueError(status)
    if x.device.type not in ("cpu", "cuda"):
        raise ValueError(f"the Triton kernels run on CPU (interpreter) or CUDA, not on {x.device.type!r}")
    if x.device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("a CPU tensor needs Triton's interpreter: call "
                         "aihw.accel.triton_kernels.use_interpreter() before anything imports Triton")


def fused_chain(x: torch.Tensor, *, block: int = 1024) -> torch.Tensor:
    """``tanh(relu(x * 1.5 + 0.5) * x)`` as one hand-written Triton kernel: one read and one write per element
    (the chain of :mod:`aihw.accel.fusion`). ``x``: a float32 tensor of any shape."""
    _ready(x)
    if x.dtype != torch.float32 or x.numel() == 0:
        raise ValueError(f"x must be a non-empty float32 tensor, got dtype {x.dtype} with {x.numel()} elements")
    if block < 16 or block & (block - 1):
        raise ValueError(f"block must be a power of two >= 16, got {block!r}")
    _, kernel, _ = _build()
    flat = x.contiguous().view(-1)
    out = torch.empty_like(flat)
    kernel[(-(-flat.numel() // block),)](out, flat, flat.numel(), BLOCK=block)
    return out.view(x.shape)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Row-wise softmax of a 2-D float32 tensor with the Triton kernel (interpreted on CPU, compiled on GPU)."""
    _ready(x)
    if x.dim() != 2 or x.dtype != torch.float32:
        raise ValueError(f"x must be a 2-D float32 tensor, got shape {tuple(x.shape)} and dtype {x.dtype}")
    if not 0 < x.shape[1] <= MAX_COLUMNS or x.shape[0] == 0:
        raise ValueError(f"x must have 1..{MAX_COLUMNS} columns and at least one row, got shape {tuple(x.shape)}")
    kernel, _, next_pow2 = _build()
    x = x.contiguous()
    out = torch.empty_like(x)
    kernel[(x.shape[0],)](out, x, x.stride(0), x.shape[1], BLOCK=next_pow2(x.shape[1]))
    return out
