"""Auto-checked exercises: compare a learner's number with the expected one and give a useful hint.

The expected value always comes from the package's own calculators, never typed into a notebook,
so an exercise cannot drift from the text around it.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from aihw._validate import as_number, require_in_range


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


def _finite(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond float range
        return False


def _fmt(value: float, unit: str) -> str:
    text = f"{value:.4g}"
    return f"{text} {unit}".strip()


def _normalise(label: str) -> str:
    """'Memory-bound' -> 'memory': case, spaces and a trailing '-bound' / ' bound' do not matter."""
    text = " ".join(str(label).strip().lower().replace("_", " ").split())
    for suffix in ("-bound", " bound"):
        if text.endswith(suffix):
            text = text[: -len(suffix)]
    return text


def check_choice(answer: str | None, expected: str, *, choices: tuple[str, ...] | list[str],
                 hint: str = "") -> CheckResult:
    """Check a categorical answer ("compute" vs "memory", which parallelism, ...) against ``expected``.

    Case and a trailing "-bound" are ignored. An answer outside ``choices`` is told the allowed values
    (it is a typo, not a wrong idea); a wrong choice gets the hint, never the right answer.
    """
    allowed = [_normalise(c) for c in choices]
    if _normalise(expected) not in allowed:
        raise ValueError(f"expected {expected!r} is not one of the choices {list(choices)}")
    if answer is None:
        return CheckResult(False, False, f"Not answered yet: one of {', '.join(map(repr, choices))}. {hint}".strip())
    if not isinstance(answer, str) or _normalise(answer) not in allowed:
        return CheckResult(False, True, f"{answer!r} is not one of {', '.join(map(repr, choices))}.")
    if _normalise(answer) == _normalise(expected):
        return CheckResult(True, True, f"Correct: {answer}.")
    return CheckResult(False, True, f"Not quite: not {answer}. {hint}".strip())


def check(answer: float | int | str | None, expected: float | str, *, rel_tol: float = 0.02,
          abs_tol: float = 0.0, unit: str = "", hint: str = "",
          choices: tuple[str, ...] | list[str] | None = None) -> CheckResult:
    """Check ``answer`` against ``expected`` within ``rel_tol`` (fraction) or ``abs_tol`` (absolute).

    ``None`` means "not answered yet" (a lab's default), which is reported, not failed loudly.
    A wrong answer says only whether it is too high or too low (never the factor or the expected value, which
    would give the answer away); the hint names the usual slips (2 for FMA = 2 FLOP, 8 for bits vs bytes).
    A categorical ``expected`` (a string, with ``choices``) is checked by :func:`check_choice`.
    """
    if isinstance(expected, str):
        if choices is None:
            raise ValueError("a categorical check needs choices=(...), the answers a learner may give")
        return check_choice(answer if answer is None or isinstance(answer, str) else str(answer), expected,
                            choices=choices, hint=hint)
    require_in_range("rel_tol", rel_tol, 0, 1)
    require_in_range("abs_tol", abs_tol, 0, math.inf, high_inclusive=False)
    expected = require_in_range("expected", expected, -math.inf, math.inf, low_inclusive=False,
                                high_inclusive=False)
    if answer is None:
        return CheckResult(False, False, f"Not answered yet. {hint}".strip())
    number = as_number(answer)  # numpy and torch scalars are numbers too
    if isinstance(number, bool) or not isinstance(number, (int, float)) or not _finite(number):
        return CheckResult(False, True, f"Expected a finite number, got {answer!r}. {hint}".strip())
    answer = number
    if math.isclose(answer, expected, rel_tol=rel_tol, abs_tol=abs_tol):
        return CheckResult(True, True, f"Correct: {_fmt(answer, unit)}.")
    # Direction only: a factor (or the expected value) would hand over the answer (answer x factor).
    direction = "too high" if answer > expected else "too low"
    msg = f"Not quite: {_fmt(answer, unit)} is {direction}. {hint}".strip()
    return CheckResult(False, True, msg)


@dataclass(frozen=True)
class Solution:
    """A worked solution kept folded until the learner asks for it (a lab's ``reveal`` call).

    In a notebook it shows as a closed ``<details>`` box, so even a revealed solution is one click away;
    printed in a terminal it is the plain text.
    """

    title: str
    text: str

    def __str__(self) -> str:
        return f"{self.title}\n{self.text}"

    def _repr_html_(self) -> str:
        body = "<br>".join(html.escape(line) for line in self.text.splitlines())
        return (f'<details style="border-left:4px solid #555;padding:4px 8px;margin:4px 0">'
                f"<summary>{html.escape(self.title)} (click to open)</summary>{body}</details>")


def reveal(solutions: dict, number: int) -> Solution:
    """The worked solution of exercise ``number`` from a lab's ``solutions`` table (number -> callable).

    Solutions are computed from the package's calculators when asked for, so a lab never prints its own
    answer key: the learner calls ``reveal(SOLUTIONS, 2)`` only after trying.
    """
    if number not in solutions:
        raise ValueError(f"no exercise {number!r}; exercises: {', '.join(map(str, sorted(solutions)))}")
    text = solutions[number]()
    return Solution(f"Solution to exercise {number}", text)


def expected(worked: dict, number: int) -> float | str:
    """The answer exercise ``number`` is checked against, from a lab's worked table (number -> callable giving
    ``(answer, worked text)``), so that no notebook types an answer; :func:`check` never shows it."""
    if number not in worked:
        raise ValueError(f"no exercise {number!r}; exercises: {', '.join(map(str, sorted(worked)))}")
    return worked[number]()[0]


@dataclass(frozen=True)
class Prediction:
    """A learner's prediction beside the measurement it predicts, shown side by side after the run."""

    quantity: str
    predicted: float | str | None
    measured: float | str
    unit: str = ""
    recorded_at: str | None = None  # when the prediction was recorded (HH:MM:SS), by Predictions.record

    def __str__(self) -> str:
        if self.predicted is None:
            return f"{self.quantity}: no prediction recorded; measured {self._fmt(self.measured)}."
        when = f" (recorded at {self.recorded_at})" if self.recorded_at else ""
        if isinstance(self.predicted, str) or isinstance(self.measured, str):
            same = _normalise(str(self.predicted)) == _normalise(str(self.measured))
            return (f"{self.quantity}: you predicted {self.predicted}{when}, measured {self.measured}"
                    f" ({'as predicted' if same else 'not as predicted'}).")
        ratio = self.measured / self.predicted if self.predicted else math.inf
        return (f"{self.quantity}: you predicted {self._fmt(self.predicted)}{when}, measured "
                f"{self._fmt(self.measured)} (measured / predicted = {ratio:.3g}).")

    def _fmt(self, value: float | str) -> str:
        return value if isinstance(value, str) else _fmt(value, self.unit)

    def _repr_html_(self) -> str:
        return f'<div style="border-left:4px solid #1f5fa8;padding:4px 8px;margin:4px 0">{html.escape(str(self))}</div>'


def compare_prediction(quantity: str, predicted: float | str | None, measured: float | str, *,
                       unit: str = "") -> Prediction:
    """Put the learner's recorded prediction beside the measurement (``None``: no prediction was made)."""
    return Prediction(quantity, predicted, measured, unit)


@dataclass(frozen=True)
class Recorded:
    """A prediction as recorded in its own cell, before the measurement: what, the value, the unit and when."""

    quantity: str
    value: float | str | None
    unit: str
    at: str

    def __str__(self) -> str:
        if self.value is None:
            return f"{self.quantity}: no prediction yet (replace None with yours and run this cell again)."
        shown = self.value if isinstance(self.value, str) else _fmt(self.value, self.unit)
        return f"Recorded at {self.at}: your prediction of {self.quantity} is {shown}."

    def _repr_html_(self) -> str:
        return f'<div style="border-left:4px solid #1f5fa8;padding:4px 8px;margin:4px 0">{html.escape(str(self))}</div>'


class Predictions:
    """A lab's predictions: each recorded in its own cell before its measurement, shown beside it afterwards.

    ``record`` keeps the value and the time it was recorded; ``compare`` (in the measurement's cell) puts the
    recorded value beside the measurement, so re-running the measurement never overwrites the prediction.
    """

    def __init__(self) -> None:
        self._recorded: dict[str, Recorded] = {}

    def record(self, quantity: str, value: float | str | None, *, unit: str = "") -> Recorded:
        import datetime

        entry = Recorded(quantity, value, unit, datetime.datetime.now().strftime("%H:%M:%S"))
        if value is not None:
            self._recorded[quantity] = entry
        return entry

    def compare(self, quantity: str, measured: float | str, *, unit: str = "") -> Prediction:
        entry = self._recorded.get(quantity)
        if entry is None:
            return Prediction(quantity, None, measured, unit)
        return Prediction(quantity, entry.value, measured, unit or entry.unit, entry.at)
