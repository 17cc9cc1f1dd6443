"""The memory lab widget: its plain functions, live update speed, inline errors, and the measure button."""


import pytest

pytest.importorskip("ipywidgets")
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from widget_support import find as _find  # noqa: E402
from widget_support import walk as _walk

from aihw.widgets import memory_lab  # noqa: E402


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


def test_update_draws_the_split_model():
    # (update speed, <= 100 ms, is printed by bench/bench_memory.py, not timed here)
    html = memory_lab.html_bars(memory_lab.memory_view(model="llama-3-70b", zero=3, dp=32, tp=8))
    assert "chip memory 80 GiB" in html and "per device (256)" in html


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
    assert {r["component"] for r in rows} == {"weights", "gradients", "optimizer", "activations", "peak"}
    settings = memory_lab.measured_settings({"model": "llama-2-7b", "hidden": 32, "layers": 1, "heads": 2,
                                             "vocab": 64, "seq": 16, "batch": 2, "precision": "bf16", "zero": 3,
                                             "dp": 8, "tp": 1, "pp": 1, "mode": "infer"})
    view = memory_lab.memory_view(**settings)
    est = view["estimate"]
    by = {r["component"]: r for r in rows}
    for k in ("weights", "gradients", "activations"):  # the bars are the prediction for the measured run
        assert est.total[k] == pytest.approx(by[k]["predicted"])
    fig = memory_lab.draw(view, rows)
    assert len(fig.axes) == 1 and len(fig.axes[0].patches) == 8  # 4 predicted + 4 measured segments, one axes
    plt.close(fig)
    html = memory_lab.html_bars(view, rows)
    assert "measured here" in html and "3px solid black" in html and "off this scale" in html
    with pytest.raises(ValueError, match="too large"):
        memory_lab.measure_view(hidden=4096, layers=1, heads=2, vocab=64, seq=16, batch=2)


def test_measure_button_switches_and_overlays():
    pytest.importorskip("torch")
    w = memory_lab.memory_explorer(model="llama-2-70b")
    for name, value in (("hidden", 32), ("layers", 1), ("heads", 2), ("vocab", 64), ("seq", 32), ("DP", 8)):
        _find(w, name).value = value
    bars = lambda: [x.value for x in _walk(w) if type(x).__name__ == "HTML" and "one device holds all" in x.value][0]  # noqa: E731
    _find(w, "Measure it").click()
    assert _find(w, "model").value == memory_lab.CUSTOM and _find(w, "precision").value == "fp32"
    assert _find(w, "DP").value == 1 and "measured here" in bars()
    assert any("measured:" in str(getattr(x, "value", "")) for x in _walk(w))
    _find(w, "batch").value = 3  # another config: the measurement no longer belongs to the bars
    assert "measured here" not in bars()
    _find(w, "batch").value = 1
    assert "measured here" in bars()
    _find(w, "heads").value = 5  # bad custom dims: inline error, nothing measured, no traceback
    _find(w, "Measure it").click()
    assert any("heads=5" in str(getattr(x, "value", "")) and "&#9888;" in x.value for x in _walk(w))


def test_verdict_text_has_no_html_and_the_lab_prints_it():
    from pathlib import Path

    view = memory_lab.memory_view(model="llama-2-7b", mode="infer", seq=2048)
    assert "<" not in view["verdict_text"] and view["verdict_text"].startswith("fits on one NVIDIA H100 SXM")
    lab = (Path(__file__).resolve().parents[1] / "labs" / "memory_lab.py").read_text()
    assert 'print(view["verdict"]' not in lab and 'view["verdict_text"]' in lab


def test_custom_dimensions_show_only_for_custom():
    box = memory_lab.memory_explorer()
    fields = [_find(box, name) for name in memory_lab.CUSTOM_FIELDS]
    assert all(f.layout.display == "none" for f in fields)
    _find(box, "model").value = memory_lab.CUSTOM
    assert all(f.layout.display is None for f in fields)
    _find(box, "model").value = "llama-2-70b"
    assert all(f.layout.display == "none" for f in fields)


def test_buttons_are_wide_enough_for_their_labels():
    from aihw.widgets import _common, cheaper_lab, data_parallel_lab, gpus_vs_tpus_lab, model_parallel_lab

    button = _common.run_button("Prune and measure")
    assert button.layout.width == "auto" and button.layout.min_width == "14em"
    box = memory_lab.memory_explorer()
    toggles = [w for w in _walk(box) if type(w).__name__ == "ToggleButtons"]
    assert toggles and all(t.style.button_width == "auto" for t in toggles)
    import inspect

    for module in (cheaper_lab, data_parallel_lab, gpus_vs_tpus_lab, model_parallel_lab, memory_lab):
        source = inspect.getsource(module)
        assert source.count("W.ToggleButtons(") == source.count('"button_width": "auto"'), module.__name__
