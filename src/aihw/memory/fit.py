"""Does it fit? The fewest chips of a given memory that hold a training or serving job (stdlib only).

Training scales the data-parallel degree under the chosen ZeRO stage (tensor and pipeline degrees stay as
configured); serving scales tensor parallelism over the degrees the heads allow, then pipeline stages.
Capacity is the chip's whole quoted memory: real runs need headroom for the framework and fragmentation.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from aihw._validate import require_positive
from aihw.catalogue.hardware import get_chip, list_chips
from aihw.memory.estimator import ZERO_STAGES, MemoryConfig, ZeroStage, estimate


def _per_device(cfg: MemoryConfig, **changes: Any) -> float:
    return estimate(dataclasses.replace(cfg, **changes)).per_device_bytes


def _zero_devices(cfg: MemoryConfig, capacity: float, max_devices: int) -> int | None:
    """Smallest dp whose per-device bytes fit: per-device = fixed + sharded/dp, solved in closed form."""
    one = _per_device(cfg, dp=1)
    if one <= capacity:
        return 1
    # per-device = fixed + sharded / dp for dp >= 2 (ZeRO-3's gather buffers exist only from dp = 2 on)
    two, four = _per_device(cfg, dp=2), _per_device(cfg, dp=4)
    sharded = 4 * (two - four)
    fixed = two - sharded / 2
    if sharded <= 0 or fixed >= capacity:
        return None
    dp = max(1, math.ceil(sharded / (capacity - fixed)))
    while dp <= max_devices and _per_device(cfg, dp=dp) > capacity:  # guard against rounding
        dp += 1
    return dp if dp <= max_devices else None


def _degrees(n: int, limit: int) -> list[int]:
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


def _serving_devices(cfg: MemoryConfig, capacity: float, max_devices: int) -> int | None:
    m = cfg.model
    if m is None:  # no architecture: weights split evenly over n devices
        need = math.ceil(_per_device(cfg, tp=1, pp=1) / capacity)
        return need if need <= max_devices else None
    tps = [t for t in _degrees(m.heads, max_devices) if m.n_kv_heads % t == 0 or t % m.n_kv_heads == 0]
    for tp in tps:
        if _per_device(cfg, tp=tp, pp=1, dp=1) <= capacity:
            return tp
    tp = tps[-1]
    for pp in _degrees(m.layers, max_devices // tp):
        if _per_device(cfg, tp=tp, pp=pp, dp=1) <= capacity:
            return tp * pp
    return None


def devices_needed(config: MemoryConfig, capacity_bytes: float, *, zero: ZeroStage | None = None,
                   max_devices: int = 65536) -> int | None:
    """Fewest devices of ``capacity_bytes`` each that hold ``config``; None if no split up to max_devices fits.

    Training: dp replicas under ZeRO stage ``zero`` (default: the config's), times the config's tp * pp.
    Serving: tensor parallelism first, then pipeline stages; ZeRO does not apply.
    """
    require_positive("capacity_bytes", capacity_bytes)
    require_positive("max_devices", max_devices, integer=True)
    if config.mode == "infer":
        return _serving_devices(config, capacity_bytes, max_devices)
    cfg = dataclasses.replace(config, zero=config.zero if zero is None else zero)
    dp = _zero_devices(cfg, capacity_bytes, max_devices)
    return None if dp is None else dp * cfg.tp * cfg.pp


def chip_fit(config: MemoryConfig, chip: str) -> dict:
    """``config`` against one catalogue chip: its capacity, whether the per-device memory of the configured
    layout fits (``fits``), whether one chip holds the whole job (``fits_one``), and the fewest chips per ZeRO
    stage (training) or with tensor then pipeline parallelism (serving, key ``"tp/pp"``)."""
    found = get_chip(chip)
    cap = float(found.memory_bytes)
    single = _per_device(config, dp=1, tp=1, pp=1, zero=0)
    row: dict[str, Any] = {"chip": found.name, "key": found.key, "capacity_bytes": cap,
                           "quoted": found.memory.quoted, "fits": estimate(config).per_device_bytes <= cap,
                           "fits_one": single <= cap}
    if config.mode == "train":
        row["devices"] = {stage: devices_needed(config, cap, zero=stage) for stage in ZERO_STAGES}
    else:
        row["devices"] = {"tp/pp": devices_needed(config, cap)}
    return row


def fit_table(config: MemoryConfig, chips: list[str] | None = None) -> list[dict]:
    """One row per catalogue chip (default: all of them), as :func:`chip_fit` gives it."""
    return [chip_fit(config, key) for key in (chips if chips is not None else [c.key for c in list_chips()])]
