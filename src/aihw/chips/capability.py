"""What an NVIDIA GPU of a given compute capability can run natively: the one place these rules live.

Sources: NVIDIA's architecture whitepapers (Volta V100, Turing T4, Ampere A100, Ada L4, Hopper H100) and
torch's own kernel guards: tensor-core dtypes by generation (Volta fp16; Turing adds int8/int4 but not bf16, so
bf16 on a T4 is emulated at fp32 speed; Ampere adds bf16, tf32 and 2:4 sparsity; Ada and Hopper add FP8
e4m3/e5m2); ``torch._weight_int4pack_mm`` on CUDA needs sm_80 and packs weights whose K is a multiple of
``INT4_K_MULTIPLE``; ``torch._scaled_mm`` (FP8) needs sm_89. Labs, the GPU report and the tests ask here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Feature = Literal["fp16", "bf16", "tf32", "int8", "fp8", "int4 weight-only", "2:4 sparse"]
FEATURES: tuple[Feature, ...] = get_args(Feature)
INT4_K_MULTIPLE = 128  # the CUDA int4 packer (_convert_weight_to_int4pack) needs in_features % 128 == 0

# feature -> (lowest compute capability with the native path, what that path is)
_NEEDS: dict[str, tuple[tuple[int, int], str]] = {
    "fp16": ((7, 0), "fp16 tensor cores (Volta and later)"),
    "int8": ((7, 5), "int8 tensor cores (Turing and later)"),
    "bf16": ((8, 0), "bf16 tensor cores (Ampere and later; emulated at fp32 speed before)"),
    "tf32": ((8, 0), "tf32 tensor cores (Ampere and later)"),
    "2:4 sparse": ((8, 0), "2:4 sparse tensor cores (Ampere and later)"),
    "int4 weight-only": ((8, 0), "torch's CUDA int4 weight-only kernel (_weight_int4pack_mm, sm_80 and later)"),
    "fp8": ((8, 9), "FP8 tensor cores (Ada sm_89, Hopper sm_90 and later) via torch._scaled_mm"),
}


@dataclass(frozen=True)
class Capability:
    """A compute capability (major, minor), e.g. 7.5 for a T4, 8.0 for an A100, 9.0 for an H100."""

    major: int
    minor: int

    def __post_init__(self) -> None:
        for name, value in (("major", self.major), ("minor", self.minor)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"compute capability {name} must be a non-negative integer, got {value!r}")

    @property
    def sm(self) -> str:
        return f"sm_{self.major}{self.minor}"

    def has(self, feature: Feature) -> bool:
        """True if ``feature`` runs natively (on tensor cores or torch's dedicated kernel) on this chip."""
        if feature not in _NEEDS:
            raise ValueError(f"feature must be one of {', '.join(FEATURES)}; got {feature!r}")
        return (self.major, self.minor) >= _NEEDS[feature][0]

    def skip_reason(self, feature: Feature) -> str | None:
        """None if ``feature`` runs here, else one sentence saying why a measurement of it is skipped."""
        if self.has(feature):
            return None
        (major, minor), what = _NEEDS[feature]
        return f"{what} need compute capability >= {major}.{minor}; this GPU is {self.major}.{self.minor}"

    @property
    def tensor_core_dtypes(self) -> tuple[str, ...]:
        return tuple(d for d in ("fp16", "bf16", "tf32", "int8", "fp8") if self.has(d))

    @property
    def half_dtype(self) -> Literal["bf16", "fp16"]:
        """The 16-bit float to measure tensor cores in: bf16 where it is native, else fp16 (a T4)."""
        return "bf16" if self.has("bf16") else "fp16"


def capability(major: int, minor: int) -> Capability:
    return Capability(major, minor)
