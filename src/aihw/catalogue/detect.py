"""Which catalogue chip is the GPU this process sees? Matched by the name the driver reports and its compute
capability (standard library).

The driver's names are not the catalogue's: an H100 SXM reports itself as "NVIDIA H100 80GB HBM3", an A100 as
"NVIDIA A100-SXM4-40GB", a T4 as "Tesla T4". Each rule below names the catalogue chip, a pattern for the
reported name and the compute capability that chip has (NVIDIA, "CUDA GPU Compute Capability",
https://developer.nvidia.com/cuda-gpus, read 2026-12-01). A GPU whose name matches no rule, or whose capability
disagrees with the rule's, is not in the catalogue: the labs then use measured figures only and say so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from aihw.catalogue.hardware import Chip, get_chip

CAPABILITY_SOURCE = "https://developer.nvidia.com/cuda-gpus"


@dataclass(frozen=True)
class _Rule:
    chip: str  # catalogue name
    pattern: str  # regular expression, matched case-insensitively against the reported name
    capability: tuple[int, int] | None  # None for non-NVIDIA chips (ROCm reports a gfx target instead)


# Order matters: the first rule that matches wins (PCIe before the generic H100 rule).
RULES: tuple[_Rule, ...] = (
    _Rule("NVIDIA T4", r"\bT4\b", (7, 5)),
    _Rule("NVIDIA L4", r"\bL4\b(?!0)", (8, 9)),
    _Rule("NVIDIA A100 80GB SXM", r"A100.*SXM.*80\s*GB", (8, 0)),
    _Rule("NVIDIA A100 40GB SXM", r"A100.*SXM.*40\s*GB", (8, 0)),
    _Rule("NVIDIA H100 PCIe", r"H100.*PCIe", (9, 0)),
    _Rule("NVIDIA H100 SXM", r"H100(?!.*(PCIe|NVL)).*HBM3|H100 SXM", (9, 0)),
    _Rule("NVIDIA H200", r"\bH200\b", (9, 0)),
    _Rule("NVIDIA B200", r"\bB200\b", (10, 0)),
    _Rule("AMD Instinct MI300X", r"MI300X", None),
)


@dataclass(frozen=True)
class Detection:
    """The chip found for a reported device (or None) and one sentence saying how, for the reader."""

    chip: Chip | None
    note: str


def match_device(name: str, capability: tuple[int, int] | None = None) -> Detection:
    """Match a device name (as ``torch.cuda.get_device_name`` reports it) and capability to a catalogue chip."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"device name must be a non-empty string, got {name!r}")
    for rule in RULES:
        if re.search(rule.pattern, name, flags=re.IGNORECASE):
            if rule.capability is not None and capability is not None and tuple(capability) != rule.capability:
                return Detection(None, f"{name!r} looks like the {rule.chip}, but reports compute capability "
                                       f"{capability[0]}.{capability[1]} where that chip has "
                                       f"{rule.capability[0]}.{rule.capability[1]} ({CAPABILITY_SOURCE}); "
                                       "treated as not in the catalogue: measured figures only")
            return Detection(get_chip(rule.chip), f"{name!r} is the catalogue's {rule.chip}: predictions use its "
                                                  "datasheet figures")
    return Detection(None, f"{name!r} is not in the catalogue: the labs show measured figures only "
                           "(add it to src/aihw/catalogue/data/hardware.toml and a rule in aihw.catalogue.detect)")
