"""The schedule simulator against the closed-form bubble, in-flight counts and bad input."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aihw.layout.schedules import bubble_fraction, idle_events, peak_in_flight, schedule_order, simulate


@given(p=st.integers(1, 8), m=st.integers(1, 16), schedule=st.sampled_from(["gpipe", "1f1b"]),
       fwd=st.floats(0.1, 5), ratio=st.floats(0.5, 3))
def test_equal_stages_match_closed_form(p, m, schedule, fwd, ratio):
    run = simulate(schedule, p, m, forward_s=fwd, backward_s=fwd * ratio)
    assert run.bubble == pytest.approx(bubble_fraction(p, m), abs=1e-9)
    assert run.step_s == pytest.approx((m + p - 1) * fwd * (1 + ratio))


@given(p=st.integers(2, 6), k=st.integers(1, 4), v=st.integers(1, 4))
def test_interleaved_matches_closed_form(p, k, v):
    m = k * p
    run = simulate("interleaved", p, m, v=v)
    assert run.bubble == pytest.approx(bubble_fraction(p, m, v=v), abs=1e-9)
    assert run.bubble <= bubble_fraction(p, m) + 1e-12  # more chunks, smaller bubble


@given(p=st.integers(1, 6), m=st.integers(1, 12))
def test_peak_in_flight_gpipe_vs_1f1b(p, m):
    for schedule in ("gpipe", "1f1b"):
        run = simulate(schedule, p, m)
        assert list(run.peak_in_flight) == [peak_in_flight(schedule, p, m, s) for s in range(p)]


def test_every_operation_once_and_conventions():
    for schedule, v in (("gpipe", 1), ("1f1b", 1), ("interleaved", 2)):
        for stage in range(4):
            order = schedule_order(schedule, 4, 8, stage, v=v)
            assert sorted(order) == sorted({(k, i, c) for k in "FB" for i in range(8) for c in range(v)})
    assert bubble_fraction(4, 8) == pytest.approx(3 / 11)
    assert bubble_fraction(4, 8, convention="of_ideal") == pytest.approx(3 / 8)
    assert schedule_order("1f1b", 3, 4, 0)[:3] == [("F", 0, 0), ("F", 1, 0), ("F", 2, 0)]


def test_unequal_stages_and_communication_grow_the_step():
    base = simulate("1f1b", 3, 6)
    slow = simulate("1f1b", 3, 6, forward_s=[1, 2, 1], backward_s=[2, 4, 2])
    comm = simulate("1f1b", 3, 6, comm_s=0.5)
    assert slow.step_s > base.step_s and slow.bubble > base.bubble
    assert comm.step_s > base.step_s


def test_idle_events_fill_the_gaps():
    run = simulate("gpipe", 3, 2)
    idle = idle_events(run.events, 3, run.step_s)
    total = sum(e.duration for e in run.events) + sum(e.duration for e in idle)
    assert total == pytest.approx(3 * run.step_s)


@pytest.mark.parametrize("call, match", [
    (lambda: simulate("gpipe", 2, 0), "m \\(micro-batches\\)"),
    (lambda: simulate("gpipe", 0, 2), "p \\(pipeline stages\\)"),
    (lambda: simulate("zigzag", 2, 2), "allowed: gpipe"),
    (lambda: simulate("interleaved", 3, 4, v=2), "multiple of p"),
    (lambda: simulate("1f1b", 2, 2, v=2), "interleaved"),
    (lambda: simulate("1f1b", 2, 2, forward_s=[1, 2, 3]), "one per stage"),
    (lambda: bubble_fraction(2, 2, convention="bad"), "convention"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_glossary_1f1b_stage_k_holds_p_minus_k():
    # Glossary: stage k (from 0) of p holds at most p - k micro-batches under 1F1B (m >= p).
    from aihw.layout import schedules

    for p in (2, 4, 8):
        assert [schedules.peak_in_flight("1f1b", p, 2 * p, k) for k in range(p)] == [p - k for k in range(p)]


@given(p=st.integers(1, 8), extra=st.integers(0, 16), fwd=st.floats(0.5, 2.0), share=st.floats(0.1, 0.5))
def test_zb_h1_bubble_is_p_minus_1_times_f_plus_b_minus_w(p, extra, fwd, share):
    # Qi et al. 2023 (arXiv:2401.10241), ZB-H1: bubble (p-1)(T_F + T_B - T_W) against 1F1B's (p-1)(T_F + T_B + T_W)
    # for m >= p micro-batches, equal stages and a weight-gradient pass no longer than the forward
    m = p + extra
    bwd = 2.0 * fwd
    b, w = bwd * (1 - share), bwd * share
    if w > fwd:
        return
    run = simulate("zb-h1", p, m, forward_s=fwd, backward_s=bwd, weight_grad_share=share)
    assert run.step_s == pytest.approx(m * (fwd + bwd) + (p - 1) * (fwd + b - w))
    assert simulate("1f1b", p, m, forward_s=fwd, backward_s=bwd).step_s == pytest.approx(
        m * (fwd + bwd) + (p - 1) * (fwd + bwd))
    assert max(run.peak_in_flight) == max(simulate("1f1b", p, m).peak_in_flight)  # 1F1B's peak memory
    for stage in range(p):  # every pass of every micro-batch, once
        order = schedule_order("zb-h1", p, m, stage)
        assert sorted(order) == sorted((k, i, 0) for k in "FBW" for i in range(m))


def test_zb_h1_with_equal_passes_has_a_third_of_the_1f1b_bubble_time():
    p, m = 8, 16
    zb, one = simulate("zb-h1", p, m), simulate("1f1b", p, m)  # F = 1, B = W = 1 (backward 2, split in half)
    ideal = m * 3.0
    assert (zb.step_s - ideal) == pytest.approx((one.step_s - ideal) / 3)
