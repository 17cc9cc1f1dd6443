import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aihw.exercises import check


def test_correct_answer_passes_and_reports_expected():
    result = check(989.0, 989.4, rel_tol=0.01, unit="TFLOP/s")
    assert result.ok and result.answered
    assert "989.4 TFLOP/s" in result.message


def test_unanswered_is_not_ok_but_marked_unanswered():
    result = check(None, 3.0, hint="FLOPs of a matmul are 2*m*n*k.")
    assert not result.ok and not result.answered
    assert "2*m*n*k" in result.message


def test_wrong_answer_names_direction_and_factor():
    result = check(2.0, 1.0)
    assert not result.ok
    assert "too high" in result.message and "factor of 2" in result.message
    assert "too low" in check(0.125, 1.0).message


def test_non_number_answer_is_explained():
    assert "finite number" in check("ten", 10.0).message
    assert "finite number" in check(math.nan, 10.0).message


def test_html_repr_escapes():
    assert "&lt;" in check(None, 1.0, hint="<b>")._repr_html_()


@pytest.mark.parametrize("kwargs", [{"rel_tol": -0.1}, {"rel_tol": 2}, {"abs_tol": -1}])
def test_bad_tolerances_are_rejected(kwargs):
    with pytest.raises(ValueError, match="tol"):
        check(1.0, 1.0, **kwargs)


@given(st.floats(min_value=1e-6, max_value=1e12), st.floats(min_value=0.001, max_value=0.5))
def test_within_tolerance_always_passes(expected, rel_tol):
    assert check(expected * (1 + rel_tol / 2), expected, rel_tol=rel_tol).ok


def test_check_choice():
    from aihw.exercises import check_choice

    choices = ("compute", "memory")
    assert check_choice(" Memory ", "memory", choices=choices).ok
    wrong = check_choice("compute", "memory", choices=choices, hint="bytes per FLOP")
    assert not wrong.ok and wrong.answered and "bytes per FLOP" in str(wrong)
    unanswered = check_choice(None, "memory", choices=choices)
    assert not unanswered.answered and "compute, memory" in str(unanswered)
    outside = check_choice("latency", "memory", choices=choices)
    assert not outside.ok and "not one of" in str(outside)
    with pytest.raises(ValueError, match="not one of the choices"):
        check_choice("memory", "network", choices=choices)
