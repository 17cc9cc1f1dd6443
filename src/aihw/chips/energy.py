"""Energy per operation and per access, attached to access counts: picojoules per MAC, with an uncertainty band.

Source: Horowitz, "Computing's energy problem (and what we can do about it)", ISSCC 2014 (45 nm, 0.9 V). Per
operation: 8-bit int add 0.03 pJ, 32-bit int add 0.1 pJ, 8-bit int multiply 0.2 pJ, 32-bit int multiply 3.1 pJ;
16-bit float add 0.4 pJ, 32-bit float add 0.9 pJ, 16-bit float multiply 1.1 pJ, 32-bit float multiply 3.7 pJ.
Per 64-bit SRAM read: 10 pJ (8 KB), 20 pJ (32 KB), 100 pJ (1 MB); DRAM 1.3-2.6 nJ per 64 bits.

How the model uses them (each level an assumption, stated):

* a MAC is one multiply plus one add at the accumulator's width: fp32 3.7 + 0.9; bf16/fp16 inputs with an fp32
  accumulator (tensor cores, MXUs) 1.1 + 0.9; int8 with an int32 accumulator 0.2 + 0.1.
* ``register_file``: a GPU register file is 64 KB per SM sub-partition, banked; its access is priced as an 8-32 KB
  SRAM read (1.25-2.5 pJ/byte). Being multi-ported it likely costs more per bit, so this favours the GPU.
* ``tensor_memory`` (Blackwell's accumulator SRAM): priced like the register file (same size class).
* ``buffer`` (GPU shared memory, TPU unified buffer / accumulators): a 32 KB-1 MB SRAM (2.5-12.5 pJ/byte).
* ``offchip`` (HBM / DRAM): 1.3-2.6 nJ per 64 bits (162-325 pJ/byte). This is Horowitz's DDR figure; HBM costs
  less per bit, which lowers this term for every design alike (the access counts are nearly equal).
* ``pe_latch`` (a value latched into the neighbouring PE of a systolic array): Horowitz lists no flip-flop.
  The high end is the Eyeriss figure for moving a value between PEs, 2x the energy of a 16-bit MAC (Sze, Chen,
  Yang, Emer, Proc. IEEE 2017, Fig. "normalized energy cost"); the low end, 0.1x a 16-bit MAC per value, is this
  course's assumption for a flip-flop plus a wire one PE long (no source; the band is wide on purpose).

Every access is priced at the operand width (``bytes_per_element``): accumulators are wider in reality, which
understates the register-file and tensor-memory terms. Process scaling: Horowitz's figures are for 45 nm. On a
newer node logic and SRAM energy fall by roughly a common factor (C V^2), while off-chip I/O energy falls much
less; ``on_chip_scale`` multiplies the arithmetic and every on-chip level and leaves ``offchip`` alone. A common
factor does not change which design spends less on chip, only the on-chip/off-chip split.
The energy is linear in every access count with non-negative prices, so more accesses never cost less energy.
Standard library only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

from aihw._validate import require_choice, require_positive
from aihw.chips.simt import AccessCounts

Band = Literal["low", "central", "high"]
BANDS: tuple[str, ...] = get_args(Band)
MacPrecision = Literal["fp32", "bf16", "fp16", "int8"]
MAC_PRECISIONS: tuple[str, ...] = get_args(MacPrecision)
Level = Literal["register_file", "tensor_memory", "buffer", "offchip", "pe_latch"]
LEVELS: tuple[str, ...] = get_args(Level)

# Horowitz ISSCC 2014, 45 nm: pJ per operation
HOROWITZ_OP_PJ: dict[str, float] = {
    "int8_add": 0.03, "int32_add": 0.1, "int8_mult": 0.2, "int32_mult": 3.1,
    "fp16_add": 0.4, "fp32_add": 0.9, "fp16_mult": 1.1, "fp32_mult": 3.7,
}
# Horowitz ISSCC 2014, 45 nm: pJ per 64-bit access
HOROWITZ_ACCESS_PJ_PER_64BIT: dict[str, tuple[float, float]] = {
    "sram_8kb": (10.0, 10.0), "sram_32kb": (20.0, 20.0), "sram_1mb": (100.0, 100.0), "dram": (1300.0, 2600.0),
}
BYTES_PER_ELEMENT: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "int8": 1}

# count field of AccessCounts -> level it is priced at
FIELD_LEVEL: dict[str, str] = {
    "register_file_reads": "register_file", "register_file_writes": "register_file",
    "tensor_memory_accesses": "tensor_memory", "buffer_reads": "buffer", "buffer_writes": "buffer",
    "offchip_reads": "offchip", "offchip_writes": "offchip", "pe_register_transfers": "pe_latch",
}


def mac_energy_pj(precision: str = "bf16") -> float:
    """Energy of one multiply-accumulate at ``precision`` (45 nm, pJ): multiply at the input width, add at the
    accumulator's (fp32 for fp32/bf16/fp16, int32 for int8)."""
    require_choice("precision", precision, MAC_PRECISIONS)
    op = HOROWITZ_OP_PJ
    return {"fp32": op["fp32_mult"] + op["fp32_add"], "bf16": op["fp16_mult"] + op["fp32_add"],
            "fp16": op["fp16_mult"] + op["fp32_add"], "int8": op["int8_mult"] + op["int32_add"]}[precision]


