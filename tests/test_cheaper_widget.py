"""Headless tests of the lab's widgets: the plain functions behind them, inline errors, and that controls act."""

import pytest

pytest.importorskip("ipywidgets")
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from widget_support import walk as _walk  # noqa: E402

from aihw.models import digits  # noqa: E402
from aihw.widgets import cheaper_lab  # noqa: E402


@pytest.fixture(scope="module")
def setup():
    data = digits.load_digits()
    return digits.train_mlp(data, digits.TrainConfig(hidden=(64, 64), epochs=8)), data


def _find(widget, kind, description=None):
    return [w for w in _walk(widget) if type(w).__name__ == kind
            and (description is None or getattr(w, "description", None) == description)]


def test_quantization_report(setup):
    model, data = setup
    fig, s = cheaper_lab.quantization_report(model, data, dtype="int4", granularity="per-group", group_size=16)
    plt.close(fig)
    assert s["scheme"] == "int4 per-group(16) sym" and 0 < s["accuracy"] <= 1
    assert s["fp32_size_bytes"] / s["size_bytes"] > 4 and set(s["sqnr_db"]) == {"0", "2", "4"}
    with pytest.raises(ValueError, match="only symmetric"):
        cheaper_lab.quantization_report(model, data, dtype="fp8_e4m3", symmetric=False)
    with pytest.raises(ValueError, match="did you mean 'per-group'"):
        cheaper_lab.quantization_report(model, data, granularity="per-grup")
    with pytest.raises(ValueError, match="layer must be in"):
        cheaper_lab.quantization_report(model, data, layer=7)


def test_pruning_report(setup):
    model, data = setup
    fig, s = cheaper_lab.pruning_report(model, data, sparsity=0.5, structure="neurons", fine_tune_epochs=1, batch=32)
    plt.close(fig)
    assert s["flops"] < s["dense_flops"] / 2 and s["zero_fraction"] == 0.0
    fig, s = cheaper_lab.pruning_report(model, data, sparsity=0.5, structure="2:4", batch=32)
    plt.close(fig)
    assert s["zero_fraction"] == pytest.approx(0.5) and s["flops"] == s["dense_flops"]
    with pytest.raises(ValueError, match="always 0.5"):
        cheaper_lab.pruning_report(model, data, sparsity=0.8, structure="2:4")
    with pytest.raises(ValueError, match="fine_tune_epochs"):
        cheaper_lab.pruning_report(model, data, fine_tune_epochs=-1)


def test_distillation_report(setup):
    model, data = setup
    fig, s = cheaper_lab.distillation_report(model, data, student_width=16, epochs=3)
    plt.close(fig)
    assert {"accuracy", "alone_accuracy", "teacher_accuracy"} <= set(s) and s["size_bytes"] > 0
    with pytest.raises(ValueError, match="temperature"):
        cheaper_lab.distillation_report(model, data, temperature=0.0)


def test_lab_widget_reacts_and_shows_errors_inline(setup):
    model, data = setup
    lab = cheaper_lab.cheaper_lab(model, data)
    fmt = _find(lab, "Dropdown", "format")[0]
    info = [w for w in _find(lab, "HTML") if "scheme" in w.value][0]
    before = info.value
    fmt.value = "int2"
    assert info.value != before and "int2" in info.value
    _find(lab, "Checkbox")[0].value = False
    fmt.value = "fp8_e5m2"
    assert any("only symmetric" in w.value for w in _find(lab, "HTML"))
    _find(lab, "ToggleButtons", "structure")[0].value = "2:4"
    _find(lab, "Button", "Prune and measure")[0].click()
    assert any("always 0.5" in w.value for w in _find(lab, "HTML"))
    plt.close("all")


def test_every_run_chart_survives_a_prune_run(setup):
    # the "every run so far" chart went blank after "Prune and measure": it is now an <img> (a 2x PNG with alt
    # text) that each run replaces, and its log axes keep labelled ticks over a narrow range
    model, data = setup
    lab = cheaper_lab.cheaper_lab(model, data)
    chart = next(w for w in _find(lab, "HTML") if "data:image/png;base64," in w.value)
    before = chart.value
    assert 'alt="Two scatter charts' in before
    _find(lab, "ToggleButtons", "structure")[0].value = "unstructured"
    _find(lab, "Button", "Prune and measure")[0].click()
    assert not any("&#9888;" in w.value for w in _find(lab, "HTML")), [w.value for w in _find(lab, "HTML")]
    assert "data:image/png;base64," in chart.value and chart.value != before
    points = [{"name": "fp32", "family": "fp32", "accuracy": 0.94, "size_bytes": 38549.0, "latency_s": 8.4e-5},
              {"name": "pruned", "family": "pruned", "accuracy": 0.87, "size_bytes": 38613.0, "latency_s": 7.0e-5}]
    from aihw.plots.cheaper import plot_tradeoff

    fig = plot_tradeoff(points)
    fig.canvas.draw()
    for ax in fig.axes[:2]:
        shown = [t.get_text() for t in ax.get_xticklabels() if t.get_text()
                 and ax.get_xlim()[0] <= t.get_position()[0] <= ax.get_xlim()[1]]
        assert shown, ax.get_xlabel()
    plt.close("all")
