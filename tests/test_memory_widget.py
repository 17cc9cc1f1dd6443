"""The memory lab widget: its plain functions, live update speed, inline errors, and the measure button."""

import time

import pytest

pytest.importorskip("ipywidgets")
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from aihw.widgets import memory_lab  # noqa: E402


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


def _find(widget, description):
    return next(w for w in _walk(widget) if getattr(w, "description", None) == description)


def test_memory_view_verdicts():
    small = memory_lab.memory_view(model="llama-2-7b", mode="infer", seq=2048, chip="NVIDIA H100 SXM")
    assert small["fits"] and small["chips_needed"] == 1 and "fits" in small["verdict"]
    big = memory_lab.memory_view(model="llama-2-70b", zero=3, chip="NVIDIA H100 SXM", recompute="full")
    assert not big["fits"] and big["chips_needed"] > 1 and "does not fit" in big["verdict"]
    custom = memory_lab.memory_view(model=memory_lab.CUSTOM, hidden=64, layers=2, heads=4, vocab=256, seq=64)
    assert custom["estimate"].config.model.param_count() > 0


def test_memory_view_bad_input():
    with pytest.raises(ValueError, match="heads=5"):
        memory_lab.memory_view(model=memory_lab.CUSTOM, hidden=64, heads=5)
    with pytest.raises(ValueError, match="tp=3"):
        memory_lab.memory_view(model="llama-2-7b", tp=3)


def test_update_is_fast():
    memory_lab.html_bars(memory_lab.memory_view())
    start = time.perf_counter()
    for _ in range(20):
        html = memory_lab.html_bars(memory_lab.memory_view(model="llama-3-70b", zero=3, dp=32, tp=8))
    assert (time.perf_counter() - start) / 20 < 0.1 / 3  # 100 ms target with 3x slack for a loaded machine
    assert "chip memory 80 GB" in html and "per device (256)" in html


def test_static_figure():
    fig = memory_lab.draw(memory_lab.memory_view())
    assert len(fig.axes) == 1 and fig.axes[0].patches
    plt.close(fig)


def test_widget_reacts_and_shows_errors_inline():
    w = memory_lab.memory_explorer()
    verdict = [x for x in _walk(w) if type(x).__name__ == "HTML" and "per device" in x.value][0]
    before = verdict.value
    _find(w, "batch").value = 64
    assert verdict.value != before
    _find(w, "TP").value = 3  # does not divide 32 heads
    errors = [x.value for x in _walk(w) if type(x).__name__ == "HTML" and "tp=3" in x.value]
    assert errors and "&#9888;" in errors[0]


def test_measure_button_runs_and_limits():
    pytest.importorskip("torch")
    rows = memory_lab.measure_view(hidden=32, layers=1, heads=2, vocab=64, seq=16, batch=2)
    assert {r["component"] for r in rows} >= {"weights", "activations", "peak"}
    fig = memory_lab.draw(memory_lab.memory_view(), rows)
    assert len(fig.axes) == 2
    plt.close(fig)
    assert {r["component"] for r in rows} >= {"weights", "gradients", "optimizer"}
    with pytest.raises(ValueError, match="too large"):
        memory_lab.measure_view(hidden=4096, layers=1, heads=2, vocab=64, seq=16, batch=2)
    w = memory_lab.memory_explorer(model=memory_lab.CUSTOM)
    _find(w, "seq").value = 32
    _find(w, "Measure it").click()
    assert any("measured:" in str(getattr(x, "value", "")) for x in _walk(w))

