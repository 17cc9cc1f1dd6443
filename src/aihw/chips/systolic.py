"""Cycle-by-cycle N x N systolic array computing C = A . B, weight-stationary or output-stationary.

Sources: Kung, "Why systolic architectures?", IEEE Computer 15(1), 1982 (each operand enters the array once
and is reused by every PE it passes); Jouppi et al., "In-Datacenter Performance Analysis of a Tensor
Processing Unit", ISCA 2017, arXiv:1704.04760 (TPU v1: a 256 x 256 weight-stationary matrix unit fed from a
weight FIFO and a unified buffer, partial sums collected in accumulators below the array).

Every cycle the register state of all PEs is updated at once with numpy shifts (a Python loop over cycles,
none over PEs). PE (i, j) is row i, column j. Accumulation is wide: int64 for integer inputs, float64 (or
complex128) otherwise. A is M x K, B is K x N_cols, the array is N x N; T_x = ceil(x / N).

Weight-stationary. For each block of B (at most N x N: k_t rows, n_t columns; n-tiles outer, k-tiles inner):
  1. load, N cycles: the weight registers shift down one row a cycle, the tile's last row first, so PE (i, j)
     ends up holding B_tile[i, j] (zero outside the tile);
  2. compute: A[m, k] enters row k from the left at cycle m + k and moves one column right a cycle, so PE
     (k, j) uses it at cycle m + k + j. The partial sum of C[m, j] starts at zero above row 0, moves one row
     down a cycle adding a * w, passes the zero-weight rows below the tile and leaves the bottom edge at cycle
     m + (N - 1) + j into the accumulators, which add the K tiles. The tile ends when its last output leaves:
     M + N + n_t - 2 cycles.
  cycles = T_k * (T_n * (M + 2N - 2) + N_cols); one full tile: N + M + 2N - 2 = M + 3N - 2.
Output-stationary. For each block of C (m_t x n_t <= N x N), PE (i, j) accumulates C[i, j]:
  1. compute: A[i, k] enters row i at cycle i + k and moves right; B[k, j] enters column j at cycle k + j and
     moves down; they meet in PE (i, j) at cycle i + j + k: K + m_t + n_t - 2 cycles;
  2. drain, N cycles: the accumulators shift down one row a cycle out of the bottom edge.
  cycles = T_m * T_n * (K + N - 2) + T_n * M + T_m * N_cols; one full tile: K + 3N - 2.
By default neither dataflow overlaps loading or draining with compute: every weight tile's N load cycles are
exposed. The TPU double-buffers its weights (Jouppi et al. 2017: the next tile is shifted in while the current
one computes), so the default multi-tile counts are an upper bound. ``double_buffered=True``
(weight-stationary only) models that: each PE holds a second, shadow weight register; the next tile shifts into
the shadows during the current tile's compute (N <= M + N + n_t - 2 cycles, so the load always fits) and is
swapped in at once when the tile ends. Only the first load is exposed:
  cycles = N + T_k * (T_n * (M + N - 2) + N_cols).
The shadow loads still move every weight through N rows of latches and are counted as transfers. Utilisation per cycle = PEs doing a useful MAC / N^2 (zero while loading
or draining); its mean is macs / (cycles * N^2).

Counting model (element accesses; see :class:`aihw.chips.simt.AccessCounts`):
* register file: none. Operands hop PE to PE through pipeline latches, counted as ``pe_register_transfers``
  and measured in the simulation: every valid value latched in a cycle (activations inside the tile's
  columns, partial sums in every row they cross, weights while they shift in; for output-stationary the A
  and B operands and the accumulators while they drain).
* tiling sets the off-chip traffic, as for the SIMT model: each A/B element is fetched once per tile pass.
  Weight-stationary: ``offchip_reads = M*K*T_n + K*N_cols`` (A once per n-tile, B once), staged through the
  unified buffer / weight FIFO (one buffer write and one read each). Accumulators are on-chip SRAM: one
  write per output per k-tile, one read per output per k-tile (read-modify-write, then the final read-out).
  Output-stationary: ``offchip_reads = M*K*T_n + K*N_cols*T_m``, staged through edge buffers (one write and
  one read each); partial sums never leave the PEs. Both: ``offchip_writes = M*N_cols``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np

from aihw._validate import require_choice, require_in_range, require_positive
from aihw.chips.simt import AccessCounts, simt_matmul_counts

__all__ = ["DATAFLOWS", "AccessCounts", "SystolicConfig", "SystolicResult", "SystolicTrace", "predicted_cycles",
           "simt_matmul_counts", "simulate", "trace", "utilisation_sweep"]

Dataflow = Literal["weight-stationary", "output-stationary"]
DATAFLOWS: tuple[str, ...] = get_args(Dataflow)
MAX_SIZE = 512          # PEs per side accepted by the simulator
TRACE_MAX_SIZE = 8      # largest array whose per-cycle state `trace` will record
TRACE_MAX_CYCLES = 20_000
# simulate() steps cycle by cycle in Python (~0.1 ms per cycle plus ~10-30 ns per PE per cycle on one core), so
# it refuses work beyond these (tens of seconds); predicted_cycles() answers any size at once.
SIMULATE_MAX_CYCLES = 100_000
SIMULATE_MAX_PE_CYCLES = 500_000_000


@dataclass(frozen=True)
class SystolicConfig:
    """An N x N array (``size`` = N PEs per side, 1..512), its dataflow and whether weights are double-buffered."""

    size: int
    dataflow: Dataflow = "weight-stationary"   # or "output-stationary"
    double_buffered: bool = False          # weight-stationary only: load the next weight tile during compute

    def __post_init__(self) -> None:
        if isinstance(self.size, bool) or not isinstance(self.size, (int, np.integer)):
            raise ValueError(f"size must be an integer in [1, {MAX_SIZE}], got {self.size!r}")
        require_in_range("size", int(self.size), 1, MAX_SIZE)
        object.__setattr__(self, "size", int(self.size))
        require_choice("dataflow", self.dataflow, DATAFLOWS)
        if not isinstance(self.double_buffered, bool):
            raise ValueError(f"double_buffered must be True or False, got {self.double_buffered!r}")
        if self.double_buffered and self.dataflow != "weight-stationary":
            raise ValueError("double_buffered=True models the weight-stationary array's shadow weight registers; "
                             f"got dataflow={self.dataflow!r}")


@dataclass(frozen=True)
class SystolicResult:
    """Product, cycle count, per-cycle utilisation (fraction of PEs doing a useful MAC) and access counts."""

    C: np.ndarray
    cycles: int
    utilisation: np.ndarray
    counts: AccessCounts
    config: SystolicConfig

    @property
    def mean_utilisation(self) -> float:
        """Useful MACs / (cycles * N^2)."""
        return float(self.utilisation.mean()) if self.cycles else 0.0


@dataclass(frozen=True)
class SystolicTrace:
    """Per-cycle PE state of a small array, arrays shaped (cycles, N, N), NaN where a register holds nothing.

    ``a``: activation (A operand) in each PE; ``b``: weight (weight-stationary) or B operand; ``psum``: partial
    sum leaving the PE (weight-stationary) or its accumulator; ``fire``: the PE did a useful MAC;
    ``phase``: "load weights", "compute" or "drain"; ``tile``: (cycles, 2) offsets of the tile, (k, n) in B
    for weight-stationary, (m, n) in C for output-stationary.
    """

    config: SystolicConfig
    C: np.ndarray
    phase: tuple[str, ...]
    tile: np.ndarray
    a: np.ndarray
    b: np.ndarray
    psum: np.ndarray
    fire: np.ndarray

    @property
    def cycles(self) -> int:
        return len(self.phase)


@dataclass
class _Tape:
    """What a run accumulates cycle by cycle (local to one call)."""

    size: int
    record: list | None = None
    fired: list[int] = field(default_factory=list)
    transfers: int = 0

    def tick(self, fired: int, moved: int) -> None:
        self.fired.append(fired)
        self.transfers += moved

    def snap(self, phase: str, origin: tuple[int, int], *, a: np.ndarray | None = None,
             a_ok: np.ndarray | None = None, b: np.ndarray | None = None, b_ok: np.ndarray | None = None,
             p: np.ndarray | None = None, p_ok: np.ndarray | None = None, fire: np.ndarray | None = None) -> None:
        empty = np.full((self.size, self.size), np.nan)
        def masked(v: np.ndarray | None, ok: np.ndarray | None) -> np.ndarray:
            return empty.copy() if v is None or ok is None else np.where(ok, v, np.nan)
        fire = np.zeros((self.size, self.size), bool) if fire is None else fire.copy()
        assert self.record is not None, "snap() records only when tracing"
        self.record.append((phase, origin, masked(a, a_ok), masked(b, b_ok), masked(p, p_ok), fire))


def _shift_right(x: np.ndarray, column: np.ndarray | int) -> None:
    x[:, 1:] = x[:, :-1]
    x[:, 0] = column


def _shift_down(x: np.ndarray, row: np.ndarray | int) -> None:
    x[1:] = x[:-1]
    x[0] = row


def _ws_load(w_tile: np.ndarray, size: int, tape: _Tape, origin: tuple[int, int], *,
             hidden: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Shift a weight tile into the array, one row per cycle (N cycles); ``hidden``: into the shadow registers
    during the previous tile's compute (transfers counted, no cycles added)."""
    k_t, n_t = w_tile.shape
    padded = np.zeros((size, size), w_tile.dtype)
    padded[:k_t, :n_t] = w_tile
    padded_ok = np.zeros((size, size), bool)
    padded_ok[:k_t, :n_t] = True
    w, w_ok = np.zeros_like(padded), np.zeros_like(padded_ok)
    for c in range(size):
        _shift_down(w, padded[size - 1 - c])
        _shift_down(w_ok, padded_ok[size - 1 - c])
        if hidden:
            tape.transfers += int(w_ok.sum())
            continue
        tape.tick(0, int(w_ok.sum()))
        if tape.record is not None:
            tape.snap("load weights", origin, b=w, b_ok=w_ok)
    return w, w_ok


