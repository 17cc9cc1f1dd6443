import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aihw.exercises import check


def test_correct_answer_passes_and_names_the_answer_given():
    result = check(989.0, 989.4, rel_tol=0.01, unit="TFLOP/s")
    assert result.ok and result.answered
    assert "989 TFLOP/s" in result.message and "989.4" not in result.message


def test_unanswered_is_not_ok_but_marked_unanswered():
    result = check(None, 3.0, hint="FLOPs of a matmul are 2*m*n*k.")
    assert not result.ok and not result.answered
    assert "2*m*n*k" in result.message


def test_wrong_answer_names_direction_only_never_the_factor_or_the_value():
    result = check(295.0, 1.0)
    assert not result.ok
    assert "too high" in result.message
    assert "factor" not in result.message and "1" not in result.message.replace("295", "")
    assert "(expected" not in check(1.0, 1.0).message
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


def test_categorical_answers():
    from aihw.exercises import check

    choices = ("compute", "memory")
    assert check("Memory-bound", "memory", choices=choices).ok
    assert check(" COMPUTE bound ", "compute", choices=choices).ok
    wrong = check("compute", "memory", choices=choices, hint="compare the intensity with the ridge point")
    assert not wrong.ok and wrong.answered and "ridge point" in wrong.message
    assert "memory" not in wrong.message.replace("compute", "")  # the hint does not give the answer away
    typo = check("memroy", "memory", choices=choices)
    assert not typo.ok and "'compute'" in typo.message
    assert not check(None, "memory", choices=choices).answered
    with pytest.raises(ValueError, match="choices"):
        check("memory", "memory")
    with pytest.raises(ValueError, match="not one of the choices"):
        check("memory", "network", choices=choices)


def test_reveal_is_folded_and_computed_on_demand():
    from aihw.exercises import Solution, reveal

    calls = []
    sols = {1: lambda: calls.append(1) or "2 x 3 = 6"}
    assert calls == []
    s = reveal(sols, 1)
    assert isinstance(s, Solution) and "6" in str(s) and "<details" in s._repr_html_() and calls == [1]
    with pytest.raises(ValueError, match="exercises: 1"):
        reveal(sols, 2)


def test_prediction_vs_measurement():
    from aihw.exercises import compare_prediction

    p = compare_prediction("step time", 2.0, 3.0, unit="ms")
    assert "1.5" in str(p) and "2 ms" in str(p)
    assert "no prediction" in str(compare_prediction("x", None, 1.0))
    assert "not as predicted" in str(compare_prediction("bound", "compute", "memory"))
