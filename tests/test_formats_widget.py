"""The formats lab widgets: the bit explorer's plain function, inline errors, the run panel's checks."""

import pytest

pytest.importorskip("ipywidgets")
import matplotlib  # noqa: E402

matplotlib.use("Agg")

from widget_support import find as _find  # noqa: E402
from widget_support import walk as _walk

from aihw.widgets import formats_lab  # noqa: E402


def test_bit_view_shows_fields_and_kind():
    html = formats_lab.bit_view("1e-8", "fp16")
    assert "underflow to zero" in html and "exponent" in html
    assert "saturated" in formats_lab.bit_view(500.0, "fp8_e4m3")
    assert "overflow to inf" in formats_lab.bit_view("70000", "fp16")
    assert "two&#x27;s complement" in formats_lab.bit_view("-3", "int8") or "two's complement" in \
        formats_lab.bit_view("-3", "int8")
    table = formats_lab.compare_formats_html(0.1)
    assert table.count("<tr>") == len(formats_lab.FORMATS) + 1


def test_explorer_shows_bad_input_inline():
    box = formats_lab.bit_explorer()
    text, fmt = _find(box, "value"), _find(box, "format")
    text.value = "abc"
    errors = [w for w in _walk(box) if "&#9888;" in str(getattr(w, "value", ""))]
    assert errors and "0.1, -3e-8 or inf" in errors[0].value
    text.value = "1e6"
    _find(box, "overflow").value = "raise"
    assert not [w for w in _walk(box) if "&#9888;" in str(getattr(w, "value", ""))]  # bf16 holds 1e6
    fmt.value = "fp16"
    errors = [w for w in _walk(box) if "&#9888;" in str(getattr(w, "value", ""))]
    assert errors and "outside fp16&#x27;s range" in errors[0].value


def test_run_panel_rejects_unknown_experiment_and_runs_one():
    torch = pytest.importorskip("torch")
    old = torch.get_num_threads()
    torch.set_num_threads(1)  # as the lab does: tiny models
    with pytest.raises(ValueError, match="did you mean 'underflow'"):
        formats_lab.run_panel("underflw", 5)
    try:
        png, summary = formats_lab.run_panel("fp8 recipes", 5)
    finally:
        torch.set_num_threads(old)
    assert png[:4] == b"\x89PNG" and "delayed" in summary


def test_worked_solutions_agree_with_the_encoders():
    from aihw.exercises import reveal
    from aihw.formats import numerics

    assert formats_lab.WORKED[1]()[0] == numerics.round_to(0.3, "fp8_e4m3")
    assert formats_lab.WORKED[2]()[0] == 2**14 and numerics.encode(2.0 * 2**14, "fp16") != 0x7C00
    assert numerics.explain(1000.0, "fp8_e4m3").kind == "saturated" != numerics.explain(1000.0, "fp8_e5m2").kind
    assert formats_lab.WORKED[3]()[0] == "e4m3"
    assert all("Solution" in str(reveal(formats_lab.SOLUTIONS, n)) for n in formats_lab.SOLUTIONS)


def test_block_view_and_its_errors():
    page = formats_lab.block_view(formats_lab.DEFAULT_BLOCK, "nvfp4")
    assert "per-tensor fp32 scale" in page and page.count("<tr>") == 33
    with pytest.raises(ValueError, match="block size 32 does not divide the last dimension \\(5\\)"):
        formats_lab.block_view("1 2 3 4 5", "mxfp4")
    with pytest.raises(ValueError, match="got 'x'"):
        formats_lab.block_view("1, x", "mxfp4", 2)
    box = formats_lab.block_explorer()
    _find(box, "block").value = 5
    errors = [w for w in _walk(box) if "&#9888;" in str(getattr(w, "value", ""))]
    assert errors and "does not divide" in errors[0].value