def _ws_compute(a_tile: np.ndarray, w: np.ndarray, w_ok: np.ndarray, out: np.ndarray,
                tape: _Tape, origin: tuple[int, int]) -> None:
    """Stream ``a_tile`` (M x k_t) through the loaded weights; add the M x n_t results into ``out``."""
    size, (m_rows, k_t), n_t = w.shape[0], a_tile.shape, out.shape[1]
    idx = np.arange(size)
    in_cols = idx < n_t
    a, a_ok = np.zeros_like(w), np.zeros((size, size), bool)
    p, p_ok = np.zeros_like(w), np.zeros((size, size), bool)
    for t in range(m_rows + size + n_t - 2):
        m_in = t - idx                                   # row of A entering each PE row this cycle
        enter = (m_in >= 0) & (m_in < m_rows) & (idx < k_t)
        column = np.zeros(size, w.dtype)
        column[enter] = a_tile[m_in[enter], idx[enter]]
        _shift_right(a, column)
        _shift_right(a_ok, enter)
        a_ok &= in_cols                                  # not forwarded past the tile's last column
        _shift_down(p, 0)
        _shift_down(p_ok, (t - idx >= 0) & (t - idx < m_rows) & in_cols)
        p += a * w
        m_out = t - (size - 1) - idx                     # row of C leaving the bottom of each column
        leave = (m_out >= 0) & (m_out < m_rows) & in_cols
        out[m_out[leave], idx[leave]] += p[size - 1, leave]
        fire = a_ok & w_ok
        tape.tick(int(fire.sum()), int(a_ok.sum() + p_ok.sum()))
        if tape.record is not None:
            tape.snap("compute", origin, a=a, a_ok=a_ok, b=w, b_ok=w_ok, p=p, p_ok=p_ok, fire=fire)


