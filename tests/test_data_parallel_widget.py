"""The lab's widgets: plain functions give the numbers, builders construct, bad input shows inline."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from widget_support import walk as _walk  # noqa: E402

from aihw.comm import collectives as cc  # noqa: E402
from aihw.plots import data_parallel as plots  # noqa: E402
from aihw.widgets import data_parallel_lab  # noqa: E402


def _fake_rows(world_size: int = 2) -> list[dict]:
    """Rows shaped like the benchmark's, from the model itself (no processes started)."""
    link = cc.LinkModel(50e-6, 2e9)
    rows = []
    for algorithm in ("ring", "builtin", "naive"):
        model = "ring" if algorithm == "builtin" else algorithm
        for size in (4096, 65536, 2**20, 2**22):
            t = cc.all_reduce_time(size, world_size, link=link, algorithm=model)
            algbw = size / t
            rows.append({"algorithm": algorithm, "world_size": world_size, "size_bytes": size, "time_s": t,
                         "iters": 3, "algbw": algbw, "busbw": cc.bus_bandwidth(algbw, world_size)})
    return rows


def test_measurement_summary_survives_an_unfittable_algorithm():
    rows = [dict(r, time_s=4.096 / r["size_bytes"]) for r in _fake_rows() if r["algorithm"] == "ring"]  # shrinking
    fits, table = data_parallel_lab.measurement_summary(rows)
    assert fits == {} and "nan" in table


def test_measurement_summary_fits_each_algorithm():
    fits, table = data_parallel_lab.measurement_summary(_fake_rows())
    assert set(fits) == {"ring", "builtin", "naive"}
    assert fits["ring"].alpha_s == pytest.approx(50e-6) and fits["naive"].bandwidth_bytes_per_s == pytest.approx(2e9)
    assert "<table>" in table and "R²" in table
    assert plots.plot_time_vs_size(_fake_rows(), fits=fits).axes
    assert plots.plot_bus_bandwidth(_fake_rows()).axes


def test_cluster_report_matches_the_model():
    estimates, table = data_parallel_lab.cluster_report(7e9, bytes_per_value=2, nodes=2, tpu_chips=16)
    direct = cc.cluster_estimates(14e9, nodes=2, tpu_chips=16)
    assert [e.time_s for e in estimates] == [e.time_s for e in direct]
    assert "14.00 GB per replica" in table
    with pytest.raises(ValueError, match="params must be a positive"):
        data_parallel_lab.cluster_report(0)
    assert plots.plot_cluster_estimates(estimates).axes


def test_cluster_panel_updates_live_and_shows_bad_input_inline():
    panel = data_parallel_lab.cluster_panel()
    top, err, table, _ = panel.children
    left, right = top.children
    size = left.children[0]
    nodes = right.children[1]
    first = table.value
    nodes.value = 16
    assert table.value != first and "16 nodes" in table.value
    network = left.children[3]
    network.value = "100 Gigabit Ethernet"
    assert "100 Gigabit Ethernet" in table.value and err.value == ""
    size.value = 1e8
    assert "0.20 GB per replica" in table.value


def test_run_panels_build_without_running():
    collectives = data_parallel_lab.collectives_panel()
    training = data_parallel_lab.training_panel()
    assert any(getattr(c, "description", "") == "Run measurement" for c in collectives.children)
    assert any(getattr(c, "description", "") == "Train" for c in training.children)


def test_training_panel_bounds_steps_and_reports_errors_inline(monkeypatch):
    from aihw.parallel import data_parallel as dp

    panel = data_parallel_lab.training_panel(world_size=4)
    button = panel.children[2]
    err = panel.children[5]
    panel.children[0].children[1].value = 0  # steps = 0: the bounded field keeps it at its minimum
    assert panel.children[0].children[1].value == 1

    def refuse(**kwargs):
        raise ValueError(f"steps must be a positive integer, got {kwargs['steps']}")

    monkeypatch.setattr(dp, "DPConfig", refuse)
    button.click()
    assert "steps must be a positive integer" in err.value and "Traceback" not in err.value


def test_step_breakdown_and_loss_plots():
    rows = [{"label": "1 rank", "compute_s": 0.01, "comm_s": 0.0, "efficiency": 1.0},
            {"label": "2 ranks", "compute_s": 0.01, "comm_s": 0.004, "efficiency": 0.7}]
    assert plots.plot_step_breakdown(rows).axes
    per_rank = [{"rank": r, "losses": [2.3, 2.0, 1.5], "mode": "naive"} for r in range(2)]
    assert plots.plot_loss_curves(per_rank, reference={"losses": [2.3, 2.0, 1.5]}).axes
    mem = [{"method": "zero1", "rank": 0, "component": "optimizer", "measured_bytes": 10, "predicted_bytes": 10}]
    assert plots.plot_memory_comparison(mem).axes


@pytest.mark.distributed
def test_training_panel_runs_and_fills_its_progress_bar():
    panel = data_parallel_lab.training_panel(world_size=1, mode="naive", steps=5)
    button, bar, status, err = panel.children[2], panel.children[3], panel.children[4], panel.children[5]
    button.click()
    assert err.value == "", err.value
    assert bar.max == 5 and bar.value == 5
    assert "bit-identical: <b>True</b>" in status.value


@pytest.mark.distributed
def test_collectives_panel_measures_fits_and_fills_its_progress_bar():
    panel = data_parallel_lab.collectives_panel(world_size=2, algorithms=("ring", "builtin"), max_bytes=2**20)
    button, bar, status, err, table = (panel.children[i] for i in (1, 2, 3, 4, 5))
    button.click()
    assert err.value == "", err.value
    assert bar.max == 12 and bar.value == 12  # 6 sizes (1 KiB .. 1 MiB) x 2 algorithms
    assert status.value == "done" and "R²" in table.value


def test_cluster_slider_keeps_the_default_exactly():
    # a FloatLogSlider with 0.1-decade steps showed 7e9 as 6.31e9, disagreeing with the text
    panel = data_parallel_lab.cluster_panel(7e9)
    slider = next(w for w in _walk(panel) if getattr(w, "description", None) == "parameters")
    assert slider.value == 7e9 and slider.label == "7e+09"
    table = next(w for w in _walk(panel) if type(w).__name__ == "HTML" and "gradients:" in w.value)
    assert "14.00 GB per replica" in table.value  # 7e9 bf16 gradients
    assert data_parallel_lab.cluster_panel(2.5e9).children  # an off-grid default is added as a stop
    assert 2.5e9 in [v for _, v in data_parallel_lab.size_options(2.5e9)]


