"""Gradable lab exercises: the questions of a lab, checked for the learner and scored for the instructor.

Modelled on otter-grader's conventions (questions named ``q1``, ``q2``, ... with points; ``grader.check("q1", ...)``
in the student's notebook; an autograder that runs the submitted notebook and scores it), but kept in the package
because otter-grader 6 and 7 require ipywidgets >= 8.1.5, and installing them on a Colab runtime would replace its
ipywidgets 7.7.1 (README, "Grading").

A lab's widget module declares one :class:`Assignment`: each :class:`Question` names the notebook variable holding
the learner's answer and a function of the package giving the expected value (so a change of catalogue or formula
follows). The student's notebook holds no answer: :meth:`Assignment.check` says right or wrong (for a number, at
most too high or too low, never the value or the factor). Grading reads the answer variables of an executed
notebook (``scripts/grade.py``) and scores them against the same functions, computed at grading time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from aihw._validate import require_in_range
from aihw.exercises import CheckResult, check

Expected = float | int | str


@dataclass(frozen=True)
class Question:
    """One graded answer: its name (``q1``), the notebook variable holding it, and how it is checked.

    ``expected`` is a function of the package's calculators returning the expected value, and ``solution`` one
    returning the worked solution (the lab's ``SOLUTIONS`` entry); both are called when the answer is checked or
    graded, so no value is stored in a notebook.
    """

    name: str
    variable: str
    expected: Callable[[], Expected]
    solution: Callable[[], str]
    points: float = 1.0
    rel_tol: float = 0.02
    abs_tol: float = 0.0
    unit: str = ""
    hint: str = ""
    choices: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or not self.variable.isidentifier():
            raise ValueError(f"question name {self.name!r} and variable {self.variable!r} must be Python names")
        require_in_range(f"points of {self.name}", self.points, 0, math.inf, low_inclusive=False,
                         high_inclusive=False)

    def answer(self) -> Expected:
        """The expected value, computed by the package now (instructor's side only)."""
        return self.expected()

    def worked(self) -> str:
        """The worked solution, computed by the package now (instructor's side only)."""
        return self.solution()

    def check(self, answer: object) -> CheckResult:
        return check(answer, self.answer(), rel_tol=self.rel_tol, abs_tol=self.abs_tol, unit=self.unit,  # type: ignore[arg-type]
                     hint=self.hint, choices=self.choices)


@dataclass(frozen=True)
class QuestionScore:
    name: str
    variable: str
    points: float
    possible: float
    answered: bool


@dataclass(frozen=True)
class Grade:
    """The score of one notebook, question by question."""

    lab: str
    scores: tuple[QuestionScore, ...]

    @property
    def total(self) -> float:
        return sum(s.points for s in self.scores)

    @property
    def possible(self) -> float:
        return sum(s.possible for s in self.scores)

    def as_dict(self) -> dict:
        return {"lab": self.lab, "total": self.total, "possible": self.possible,
                "questions": {s.name: {"points": s.points, "possible": s.possible, "answered": s.answered}
                              for s in self.scores}}

    def __str__(self) -> str:
        rows = [f"{s.name}: {s.points:g} / {s.possible:g}" + ("" if s.answered else " (not answered)")
                for s in self.scores]
        return "\n".join([f"{self.lab}: {self.total:g} / {self.possible:g}", *rows])


@dataclass(frozen=True)
class Assignment:
    """The graded questions of one lab (its slug, e.g. ``"gpus_vs_tpus_lab"``)."""

    lab: str
    questions: tuple[Question, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        names = [q.name for q in self.questions]
        if len(set(names)) != len(names) or len({q.variable for q in self.questions}) != len(names):
            raise ValueError(f"{self.lab}: question names and variables must be unique, got {names}")

    def question(self, name: str) -> Question:
        for q in self.questions:
            if q.name == name:
                return q
        raise ValueError(f"{self.lab} has no question {name!r}; questions: {', '.join(q.name for q in self.questions)}")

    def check(self, name: str, answer: object) -> CheckResult:
        """The learner's check of question ``name``: right or wrong, with a hint; never the expected value."""
        return self.question(name).check(answer)

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(q.variable for q in self.questions)

    def key(self) -> dict[str, Expected]:
        """Variable -> expected value, computed now: the instructor's answer key."""
        return {q.variable: q.answer() for q in self.questions}

    def grade(self, answers: Mapping[str, object]) -> Grade:
        """Score ``answers`` (variable -> the learner's value; a missing variable is unanswered)."""
        scores = []
        for q in self.questions:
            result = q.check(answers.get(q.variable))
            scores.append(QuestionScore(q.name, q.variable, q.points if result.ok else 0.0, q.points,
                                        result.answered))
        return Grade(self.lab, tuple(scores))


def wrong_answer(question: Question) -> Expected:
    """A value the check of ``question`` rejects (for tests and for instructors trying the autograder)."""
    expected = question.answer()
    if isinstance(expected, str):
        assert question.choices, f"{question.name} is categorical and needs choices"
        return next(c for c in question.choices if c.lower() != expected.lower())
    return expected * 1.5 + 1 if expected >= 0 else expected * 0.5 - 1