def _os_tile(a_tile: np.ndarray, b_tile: np.ndarray, out: np.ndarray, size: int,
             tape: _Tape, origin: tuple[int, int]) -> None:
    """Accumulate the m_t x n_t block ``out`` in place in the PEs, then drain it out of the bottom edge."""
    (m_t, k), n_t = a_tile.shape, b_tile.shape[1]
    idx = np.arange(size)
    in_rows, in_cols = idx < m_t, idx < n_t
    a, b, acc = (np.zeros((size, size), out.dtype) for _ in range(3))
    a_ok, b_ok = np.zeros((size, size), bool), np.zeros((size, size), bool)
    acc_ok = in_rows[:, None] & in_cols[None, :]
    for t in range(k + m_t + n_t - 2):
        k_in = t - idx                                   # k index entering row i (A) and column j (B)
        a_enter = (k_in >= 0) & (k_in < k) & in_rows
        b_enter = (k_in >= 0) & (k_in < k) & in_cols
        column, row = np.zeros(size, out.dtype), np.zeros(size, out.dtype)
        column[a_enter] = a_tile[idx[a_enter], k_in[a_enter]]
        row[b_enter] = b_tile[k_in[b_enter], idx[b_enter]]
        _shift_right(a, column)
        _shift_right(a_ok, a_enter)
        _shift_down(b, row)
        _shift_down(b_ok, b_enter)
        a_ok &= in_cols[None, :]
        b_ok &= in_rows[:, None]
        acc += a * b
        fire = a_ok & b_ok
        tape.tick(int(fire.sum()), int(a_ok.sum() + b_ok.sum()))
        if tape.record is not None:
            tape.snap("compute", origin, a=a, a_ok=a_ok, b=b, b_ok=b_ok, p=acc, p_ok=acc_ok, fire=fire)
    for d in range(size):                                # drain: bottom row leaves, the rest shift down
        if size - 1 - d < m_t:
            out[size - 1 - d] = acc[size - 1, :n_t]
        _shift_down(acc, 0)
        _shift_down(acc_ok, False)
        tape.tick(0, int(acc_ok.sum()))
        if tape.record is not None:
            tape.snap("drain", origin, p=acc, p_ok=acc_ok)


