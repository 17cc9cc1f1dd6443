"""Widgets of the parallelism lab: the plain functions behind them, and inline errors instead of tracebacks."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from aihw.layout.schedules import bubble_fraction  # noqa: E402
from aihw.widgets import model_parallel_lab  # noqa: E402


def test_simulate_view_matches_closed_form():
    fig, facts = model_parallel_lab.simulate_view("interleaved", 4, 8, 2)
    assert facts["bubble (simulated)"] == pytest.approx(bubble_fraction(4, 8, v=2))
    assert fig.axes


def test_plan_view_table():
    result, text = model_parallel_lab.plan_view(model="gpt2-xl", nodes=1, global_batch=64, seq=1024)
    assert result.best is not None and "<table>" in text and "Best:" in text
    assert text.count("<tr>") == 1 + min(5, len(result.ranked))


def test_widgets_show_errors_inline():
    explorer = model_parallel_lab.schedule_explorer()
    sched, sliders, err = explorer.children[0], explorer.children[1].children, explorer.children[2]
    sched.value = "interleaved"
    sliders[1].value = 7  # m not a multiple of p=4
    assert "multiple of p" in err.value
    sliders[1].value = 8
    assert err.value == ""
    plan = model_parallel_lab.planner_widget()
    nodes = plan.children[0].children[0].children[3]
    nodes.value = 0
    assert "nodes must be a positive integer" in plan.children[1].value
    nodes.value = 2
    assert plan.children[1].value == "" and "<table>" in plan.children[2].value
    assert model_parallel_lab.pipeline_panel().children[2].description == "Run"


def test_published_run_view_starts_from_the_runs_own_implementation():
    from aihw.planning import published
    from aihw.widgets import planning_lab

    name = "GPT-3 175B ZeRO-3, 1536 GPUs"
    own, _ = planning_lab.published_run_view(name)
    assert own["ratio"] == pytest.approx(published.compare(next(r for r in published.RUNS if r.name == name))["ratio"])
    hierarchical, _ = planning_lab.published_run_view(name, flat_collectives=False)
    assert hierarchical["ratio"] > 1.5 * own["ratio"]  # NCCL-style rings would hide DeepSpeed's traffic
    box = planning_lab.published_run_widget(name)
    dropdown, _, _, flat = box.children[:4]
    assert flat.value is True
    dropdown.value = "GPT-3 175B PTD-P, 1536 GPUs"
    assert flat.value is False  # a Megatron-LM run: the planner's hierarchical collectives
