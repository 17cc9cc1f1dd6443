"""The one timing harness: how many calls it makes and what it returns (never how fast anything is)."""

import pytest

pytest.importorskip("torch")

from aihw.runtime.timing import time_op, time_ops  # noqa: E402


def test_inner_fixes_the_calls_per_sample_so_every_rank_makes_the_same_calls():
    calls = []
    timing = time_op(lambda: calls.append(1), warmup=3, repeats=4, inner=1)
    # the probe, warmup - 1 more warm-up calls, one call to size the samples, then repeats x inner
    assert len(calls) == 1 + 2 + 1 + 4 and timing.inner == 1 and len(timing.samples) == 4
    lo, hi = timing.spread
    assert 0 < lo <= timing.median <= hi


def test_time_ops_interleaves_the_operations_round_by_round():
    order = []
    timings = time_ops({"a": lambda: order.append("a"), "b": lambda: order.append("b")}, warmup=1, repeats=3,
                       min_sample_s=1e-9)
    assert set(timings) == {"a", "b"} and all(len(t.samples) == 3 for t in timings.values())
    assert order[-6:] == ["a", "b"] * 3  # one call per sample here: a, b, a, b, a, b


def test_bad_counts_and_budget_are_refused():
    with pytest.raises(ValueError, match="inner"):
        time_op(lambda: None, inner=0)
    with pytest.raises(ValueError, match="repeats"):
        time_ops({"a": lambda: None}, repeats=0)
    with pytest.raises(ValueError, match="at least one"):
        time_ops({})
    with pytest.raises(ValueError, match="max_seconds"):
        time_op(lambda: sum(range(200_000)), max_seconds=1e-9)


def test_synced_clock_waits_for_the_gpu_before_every_read(monkeypatch):
    import torch

    from aihw.runtime.timing import synced_clock

    events = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: events.append(("sync", str(device))))
    clock = synced_clock("cuda:1")
    monkeypatch.setattr("time.perf_counter", lambda: events.append(("read",)) or float(len(events)))
    assert [clock(), clock()] == [2.0, 4.0]
    assert events == [("sync", "cuda:1"), ("read",)] * 2
    cpu_events_before = len(events)
    synced_clock("cpu")()
    assert events[cpu_events_before:] == [("read",)]  # nothing to wait for on the CPU
