import pytest

from aihw.catalogue import compare
from aihw.catalogue.hardware import get_chip, list_chips


def test_headline_rows_cover_catalogue_and_compute_ridge():
    rows = compare.headline_rows()
    assert len(rows) == len(list_chips())
    h100 = next(r for r in rows if r["chip"] == get_chip("H100 SXM").name)
    assert h100["ridge"] == pytest.approx(h100["peak_tflops"] * 1e12 / (h100["bandwidth_tbs"] * 1e12))


def test_price_performance_is_peak_over_price():
    for row in compare.price_performance_rows():
        if row["usd_per_hour"]:
            assert row["tflops_per_usd_hour"] == pytest.approx(row["peak_tflops"] / row["usd_per_hour"])
        if row["power_w"]:
            assert row["tflops_per_watt"] == pytest.approx(row["peak_tflops"] / row["power_w"])


def test_interconnect_rows_are_consistent():
    rows = compare.interconnect_rows()
    assert rows
    for row in rows:
        if row["per_direction_gbs"] is not None:
            assert row["bidirectional_gbs"] == pytest.approx(2 * row["per_direction_gbs"])
    h100 = next(r for r in rows if r["chip"] == get_chip("H100 SXM").name)
    assert h100["bidirectional_gbs"] == pytest.approx(900)


def test_precision_rows_use_dense_figures_only():
    for row in compare.precision_rows():
        chip = get_chip(row["chip"])
        for p, v in row.items():
            if p != "chip" and v is not None:
                assert v * 1e12 == pytest.approx(chip.flops[p].value)
