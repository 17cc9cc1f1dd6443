"""aihw.stats: mean and 95% t-interval of repeated runs."""

import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aihw.stats import mean_ci95, paired_difference_ci95, t_quantile_975, with_intervals


def test_t_table_published_values():
    # Student's t 0.975 quantiles (any statistics table): df 1 -> 12.706, 4 -> 2.776, 9 -> 2.262, 30 -> 2.042
    assert (t_quantile_975(1), t_quantile_975(4), t_quantile_975(9), t_quantile_975(30)) == (12.706, 2.776, 2.262,
                                                                                             2.042)
    with pytest.raises(ValueError):
        t_quantile_975(0)


def test_interval_of_five_values():
    values = [0.95, 0.96, 0.97, 0.96, 0.96]
    ci = mean_ci95(values)
    sd = statistics.stdev(values)
    assert ci.mean == pytest.approx(0.96) and ci.half_width == pytest.approx(2.776 * sd / 5**0.5)
    assert not mean_ci95([-1.0, 1.0, -0.5, 0.5, 0.0]).excludes_zero()
    assert paired_difference_ci95([1.0, 2.0, 3.0], [0.5, 1.4, 2.6]).excludes_zero()
    with pytest.raises(ValueError):
        mean_ci95([1.0])


@given(st.lists(st.floats(min_value=-1e3, max_value=1e3), min_size=2, max_size=40))
def test_interval_contains_the_mean(values):
    ci = mean_ci95(values)
    assert ci.low <= ci.mean + 1e-9 and ci.mean <= ci.high + 1e-9


def test_with_intervals_pairs_each_row_with_the_baseline_seed_by_seed():
    result = with_intervals({"base": [0.9, 0.8, 0.85], "rows": [{"accuracies": [0.92, 0.83, 0.86]}]}, "base", "vs")
    row = result["rows"][0]
    assert row["ci"] == mean_ci95([0.92, 0.83, 0.86])
    assert row["vs"] == paired_difference_ci95([0.92, 0.83, 0.86], [0.9, 0.8, 0.85])
    assert row["vs"].high - row["vs"].low < row["ci"].high - row["ci"].low  # pairing removes the shared spread
    assert result["base_ci"] == mean_ci95([0.9, 0.8, 0.85])