def _as_matrix(name: str, x: object) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got an array with shape {arr.shape}")
    if 0 in arr.shape:
        raise ValueError(f"{name} must have at least one row and one column, got shape {arr.shape}")
    if arr.dtype != bool and not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"{name} must hold numbers (bool, int, float or complex), got dtype {arr.dtype}")
    return arr


def _operands(A: object, B: object) -> tuple[np.ndarray, np.ndarray]:
    """Validated operands, cast to the accumulator type (int64, float64 or complex128)."""
    a, b = _as_matrix("A", A), _as_matrix("B", B)
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"inner dimensions must match: A is {a.shape}, B is {b.shape} "
                         f"(A columns {a.shape[1]} != B rows {b.shape[0]})")
    kind = np.result_type(a, b).kind
    acc = np.int64 if kind in "biu" else np.complex128 if kind == "c" else np.float64
    return a.astype(acc), b.astype(acc)


def predicted_cycles(m: int, k: int, n: int, *, size: int, dataflow: Dataflow = "weight-stationary",
                     double_buffered: bool = False) -> int:
    """Closed-form cycle count of C (m x n) = A (m x k) . B (k x n) (see the module docstring)."""
    m, k, n = (require_positive(name, v, integer=True) for name, v in (("m", m), ("k", k), ("n", n)))
    cfg = SystolicConfig(size, dataflow, double_buffered)
    t_m, t_k, t_n = (math.ceil(x / cfg.size) for x in (m, k, n))
    if cfg.double_buffered:
        return cfg.size + t_k * (t_n * (m + cfg.size - 2) + n)
    if cfg.dataflow == "weight-stationary":
        return t_k * (t_n * (m + 2 * cfg.size - 2) + n)
    return t_m * t_n * (k + cfg.size - 2) + t_n * m + t_m * n


def _counts(m: int, k: int, n: int, cfg: SystolicConfig, tape: _Tape) -> AccessCounts:
    t_m, t_k, t_n = (math.ceil(x / cfg.size) for x in (m, k, n))
    if cfg.dataflow == "weight-stationary":
        offchip = m * k * t_n + k * n
        buffer_writes, buffer_reads = offchip + t_k * m * n, offchip + t_k * m * n
    else:
        offchip = m * k * t_n + k * n * t_m
        buffer_writes = buffer_reads = offchip
    return AccessCounts(register_file_reads=0, register_file_writes=0, buffer_reads=buffer_reads,
                        buffer_writes=buffer_writes, offchip_reads=offchip, offchip_writes=m * n,
                        macs=int(sum(tape.fired)), pe_register_transfers=tape.transfers)


