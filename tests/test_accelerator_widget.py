"""Widget functions of the accelerator lab: the live energy view and the attention measurement, bad input inline."""

import pytest

from aihw.widgets import accelerator_lab


def test_energy_view_orders_designs_and_builds():
    view = accelerator_lab.energy_view(n=64, array=32)
    assert set(view["bands"]) >= {"systolic", "CUDA cores", "tensor cores (hopper)"}
    assert view["on_chip"]["systolic"] < view["on_chip"]["CUDA cores"]
    assert "<table>" in view["html"]
    assert accelerator_lab.energy_calculator() is not None


@pytest.mark.parametrize("kwargs, match", [({"n": 0}, "n must be"), ({"precision": "fp64"}, "precision"),
                                           ({"n": 5000}, "beyond")])
def test_energy_view_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        accelerator_lab.energy_view(**kwargs)


def test_attention_view():
    rows = accelerator_lab.attention_view(32, heads=1, head_dim=8, block=16)
    assert {r["kind"] for r in rows} == {"naive", "sdpa", "tiled"}
    with pytest.raises(ValueError, match="seq must be"):
        accelerator_lab.attention_view(4096)
    assert accelerator_lab.attention_explorer() is not None
