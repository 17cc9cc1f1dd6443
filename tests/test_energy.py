"""The energy model: Horowitz figures, linearity (more accesses never cost less), bands ordered, bad input."""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aihw.chips import energy, simt
from aihw.chips.simt import ACCESS_FIELDS, AccessCounts

counts_strategy = st.builds(AccessCounts, *(st.integers(0, 10**6) for _ in range(6)), macs=st.integers(1, 10**6),
                            pe_register_transfers=st.integers(0, 10**6),
                            tensor_memory_accesses=st.integers(0, 10**6))


def test_horowitz_mac_energies():
    assert energy.mac_energy_pj("fp32") == pytest.approx(4.6)
    assert energy.mac_energy_pj("bf16") == pytest.approx(2.0)
    assert energy.mac_energy_pj("int8") == pytest.approx(0.3)
    assert energy.access_energy_pj_per_byte("offchip", "low") == pytest.approx(1300 / 8)
    assert energy.access_energy_pj_per_byte("register_file", "high") == pytest.approx(20 / 8)


@settings(max_examples=60, deadline=None)
@given(counts_strategy, st.sampled_from(ACCESS_FIELDS), st.integers(1, 10**5),
       st.sampled_from(energy.MAC_PRECISIONS), st.sampled_from(energy.BANDS))
def test_more_accesses_never_less_energy(counts, field, extra, precision, band):
    more = dataclasses.replace(counts, **{field: getattr(counts, field) + extra})
    base = energy.energy_per_mac(counts, precision=precision, band=band).total
    assert energy.energy_per_mac(more, precision=precision, band=band).total > base


@settings(max_examples=40, deadline=None)
@given(counts_strategy, st.floats(0.01, 1.0))
def test_bands_are_ordered_and_scale_only_on_chip(counts, scale):
    band = energy.energy_band(counts, on_chip_scale=scale)
    assert band["low"] <= band["central"] <= band["high"]
    full = energy.energy_per_mac(counts)
    scaled = energy.energy_per_mac(counts, on_chip_scale=scale)
    assert scaled.levels["offchip"] == pytest.approx(full.levels["offchip"])
    assert scaled.total <= full.total + 1e-9


def test_cuda_cores_spend_more_on_chip_than_systolic():
    counts = energy.design_counts(128, array=32)
    on_chip = {k: energy.energy_per_mac(c, band="low").total - energy.energy_per_mac(c, band="low").levels["offchip"]
               for k, c in counts.items()}
    high_systolic = energy.energy_per_mac(counts["systolic"], band="high")
    assert high_systolic.total - high_systolic.levels["offchip"] < on_chip["CUDA cores"]


@pytest.mark.parametrize("kwargs, match", [({"precision": "fp64"}, "precision"), ({"band": "mid"}, "band"),
                                           ({"on_chip_scale": 0}, "on_chip_scale")])
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        energy.energy_per_mac(simt.simt_matmul_counts(8, 8, 8), **kwargs)


def test_design_counts_limits():
    with pytest.raises(ValueError, match="n=4096"):
        energy.design_counts(4096)
    with pytest.raises(ValueError, match="n must be"):
        energy.design_counts(0)