def _run(A: object, B: object, cfg: SystolicConfig, record: list | None) -> tuple[SystolicResult, _Tape]:
    a, b = _operands(A, B)
    (m, k), n, size = a.shape, b.shape[1], cfg.size
    cycles = predicted_cycles(m, k, n, size=size, dataflow=cfg.dataflow)
    if cycles > SIMULATE_MAX_CYCLES or cycles * size**2 > SIMULATE_MAX_PE_CYCLES:
        raise ValueError(f"simulating A {a.shape} x B {b.shape} on a {size} x {size} array takes {cycles:,} cycles "
                         f"({cycles * size**2:.3g} PE-cycles); simulate() allows at most {SIMULATE_MAX_CYCLES:,} "
                         f"cycles and {SIMULATE_MAX_PE_CYCLES:.0e} PE-cycles (it steps in Python): use smaller "
                         "matrices, or predicted_cycles() for the cycle count of any size")
    C = np.zeros((m, n), a.dtype)
    tape = _Tape(size, record)
    if cfg.dataflow == "weight-stationary":
        first = True
        for j0 in range(0, n, size):
            for k0 in range(0, k, size):
                hidden = cfg.double_buffered and not first
                w, w_ok = _ws_load(b[k0:k0 + size, j0:j0 + size], size, tape, (k0, j0), hidden=hidden)
                first = False
                _ws_compute(a[:, k0:k0 + size], w, w_ok, C[:, j0:j0 + size], tape, (k0, j0))
    else:
        for i0 in range(0, m, size):
            for j0 in range(0, n, size):
                _os_tile(a[i0:i0 + size], b[:, j0:j0 + size], C[i0:i0 + size, j0:j0 + size], size, tape, (i0, j0))
    utilisation = np.asarray(tape.fired, dtype=float) / size**2
    result = SystolicResult(C=C, cycles=len(tape.fired), utilisation=utilisation,
                            counts=_counts(m, k, n, cfg, tape), config=cfg)
    return result, tape


def simulate(A: object, B: object, *, size: int, dataflow: Dataflow = "weight-stationary",
             double_buffered: bool = False) -> SystolicResult:
    """Run C = A . B on a ``size`` x ``size`` systolic array, cycle by cycle (see the module docstring)."""
    return _run(A, B, SystolicConfig(size, dataflow, double_buffered), record=None)[0]


def utilisation_sweep(sizes: tuple[int, ...] | list[int], *, size: int, dataflow: Dataflow = "weight-stationary",
                      double_buffered: bool = False) -> list[dict[str, float]]:
    """Mean utilisation of square n x n x n matmuls on a ``size`` x ``size`` array, from the closed-form cycles.

    Returns one row per n: ``n``, ``cycles``, ``utilisation`` = n^3 / (cycles * size^2). The closed form equals
    the simulator's count (tests check it), so large n cost nothing to sweep.
    """
    if not sizes:
        raise ValueError("sizes must list at least one matrix size")
    rows = []
    for n in sizes:
        n = require_positive("n", n, integer=True)
        cycles = predicted_cycles(n, n, n, size=size, dataflow=dataflow, double_buffered=double_buffered)
        rows.append({"n": n, "cycles": cycles, "utilisation": n**3 / (cycles * size**2)})
    return rows


def trace(A: object, B: object, *, size: int, dataflow: Dataflow = "weight-stationary",
          double_buffered: bool = False) -> SystolicTrace:
    """Per-cycle PE state for a step-through view; only for arrays of at most 8 x 8 PEs."""
    cfg = SystolicConfig(size, dataflow, double_buffered)
    if cfg.size > TRACE_MAX_SIZE:
        raise ValueError(f"trace records every PE every cycle: size must be in [1, {TRACE_MAX_SIZE}], "
                         f"got {size!r}; use simulate() for larger arrays")
    a, b = _operands(A, B)
    cycles = predicted_cycles(a.shape[0], a.shape[1], b.shape[1], size=cfg.size, dataflow=cfg.dataflow,
                              double_buffered=cfg.double_buffered)
    if cycles > TRACE_MAX_CYCLES:
        raise ValueError(f"trace would record {cycles} cycles, allowed at most {TRACE_MAX_CYCLES}; "
                         "use smaller matrices or simulate()")
    record: list = []
    result, _ = _run(a, b, cfg, record)
    phase, origin, a_s, b_s, p_s, fire = zip(*record, strict=True)
    return SystolicTrace(config=cfg, C=result.C, phase=tuple(phase), tile=np.array(origin, dtype=int),
                         a=np.stack(a_s), b=np.stack(b_s), psum=np.stack(p_s), fire=np.stack(fire))
