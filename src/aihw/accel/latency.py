"""Memory latency by pointer chasing: each load's address is the value of the previous load, so no two loads
overlap and the time per step is the latency of the level the chain lives in.

Python (or a torch op per step) would measure the interpreter, not the memory, so the chase is a ten-line C loop,
compiled once per process with the system's C compiler into a temporary directory and called through ``ctypes``.
Without a compiler, :func:`compiler_status` says so and :func:`pointer_chase` raises a one-line error. The chain is
built with numpy: ``order="random"`` visits the lines of the working set in a random cycle (defeats the hardware
prefetcher: true latency); ``order="sequential"`` walks them in address order (the prefetcher hides most of it).
"""

from __future__ import annotations

import ctypes
import functools
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Literal, get_args

import numpy as np

from aihw._validate import require_choice, require_positive

Order = Literal["random", "sequential"]
ORDERS: tuple[str, ...] = get_args(Order)
MAX_WORKING_SET = 1 << 30

_SOURCE = r"""
#include <stdint.h>
#include <time.h>
double chase(const uint64_t *next, uint64_t steps, uint64_t *out) {
    struct timespec a, b;
    uint64_t i = 0;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (uint64_t s = 0; s < steps; s++) i = next[i];   /* each load depends on the one before */
    clock_gettime(CLOCK_MONOTONIC, &b);
    *out = i;                                            /* keeps the loop from being optimised away */
    return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
}
"""


def compiler_status() -> str:
    """"ok (<compiler>)" or why the chase cannot be compiled here."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    return f"ok ({cc})" if cc else "no C compiler (cc, gcc or clang) on PATH: pointer chasing cannot run here"


@functools.lru_cache(maxsize=1)
def _library():
    status = compiler_status()
    if not status.startswith("ok"):
        raise ValueError(status)
    cc = status[4:-1]
    with tempfile.TemporaryDirectory(prefix="aihw_chase_") as name:  # removed once loaded (the mapping stays)
        folder = Path(name)
        (folder / "chase.c").write_text(_SOURCE)
        done = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(folder / "chase.so"),
                               str(folder / "chase.c")], capture_output=True, text=True, timeout=60)
        if done.returncode:
            raise ValueError(f"compiling the pointer chase failed: {done.stderr.strip()[:300]}")
        lib = ctypes.CDLL(str(folder / "chase.so"))
    lib.chase.restype = ctypes.c_double
    lib.chase.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64)]
    return lib


def chain(working_set: int, stride: int = 64, *, order: str = "random", seed: int = 0) -> np.ndarray:
    """A cyclic chain over the 8-byte slots ``stride`` bytes apart in a ``working_set``-byte array."""
    working_set = int(require_positive("working_set", working_set, integer=True))
    stride = int(require_positive("stride", stride, integer=True))
    require_choice("order", order, ORDERS)
    if stride % 8:
        raise ValueError(f"stride must be a multiple of 8 bytes (one pointer), got {stride}")
    if working_set > MAX_WORKING_SET or working_set < 2 * stride:
        raise ValueError(f"working_set must be in [2 x stride, {MAX_WORKING_SET}] bytes, got {working_set}")
    slots = np.arange(0, working_set // 8, stride // 8, dtype=np.uint64)
    visit = np.random.default_rng(seed).permutation(slots) if order == "random" else slots
    nxt = np.zeros(working_set // 8, dtype=np.uint64)
    nxt[visit] = np.roll(visit, -1)
    return nxt


def pointer_chase(working_set: int, stride: int = 64, *, order: str = "random", steps: int = 1 << 21,
                  repeats: int = 3) -> dict:
    """Nanoseconds per dependent load (best and worst of ``repeats`` runs of ``steps`` loads)."""
    steps = int(require_positive("steps", steps, integer=True))
    repeats = int(require_positive("repeats", repeats, integer=True))
    nxt = chain(working_set, stride, order=order)
    lib = _library()
    out = ctypes.c_uint64()
    pointer = nxt.ctypes.data_as(ctypes.c_void_p)
    lib.chase(pointer, min(steps, len(nxt)), ctypes.byref(out))        # warm-up: touch the chain once
    times = [lib.chase(pointer, steps, ctypes.byref(out)) / steps * 1e9 for _ in range(repeats)]
    return {"working_set": working_set, "stride": stride, "order": order, "ns": min(times), "high": max(times)}


DEFAULT_SIZES: tuple[int, ...] = (1 << 14, 1 << 16, 1 << 18, 1 << 20, 1 << 22, 1 << 24, 1 << 26)


def latency_sweep(sizes: tuple[int, ...] = DEFAULT_SIZES, *, stride: int = 64,
                  order: str = "random", steps: int = 1 << 20) -> list[dict]:
    """:func:`pointer_chase` across working-set sizes (bytes)."""
    return [pointer_chase(s, stride, order=order, steps=steps) for s in sizes]


def stride_sweep(working_set: int = 16 << 20, strides: tuple[int, ...] = (8, 16, 32, 64, 128, 256, 512),
                 *, order: str = "sequential", steps: int = 1 << 20) -> list[dict]:
    """:func:`pointer_chase` across strides at one working set: below the cache line (64 B) several loads share
    a line; from 64 B on every load is a new line. Keep stride small against the working set: the chain touches
    working_set / stride lines, and once those fit in a cache the curve measures that cache instead."""
    return [pointer_chase(working_set, s, order=order, steps=steps) for s in strides]
