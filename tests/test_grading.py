"""Graded labs (aihw.grading, scripts/grade.py, scripts/labs.py instructor): full marks for the solution, zero for
a blank notebook, exactly one question lost per wrong answer, and no expected value in any student notebook."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import nbformat
import pytest

from aihw.grading import Assignment, Question, wrong_answer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import grade  # noqa: E402  (scripts/grade.py)

import labs as labs_script  # noqa: E402  (scripts/labs.py)

GRADED = [src for src in labs_script.sources() if labs_script.graded(src) is not None]


def test_at_least_two_labs_are_graded():
    assert {"gpus_vs_tpus_lab", "memory_lab"} <= {src.stem for src in GRADED}


@pytest.mark.parametrize("src", GRADED, ids=lambda p: p.stem)
def test_the_key_scores_full_marks_a_blank_zero_and_each_wrong_answer_loses_exactly_its_question(src):
    assignment = labs_script.graded(src)
    key = assignment.key()
    full = assignment.grade(key)
    assert full.total == full.possible == sum(q.points for q in assignment.questions) > 0
    blank = assignment.grade({variable: None for variable in key})
    assert blank.total == 0 and not any(s.answered for s in blank.scores)
    for q in assignment.questions:
        wrong = assignment.grade({**key, q.variable: wrong_answer(q)})
        lost = {s.name for s in wrong.scores if s.points < s.possible}
        assert lost == {q.name} and wrong.total == full.possible - q.points, (q.name, str(wrong))


@pytest.mark.parametrize("src", GRADED, ids=lambda p: p.stem)
def test_checks_say_right_or_wrong_and_never_the_value(src):
    assignment = labs_script.graded(src)
    for q in assignment.questions:
        value = q.answer()
        assert assignment.check(q.name, value).ok
        message = str(assignment.check(q.name, wrong_answer(q)))
        assert message.startswith("Not quite")
        if not isinstance(value, str):
            assert not any(_contains(message, form) for form in _renderings(value)), (q.name, message)
            assert "factor" not in message and ("too high" in message or "too low" in message)


def _renderings(value: float) -> set[str]:
    """The ways a number is commonly written: as Python prints it, rounded to 2-5 significant figures, with
    1-2 decimals, with thousands separators, and as an integer when it is (close to) one."""
    forms = {repr(value), str(value)}
    for digits in (2, 3, 4, 5):
        forms |= {f"{value:.{digits}g}", f"{value:,.{digits}g}"}
    for decimals in (1, 2):
        forms |= {f"{value:.{decimals}f}", f"{value:,.{decimals}f}"}
    if abs(value) >= 10:
        forms |= {f"{round(value)}", f"{round(value):,}"}
    if math.isclose(value, round(value)):
        forms |= {f"{int(round(value))}", f"{int(round(value)):,}"}
    return {f for f in forms if f not in ("0", "1", "0.0", "1.0")}


def _contains(text: str, form: str) -> bool:
    """``form`` appears in ``text`` as a number of its own (not inside 0.1107 or q11)."""
    return re.search(rf"(?<![\w.]){re.escape(form)}(?![\w]|\.\d)", text) is not None


def _student_text(path: Path) -> str:
    """What a student's notebook shows and runs: every cell's source (cell ids and metadata left out)."""
    return "\n".join(cell.source for cell in nbformat.read(path, as_version=4).cells)


@pytest.mark.parametrize("src", GRADED, ids=lambda p: p.stem)
def test_no_student_notebook_contains_an_expected_value(src):
    assignment = labs_script.graded(src)
    texts = {path.name: _student_text(path) for path in (src.with_suffix(".ipynb"),)}
    texts[src.name] = src.read_text()
    for q in assignment.questions:
        value = q.answer()
        if isinstance(value, str):
            # a categorical answer is one of the listed choices by design; its exercise's cell must not assign
            # or compare it
            cell = next(c.source for c in nbformat.read(src.with_suffix(".ipynb"), as_version=4).cells
                        if f'grader.check("{q.name}"' in c.source)
            assert not re.search(rf"""(=|==)\s*["']{re.escape(value)}["']""", cell), f"{q.name} reveals its answer"
            continue
        for form in _renderings(float(value)):
            for name, text in texts.items():
                assert not _contains(text, form), f"{name} contains {form!r}, the expected value of {q.name}"


@pytest.mark.parametrize("src", GRADED, ids=lambda p: p.stem)
def test_instructor_version_holds_the_key_and_the_worked_solutions(src):
    assignment = labs_script.graded(src)
    nb = labs_script.instructor_notebook(src)
    text = "\n".join(c.source for c in nb.cells)
    for q in assignment.questions:
        assert f"{q.variable} = {q.answer()!r}" in text
        assert q.worked() in text
        assert q.worked() not in _student_text(src.with_suffix(".ipynb"))


def test_graded_end_to_end_the_solution_scores_full_marks_and_the_blank_notebook_zero(tmp_path):
    src = ROOT / "labs" / "gpus_vs_tpus_lab.py"  # a few seconds to run
    solution = tmp_path / "solution.ipynb"
    nbformat.write(labs_script.instructor_notebook(src), solution)
    full = grade.grade_notebook(solution)
    assert full.total == full.possible > 0, str(full)
    blank = grade.grade_notebook(src.with_suffix(".ipynb"))
    assert blank.total == 0, str(blank)


def test_one_wrong_answer_in_a_run_notebook_loses_exactly_that_question(tmp_path):
    src = ROOT / "labs" / "gpus_vs_tpus_lab.py"
    assignment = labs_script.graded(src)
    q = assignment.question("q3")
    nb = labs_script.instructor_notebook(src)
    for cell in nb.cells:
        cell.source = cell.source.replace(f"{q.variable} = {q.answer()!r}", f"{q.variable} = {wrong_answer(q)!r}")
    path = tmp_path / "one_wrong.ipynb"
    nbformat.write(nb, path)
    got = grade.grade_notebook(path)
    assert {s.name for s in got.scores if s.points == 0} == {"q3"} and got.total == got.possible - q.points


def test_bad_assignments_and_questions_are_refused_with_one_clear_message():
    with pytest.raises(ValueError, match="must be Python names"):
        Question("q 1", "answer", lambda: 1.0, lambda: "")
    with pytest.raises(ValueError, match="must be unique"):
        Assignment("lab", (Question("q1", "a", lambda: 1.0, lambda: ""), Question("q1", "b", lambda: 1.0, lambda: "")))
    with pytest.raises(ValueError, match="has no question 'q9'; questions: q1"):
        Assignment("lab", (Question("q1", "a", lambda: 1.0, lambda: ""),)).check("q9", 1)
    with pytest.raises(ValueError, match="not a graded lab"):
        grade.assignment_of(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]))
