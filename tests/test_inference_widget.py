"""The inference lab widget: the live serving view, inline errors, the buttons' functions, solutions."""

import pytest

pytest.importorskip("ipywidgets")

from widget_support import find as _find  # noqa: E402
from widget_support import walk as _walk

from aihw.exercises import check_choice  # noqa: E402
from aihw.widgets import inference_lab  # noqa: E402


def test_serving_view_html_and_numbers():
    view = inference_lab.serving_view(model="llama-3-8b", chip="NVIDIA H100 SXM", batch=16, context=4096)
    assert view["estimate"].fits and "fits" in view["html"] and "tokens/s" in view["html"]
    big = inference_lab.serving_view(model="llama-2-70b", batch=64, context=4096)
    assert not big["estimate"].fits and "does not fit" in big["html"]


def test_widget_updates_live_and_shows_bad_input_inline():
    w = inference_lab.serving_calculator()
    summary = next(x for x in _walk(w) if "tokens/s" in str(getattr(x, "value", "")))
    before = summary.value
    _find(w, "batch").value = 64
    assert summary.value != before
    _find(w, "batch").value = 0
    errors = [x.value for x in _walk(w) if "&#9888;" in str(getattr(x, "value", ""))]
    assert errors and "batch must be a positive integer" in errors[0]
    _find(w, "batch").value = 1
    _find(w, "TP").value = 3
    assert any("tp=3 must divide" in str(getattr(x, "value", "")) for x in _walk(w))


def test_generate_and_speculative_views_with_small_models():
    import torch

    from aihw.inference.model import GenConfig, GenGPT

    torch.manual_seed(0)
    target = GenGPT(GenConfig(kv_heads=2, seq_len=96)).eval()
    draft = GenGPT(GenConfig(width=32, depth=1, heads=2, seq_len=96)).eval()
    out = inference_lab.generate_view("abc", 10, target=target)
    assert len(out["text"]) == 10 and out["tokens_per_s"] > 0
    spec = inference_lab.speculative_view("abc", 12, k=3, target=target, draft=draft)
    assert spec["same_output"] and 1 <= spec["tokens_per_round"] <= 4
    with pytest.raises(ValueError, match="new tokens"):
        inference_lab.generate_view("abc", 0, target=target)
    with pytest.raises(ValueError, match="k must be"):
        inference_lab.speculative_view("abc", 5, k=0, target=target, draft=draft)


def test_solutions_and_categorical_check():
    assert "327,680" in inference_lab.solution(1)
    assert "ms" in inference_lab.solution(2)
    assert inference_lab.solution(3).split(":")[0] in ("memory", "compute")
    with pytest.raises(ValueError):
        inference_lab.solution(5)
    assert "3.36" in inference_lab.solution(4)
    assert check_choice("Memory", "memory", choices=("memory", "compute")).ok
    wrong = check_choice("compute", "memory", choices=("memory", "compute"), hint="bytes vs FLOPs")
    assert not wrong.ok and wrong.answered and "bytes vs FLOPs" in wrong.message
    assert not check_choice(None, "memory", choices=("memory", "compute")).answered
    assert not check_choice("maybe", "memory", choices=("memory", "compute")).ok
    assert set(inference_lab.SOLUTIONS) == {1, 2, 3, 4}