def _per_byte(key: str, which: int) -> float:
    return HOROWITZ_ACCESS_PJ_PER_64BIT[key][which] / 8


def access_energy_pj_per_byte(level: str, band: str = "central") -> float:
    """Energy to read or write one byte at ``level`` (45 nm, pJ/byte), at the ``band``'s end of its range."""
    require_choice("level", level, LEVELS)
    require_choice("band", band, BANDS)
    if level in ("register_file", "tensor_memory"):
        low, high = _per_byte("sram_8kb", 0), _per_byte("sram_32kb", 0)
    elif level == "buffer":
        low, high = _per_byte("sram_32kb", 0), _per_byte("sram_1mb", 0)
    elif level == "offchip":
        low, high = _per_byte("dram", 0), _per_byte("dram", 1)
    else:  # pe_latch: 0.1x to 2x a 16-bit MAC per 2-byte value
        low, high = 0.1 * mac_energy_pj("bf16") / 2, 2.0 * mac_energy_pj("bf16") / 2
    return {"low": low, "high": high, "central": math.sqrt(low * high)}[band]


@dataclass(frozen=True)
class EnergyPerMac:
    """Picojoules per useful MAC, by part: ``arithmetic`` and one entry per memory level; ``total`` their sum."""

    arithmetic: float
    levels: dict[str, float]
    band: str
    precision: str

    @property
    def total(self) -> float:
        return self.arithmetic + sum(self.levels.values())

    @property
    def data_movement(self) -> float:
        """Everything but the arithmetic (pJ/MAC)."""
        return sum(self.levels.values())


def energy_per_mac(counts: AccessCounts, *, precision: str = "bf16", band: str = "central",
                   on_chip_scale: float = 1.0) -> EnergyPerMac:
    """Energy per useful MAC of a matmul with these access counts (pJ), priced as the module docstring says.

    ``on_chip_scale`` (> 0, 1 = 45 nm as published) multiplies the arithmetic and the on-chip levels.
    """
    require_choice("precision", precision, MAC_PRECISIONS)
    require_choice("band", band, BANDS)
    scale = require_positive("on_chip_scale", on_chip_scale)
    if counts.macs <= 0:
        raise ValueError(f"counts.macs must be positive to price energy per MAC, got {counts.macs!r}")
    width = BYTES_PER_ELEMENT[precision]
    levels = dict.fromkeys(LEVELS, 0.0)
    for name, level in FIELD_LEVEL.items():
        price = access_energy_pj_per_byte(level, band) * (1.0 if level == "offchip" else scale)
        levels[level] += getattr(counts, name) * width * price / counts.macs
    return EnergyPerMac(arithmetic=mac_energy_pj(precision) * scale, levels=levels, band=band, precision=precision)


def energy_band(counts: AccessCounts, *, precision: str = "bf16", on_chip_scale: float = 1.0) -> dict[str, float]:
    """Total pJ per MAC at the low, central and high ends of every price range."""
    return {b: energy_per_mac(counts, precision=precision, band=b, on_chip_scale=on_chip_scale).total
            for b in BANDS}


MAX_DESIGN_SIZE = 1024  # the systolic simulation runs cycle by cycle: keep it to about a second


def design_counts(n: int, *, array: int = 128) -> dict[str, AccessCounts]:
    """Access counts of one n x n x n matmul on each design the chapter compares.

    "systolic": the cycle-by-cycle weight-stationary simulator (``array`` x ``array``, double-buffered weights);
    "CUDA cores": :func:`aihw.chips.simt.simt_matmul_counts`; "tensor cores (<generation>)":
    :func:`aihw.chips.simt.tensor_core_matmul_counts` with the same shared-memory tile as the array.
    """
    import numpy as np

    from aihw.chips import simt, systolic

    n = int(require_positive("n", n, integer=True))
    if n > MAX_DESIGN_SIZE:
        raise ValueError(f"n={n} is beyond what the systolic simulation allows here (at most {MAX_DESIGN_SIZE})")
    ones = np.ones((n, n))
    counts = {"systolic": systolic.simulate(ones, ones, size=array, double_buffered=True).counts,
              "CUDA cores": simt.simt_matmul_counts(n, n, n)}
    for generation in simt.TENSOR_CORE_GENERATIONS:
        counts[f"tensor cores ({generation})"] = simt.tensor_core_matmul_counts(
            n, n, n, generation=generation, tile=array, warp_tile=min(64, array))
    return counts
