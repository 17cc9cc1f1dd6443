"""Auto-checked exercises: compare a learner's number with the expected one and give a useful hint.

The expected value always comes from the package's own calculators, never typed into a notebook,
so an exercise cannot drift from the text around it.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from aihw._validate import require_in_range


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one check; shows as a coloured box in a notebook and as one line in a terminal."""

    ok: bool
    answered: bool
    message: str

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        return self.message

    def _repr_html_(self) -> str:
        colour = "#1b7f3b" if self.ok else ("#8a6d00" if not self.answered else "#b00020")
        return (f'<div style="border-left:4px solid {colour};padding:4px 8px;margin:4px 0">'
                f"{html.escape(self.message)}</div>")


def _fmt(value: float, unit: str) -> str:
    text = f"{value:.4g}"
    return f"{text} {unit}".strip()


def check(answer: float | int | None, expected: float, *, rel_tol: float = 0.02, abs_tol: float = 0.0,
          unit: str = "", hint: str = "") -> CheckResult:
    """Check ``answer`` against ``expected`` within ``rel_tol`` (fraction) or ``abs_tol`` (absolute).

    ``None`` means "not answered yet" (a lab's default), which is reported, not failed loudly.
    A wrong answer says whether it is too high or too low and by what factor, since the common
    mistakes in this course are factors (2 for FMA = 2 FLOP, 8 for bits vs bytes, 1e9 vs 2^30).
    """
    require_in_range("rel_tol", rel_tol, 0, 1)
    require_in_range("abs_tol", abs_tol, 0, math.inf, high_inclusive=False)
    if answer is None:
        return CheckResult(False, False, f"Not answered yet. {hint}".strip())
    if isinstance(answer, bool) or not isinstance(answer, (int, float)) or not math.isfinite(answer):
        return CheckResult(False, True, f"Expected a finite number, got {answer!r}. {hint}".strip())
    if math.isclose(answer, expected, rel_tol=rel_tol, abs_tol=abs_tol):
        return CheckResult(True, True, f"Correct: {_fmt(answer, unit)} (expected {_fmt(expected, unit)}).")
    direction = "too high" if answer > expected else "too low"
    factor = ""
    if answer != 0 and expected != 0 and (answer > 0) == (expected > 0):
        ratio = answer / expected
        ratio = ratio if ratio >= 1 else 1 / ratio
        factor = f" (off by a factor of {ratio:.3g})"
    msg = f"Not quite: {_fmt(answer, unit)} is {direction}{factor}. {hint}".strip()
    return CheckResult(False, True, msg)


def check_choice(answer: str | None, expected: str, *, allowed: tuple[str, ...], hint: str = "") -> CheckResult:
    """Check a categorical answer (one of ``allowed``, case-insensitive), e.g. "saturate" vs "inf"."""
    options = ", ".join(repr(a) for a in allowed)
    if answer is None:
        return CheckResult(False, False, f"Not answered yet: one of {options}. {hint}".strip())
    if not isinstance(answer, str) or answer.strip().lower() not in {a.lower() for a in allowed}:
        return CheckResult(False, True, f"{answer!r} is not one of {options}. {hint}".strip())
    if answer.strip().lower() == expected.lower():
        return CheckResult(True, True, f"Correct: {expected}.")
    return CheckResult(False, True, f"Not quite: {answer!r} is not it. {hint}".strip())
