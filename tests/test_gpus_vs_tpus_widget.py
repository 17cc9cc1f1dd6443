"""Headless widget tests: the plain functions behind the lab, and that changing a control changes the output."""

import numpy as np
import pytest

pytest.importorskip("ipywidgets")
import matplotlib  # noqa: E402

matplotlib.use("Agg")

from widget_support import walk as _walk  # noqa: E402

from aihw.widgets import gpus_vs_tpus_lab  # noqa: E402


def _html_of(widget, kind):
    return [w for w in _walk(widget) if type(w).__name__ == kind]


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


def _fake_measurement(points, copy_bytes_per_s=2e12):
    from aihw.measure.roofline import CopyPoint, DeviceMeasurement, MatmulPoint

    matmul = tuple(MatmulPoint(d, n, 2 * n**3 / f, f, 2 * n / 6) for d, n, f in points)
    copy = (CopyPoint(1024.0, 2 * 1024 * 2**20 / copy_bytes_per_s, copy_bytes_per_s),)
    return DeviceMeasurement("cuda:0", {"cuda_device_name": "NVIDIA H100 80GB HBM3"}, matmul, copy)


def test_roofline_view_puts_the_detected_chip_first_with_measured_over_datasheet():
    from aihw.catalogue.detect import match_device
    from aihw.catalogue.hardware import get_chip

    found = match_device("NVIDIA H100 80GB HBM3", (9, 0))
    m = _fake_measurement([("bf16", 4096, 600e12), ("bf16", 8192, 700e12), ("fp32", 8192, 50e12)])
    view = gpus_vs_tpus_lab.roofline_view(m, found, chips=("TPU v5e", "H100 SXM"), dtype="bf16")
    h100 = get_chip("H100 SXM")
    assert view["chips"] == [h100.name, get_chip("TPU v5e").name]  # detected first, not repeated
    assert view["dtype"] == "bf16"
    rows = {r["quantity"]: r for r in view["rows"]}
    assert rows["bf16 matmul"]["fraction"] == pytest.approx(700e12 / h100.peak_flops("bf16"))
    assert rows["fp32 matmul"]["fraction"] == pytest.approx(50e12 / h100.peak_flops("fp32"))
    copy = rows["copy bandwidth (read + write)"]
    assert copy["fraction"] == pytest.approx(2e12 / h100.bandwidth_bytes_per_s)
    assert "measured ÷ datasheet" in view["table_html"] and view["note"] == found.note


def test_roofline_view_of_an_unknown_gpu_gives_measured_figures_only():
    from aihw.catalogue.detect import match_device

    found = match_device("Some Future GPU 9000", (12, 0))
    m = _fake_measurement([("fp16", 2048, 100e12)])
    view = gpus_vs_tpus_lab.roofline_view(m, found, chips=("H100 SXM",), dtype="bf16")
    assert view["dtype"] == "fp16"  # bf16 was not measured: the first measured dtype is plotted
    assert all(r["fraction"] is None and r["datasheet"] is None for r in view["rows"])
    assert "not in the catalogue" in view["note"] and "—" in view["table_html"]


def test_roofline_view_on_a_cpu_measurement_keeps_the_reference_chips():
    from aihw.measure.roofline import MeasureConfig, measure_device
    from aihw.runtime.device import detect_chip

    m = measure_device(MeasureConfig(device="cpu", dtypes=("fp32",), matmul_sizes=(32,), copy_mib=(1,),
                                     repeats=2, warmup=1, max_seconds=10))
    view = gpus_vs_tpus_lab.roofline_view(m, detect_chip("cpu"), chips=("H100 SXM", "TPU v5e"), dtype="fp32")
    assert view["chips"][0].endswith("H100 SXM") and len(view["chips"]) == 2
    assert view["rows"][0]["measured"] == pytest.approx(m.best_flops("fp32") / 1e12)
    assert "not a GPU" in view["note"]
