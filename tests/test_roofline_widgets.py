"""Headless widget tests: the plain functions behind the lab, and that changing a control changes the output."""

import numpy as np
import pytest

pytest.importorskip("ipywidgets")
import matplotlib  # noqa: E402

matplotlib.use("Agg")

from aihw.widgets import gpus_vs_tpus_lab  # noqa: E402


def _html_of(widget, kind):
    return [w for w in _walk(widget) if type(w).__name__ == kind]


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


def test_roofline_report_bounds():
    estimates, table = gpus_vs_tpus_lab.roofline_report(["H100 SXM", "TPU v5e"], "bf16", 1, 8192, 8192)
    assert len(estimates) == 2 and all(e.bound == "memory" for _, e in estimates)
    assert "<table>" in table and "memory" in table


def test_roofline_report_marks_missing_precision():
    estimates, table = gpus_vs_tpus_lab.roofline_report(["T4", "H100 SXM"], "fp8", 64, 64, 64)
    assert len(estimates) == 1 and "no dense fp8 mode" in table


def test_roofline_report_rejects_bad_input():
    with pytest.raises(ValueError, match="M|m must be"):
        gpus_vs_tpus_lab.roofline_report(["H100 SXM"], "bf16", 0, 1, 1)
    with pytest.raises(ValueError, match="at least one chip"):
        gpus_vs_tpus_lab.roofline_report([], "bf16", 1, 1, 1)


def test_explorer_updates_on_control_change_and_shows_errors_inline():
    box = gpus_vs_tpus_lab.roofline_explorer()
    table = next(w for w in _html_of(box, "HTML") if "<table>" in w.value)
    before = table.value
    m_box = next(w for w in _walk(box) if type(w).__name__ == "BoundedIntText" and w.description == "M")
    m_box.value = 1
    assert table.value != before and "memory" in table.value
    m_box.value = -5  # the field is bounded: it keeps its minimum, 1
    assert m_box.value == 1
    pick = next(w for w in _walk(box) if type(w).__name__ == "SelectMultiple")
    chosen = pick.value
    pick.value = ()
    errors = [w.value for w in _html_of(box, "HTML") if "&#9888;" in w.value]
    assert errors and "at least one chip" in errors[0]
    assert "<table>" not in table.value  # the old table no longer matches the controls
    pick.value = chosen
    assert not [w.value for w in _html_of(box, "HTML") if "&#9888;" in w.value] and "<table>" in table.value


def test_systolic_step_counts_and_stepper_reacts():
    rng = np.random.default_rng(0)
    A, B = rng.integers(-3, 4, (4, 3)), rng.integers(-3, 4, (3, 3))
    fig, info = gpus_vs_tpus_lab.systolic_step(A, B, size=3, dataflow="weight-stationary", cycle=0)
    assert info["MACs so far"] == 0 and info["phase"] == "load weights"
    last = info["cycles in all"] - 1
    _, end = gpus_vs_tpus_lab.systolic_step(A, B, size=3, dataflow="weight-stationary", cycle=last)
    assert end["MACs so far"] == 4 * 3 * 3
    with pytest.raises(ValueError, match="cycle must be in"):
        gpus_vs_tpus_lab.systolic_step(A, B, size=3, dataflow="weight-stationary", cycle=last + 1)

    box = gpus_vs_tpus_lab.systolic_stepper()
    slider = next(w for w in _walk(box) if type(w).__name__ == "IntSlider")
    counters = next(w for w in _html_of(box, "HTML") if "cycle" in w.value)
    before = counters.value
    slider.value = slider.max
    assert counters.value != before and "MACs so far</b>: 36" in counters.value


def test_measure_panel_button_runs_and_reports():
    from aihw.measure.roofline import MeasureConfig

    config = MeasureConfig(dtypes=("fp32",), matmul_sizes=(32, 64), copy_mib=(1,), repeats=2, warmup=1,
                           max_seconds=10)
    box = gpus_vs_tpus_lab.measure_panel(dtype="fp32", config=config)
    button = next(w for w in _walk(box) if type(w).__name__ == "Button")
    status = next(w for w in _html_of(box, "HTML") if "Press the button" in w.value)
    button.click()
    assert "GFLOP/s" in status.value and "ridge point" in status.value
    assert not button.disabled
