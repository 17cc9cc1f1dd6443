"""Memory-access counts for a tiled matmul on a SIMT core (CUDA-core FMAs), to set beside the systolic array.

Counting model (element accesses, not bytes; ``AccessCounts.to_bytes`` converts). The GEMM is
C (m x n) = A (m x k) . B (k x n), written the classic way (shared-memory tiling plus register blocking):

* a thread block owns a ``tile`` x ``tile`` block of C and walks k; each A and B element is fetched from
  off-chip memory (HBM/DRAM) once per tile pass: A once per block column, B once per block row, so
  ``offchip_reads = m*k*ceil(n/tile) + k*n*ceil(m/tile)``. No L2 reuse is assumed (an upper bound).
  C is written once: ``offchip_writes = m*n``.
* every element fetched from off-chip is stored once in shared memory (``buffer_writes``). With Ampere's
  ``cp.async`` the copy bypasses the register file; ``staging_through_registers=True`` models the older
  ``ld.global`` -> register -> ``st.shared`` path (one register write and one read per element).
* each thread owns a ``thread_tile`` x ``thread_tile`` block of C in registers (register blocking). Per k step it
  loads ``thread_tile`` A values and ``thread_tile`` B values from shared memory into registers
  (``buffer_reads`` and as many ``register_file_writes``) and issues ``thread_tile**2`` FMAs: shared-memory reads
  per MAC fall from 2 to ``2/thread_tile``. Threads past a ragged edge are predicated off.
* every FMA reads three register operands (a, b and the accumulator) from the multi-ported register file and
  writes the accumulator back: 3 reads + 1 write per MAC. Register blocking does NOT change this.
  ``operand_reuse=True`` models the operand-reuse cache of NVIDIA SASS (Jia et al., "Dissecting the NVIDIA
  Volta GPU Architecture via Microbenchmarking", 2018, arXiv:1804.06826): the a operand, repeated over the
  inner loop, is read once per ``thread_tile`` FMAs, giving ``2 + 1/thread_tile`` reads per MAC.
* accumulators are zeroed once (m*n register writes) and read once for the final store (m*n reads).

Tensor cores: :func:`tensor_core_matmul_counts` counts the same GEMM issued as tensor-core instructions, one
model per generation, because where the operands come from changed with each (CUTLASS documentation of the
PTX instructions: docs.nvidia.com/cutlass, "Warp-Level MMA", "Warpgroup MMA", "tcgen05 MMA" programming guides):

* ``"ampere"`` (``mma.sync.m16n8k16``, also Ada): A, B and the accumulator all live in the register file.
  ``ldmatrix`` copies A and B fragments from shared memory into registers once per warp tile; each
  instruction then reads its A (16 x 16), B (16 x 8) and C (16 x 8) fragments from registers and writes D.
* ``"hopper"`` (``wgmma.mma_async.m64nNk16``, N up to 256): B is read straight from shared memory, and here A
  too (the shared-memory descriptor form); only the accumulator (64 x N) is in registers, read and written once
  per instruction.
* ``"blackwell"`` (``tcgen05.mma``, M = 128, N up to 256, K = 16 for 16-bit types): A and B from shared memory,
  the accumulator in *tensor memory* (TMEM, a per-SM SRAM beside the tensor cores), counted as
  ``tensor_memory_accesses``; registers see the accumulator only once, in the epilogue (``tcgen05.ld``).

Operand reuse *inside* a tensor core (how a 16 x 8 x 16 product is wired) is not published and not counted:
the model counts what crosses the tensor core's boundary. The systolic side of the comparison
(``aihw.chips.systolic``) has no register-file traffic at all: operands hop between neighbouring PEs through pipeline
latches (Kung, "Why systolic architectures?", IEEE Computer 1982).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Literal, get_args

from aihw._validate import require_choice, require_positive

ACCESS_FIELDS = ("register_file_reads", "register_file_writes", "buffer_reads", "buffer_writes",
                 "offchip_reads", "offchip_writes", "pe_register_transfers", "tensor_memory_accesses")

TensorCoreGeneration = Literal["ampere", "hopper", "blackwell"]
TENSOR_CORE_GENERATIONS: tuple[str, ...] = get_args(TensorCoreGeneration)
# (m, n, k) of one tensor-core instruction for 16-bit inputs (PTX ISA: mma.m16n8k16, wgmma.m64n256k16,
# tcgen05.mma with M=128, N=256, K=16)
INSTRUCTION_SHAPE: dict[str, tuple[int, int, int]] = {
    "ampere": (16, 8, 16), "hopper": (64, 256, 16), "blackwell": (128, 256, 16)}


@dataclass(frozen=True)
class AccessCounts:
    """Element accesses (not bytes) of one matmul, by level of the memory hierarchy.

    ``register_file_*``: the multi-ported register file a SIMT core reads for every FMA operand.
    ``buffer_*``: on-chip SRAM (TPU unified buffer / accumulators / weight FIFO, GPU shared memory).
    ``offchip_*``: HBM / DRAM. ``pe_register_transfers``: values latched into a neighbouring PE's pipeline
    register in a systolic array (a short wire and a flip-flop, not a register-file port).
    ``tensor_memory_accesses``: reads plus writes of Blackwell's tensor memory (accumulators).
    ``macs``: useful multiply-accumulates.
    """

    register_file_reads: int
    register_file_writes: int
    buffer_reads: int
    buffer_writes: int
    offchip_reads: int
    offchip_writes: int
    macs: int
    pe_register_transfers: int = 0
    tensor_memory_accesses: int = 0

    def as_dict(self) -> dict[str, int]:
        """All fields, by name."""
        return asdict(self)

    def to_bytes(self, bytes_per_element: float) -> dict[str, float]:
        """Traffic in bytes for each access field (``macs`` left out), at ``bytes_per_element`` bytes each."""
        width = require_positive("bytes_per_element", bytes_per_element)
        return {name: getattr(self, name) * width for name in ACCESS_FIELDS}

    def per_mac(self) -> dict[str, float]:
        """Accesses per useful MAC for each access field (``macs`` left out)."""
        macs = max(self.macs, 1)
        return {name: getattr(self, name) / macs for name in ACCESS_FIELDS}

    @property
    def register_file_accesses(self) -> int:
        """Register-file reads plus writes."""
        return self.register_file_reads + self.register_file_writes


def _thread_groups(extent: int, tile: int, thread_tile: int) -> int:
    """Threads along one output dimension: full blocks of ``tile`` plus a predicated ragged block."""
    full, rest = divmod(extent, tile)
    return full * (tile // thread_tile) + math.ceil(rest / thread_tile)


def simt_matmul_counts(m: int, n: int, k: int, *, tile: int = 64, thread_tile: int = 4,
                       operand_reuse: bool = False, staging_through_registers: bool = False) -> AccessCounts:
    """Element accesses of C (m x n) = A (m x k) . B (k x n) tiled on a SIMT core (see the module docstring).

    ``tile``: shared-memory tile edge (elements); ``thread_tile``: register-blocking edge per thread, which must
    divide ``tile``. Returns :class:`AccessCounts` with ``pe_register_transfers = 0``.
    """
    m, n, k = (require_positive(name, v, integer=True) for name, v in (("m", m), ("n", n), ("k", k)))
    tile = require_positive("tile", tile, integer=True)
    thread_tile = require_positive("thread_tile", thread_tile, integer=True)
    if tile % thread_tile:
        raise ValueError(f"thread_tile must divide tile; got thread_tile={thread_tile!r}, tile={tile!r}")
    macs = m * n * k
    offchip_reads = m * k * math.ceil(n / tile) + k * n * math.ceil(m / tile)
    a_fragments = k * m * _thread_groups(n, tile, thread_tile)   # A values loaded smem -> registers
    b_fragments = k * n * _thread_groups(m, tile, thread_tile)
    staged = offchip_reads if staging_through_registers else 0
    a_operand_reads = a_fragments if operand_reuse else macs
    return AccessCounts(
        register_file_reads=a_operand_reads + 2 * macs + m * n + staged,
        register_file_writes=macs + a_fragments + b_fragments + m * n + staged,
        buffer_reads=a_fragments + b_fragments,
        buffer_writes=offchip_reads,
        offchip_reads=offchip_reads,
        offchip_writes=m * n,
        macs=macs,
    )


def tensor_core_matmul_counts(m: int, n: int, k: int, *, generation: str = "hopper", tile: int = 128,
                              warp_tile: int = 64) -> AccessCounts:
    """Element accesses of C (m x n) = A (m x k) . B (k x n) issued as tensor-core instructions.

    ``generation``: "ampere", "hopper" or "blackwell" (see the module docstring for where each reads its
    operands). ``tile``: the thread block's square output tile, staged through shared memory as in
    :func:`simt_matmul_counts` (copied by ``cp.async`` / TMA, bypassing registers); ``warp_tile``: the square
    output tile of one warp (Ampere only; it must divide ``tile``). Ragged edges are rounded up to whole
    instructions (padding MACs are not counted in ``macs``).
    """
    m, n, k = (require_positive(name, v, integer=True) for name, v in (("m", m), ("n", n), ("k", k)))
    tile = require_positive("tile", tile, integer=True)
    warp_tile = require_positive("warp_tile", warp_tile, integer=True)
    require_choice("generation", generation, TENSOR_CORE_GENERATIONS)
    if tile % warp_tile:
        raise ValueError(f"warp_tile must divide tile; got warp_tile={warp_tile!r}, tile={tile!r}")
    im, in_, ik = INSTRUCTION_SHAPE[generation]
    pm, pn, pk = (math.ceil(x / s) * s for x, s in ((m, im), (n, in_), (k, ik)))  # padded to instructions
    instructions = (pm // im) * (pn // in_) * (pk // ik)
    offchip_reads = m * k * math.ceil(n / tile) + k * n * math.ceil(m / tile)
    a_elems, b_elems, acc_elems = instructions * im * ik, instructions * ik * in_, instructions * im * in_
    epilogue = m * n                       # accumulators read out once (and zeroed once)
    if generation == "ampere":
        groups_m, groups_n = math.ceil(m / warp_tile), math.ceil(n / warp_tile)
        a_frag, b_frag = pm * pk * groups_n, pk * pn * groups_m   # ldmatrix: smem -> registers per warp tile
        return AccessCounts(register_file_reads=a_elems + b_elems + acc_elems + epilogue,
                            register_file_writes=acc_elems + a_frag + b_frag + epilogue,
                            buffer_reads=a_frag + b_frag, buffer_writes=offchip_reads,
                            offchip_reads=offchip_reads, offchip_writes=m * n, macs=m * n * k)
    if generation == "hopper":
        return AccessCounts(register_file_reads=acc_elems + epilogue, register_file_writes=acc_elems + epilogue,
                            buffer_reads=a_elems + b_elems, buffer_writes=offchip_reads,
                            offchip_reads=offchip_reads, offchip_writes=m * n, macs=m * n * k)
    return AccessCounts(register_file_reads=epilogue, register_file_writes=epilogue,
                        buffer_reads=a_elems + b_elems, buffer_writes=offchip_reads,
                        offchip_reads=offchip_reads, offchip_writes=m * n, macs=m * n * k,
                        tensor_memory_accesses=2 * acc_elems + epilogue)
