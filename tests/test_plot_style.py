"""The book's one figure style (aihw.plots.style): every plot and diagram is drawn at the column width with no
text below the minimum size, legends off the data, bars from zero; tables can be numbered and captioned."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from aihw.plots import cheaper, data_parallel, diagrams, gpus_vs_tpus, memory, model_parallel, style  # noqa: E402


def _figures():
    from aihw.chips import systolic
    from aihw.chips.simt import simt_matmul_counts
    from aihw.comm import collectives as cc
    from aihw.layout import schedules
    from aihw.memory.estimator import estimate_memory

    A, B = np.ones((8, 8)), np.ones((8, 8))
    ws = systolic.simulate(A, B, size=4)
    points = [{"name": "fp32", "family": "fp32", "accuracy": 0.94, "size_bytes": 38549.0, "latency_s": 8.4e-5},
              {"name": "int8", "family": "quantized", "accuracy": 0.93, "size_bytes": 9936.0, "latency_s": None}]
    yield "roofline", gpus_vs_tpus.plot_roofline(["H100 SXM", "TPU v5e"], "bf16")
    yield "attainable", gpus_vs_tpus.plot_attainable_vs_size("H100 SXM", [64, 256, 1024, 4096])
    yield "access", gpus_vs_tpus.plot_access_counts(ws.counts, simt_matmul_counts(8, 8, 8))
    yield "utilisation", gpus_vs_tpus.plot_utilisation(ws)
    yield "tradeoff", cheaper.plot_tradeoff(points)
    yield "accuracy bars", cheaper.plot_accuracy_bars({"teacher": 0.95, "student": 0.9})
    from aihw.stats import mean_ci95
    ci = mean_ci95([0.93, 0.95, 0.94])
    yield "sparsity bands", cheaper.plot_sparsity_curves(
        [{"structure": "unstructured", "fine_tuned": t, "sparsity": s, "ci": mean_ci95([0.9 - s / 9, 0.92 - s / 9])}
         for t in (False, True) for s in (0.5, 0.9)], baseline=ci)
    yield "distillation bands", cheaper.plot_distillation(
        [{"temperature": t, "ci": mean_ci95([0.9, 0.92 + t / 100])} for t in (1.0, 4.0)], control=ci, teacher=0.97)
    yield "accuracy bars with intervals", cheaper.plot_accuracy_bars({"alone": ci, "distilled": 0.96})
    yield "paired differences", cheaper.plot_paired_differences(
        [{"scheme": "int8", "vs_fp32": mean_ci95([0.001, -0.002, 0.0])},
         {"scheme": "int2", "vs_fp32": mean_ci95([-0.06, -0.07, -0.05])}])
    yield "cluster", data_parallel.plot_cluster_estimates(cc.cluster_estimates(14e9, nodes=2, tpu_chips=16))
    yield "breakdown", memory.plot_breakdown(estimate_memory("llama-2-7b"), capacity_bytes=80e9)
    yield "schedule", model_parallel.plot_simulated(schedules.simulate("1f1b", 4, 8))
    for name in ("draw_gpu_sm", "draw_tpu_chip", "draw_systolic_dataflow", "draw_node_vs_torus"):
        yield name, getattr(diagrams, name)()


@pytest.fixture(scope="module")
def figures():
    figs = list(_figures())
    yield figs
    plt.close("all")


def test_every_figure_is_column_wide_with_legible_text(figures):
    for name, fig in figures:
        fig.canvas.draw()
        assert fig.get_size_inches()[0] == pytest.approx(style.COLUMN_WIDTH_IN), name
        assert not style.small_text(fig), (name, style.small_text(fig))
    # at phone width the smallest allowed text is still >= 7 CSS px
    assert style.rendered_font_px(style.MIN_FONT_PT) >= 7.0


def test_legends_sit_off_the_data(figures):
    for name, fig in figures:
        renderer = fig.canvas.get_renderer()
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is None:
                continue
            box, area = legend.get_window_extent(renderer), ax.get_window_extent(renderer)
            overlap = max(0, min(box.x1, area.x1) - max(box.x0, area.x0)) * max(
                0, min(box.y1, area.y1) - max(box.y0, area.y0))
            assert overlap < 0.05 * box.width * box.height, name


def test_bars_start_at_zero():
    fig = cheaper.plot_accuracy_bars({"a": 0.95, "b": 0.9})
    assert fig.axes[0].get_xlim()[0] == 0
    plt.close(fig)


def test_style_is_applied_by_plot_functions_and_restored():
    before = dict(plt.rcParams)
    fig = cheaper.plot_accuracy_bars({"a": 0.95})
    assert fig.axes[0].title.get_fontsize() == style.BASE_FONT_PT
    assert plt.rcParams["font.size"] == before["font.size"]  # the context manager leaves global state alone
    plt.close(fig)


def test_setup_book_sets_svg_text():
    style.setup_book()
    assert plt.rcParams["svg.fonttype"] == "none" and plt.rcParams["font.size"] == style.BASE_FONT_PT
    plt.rcdefaults()


def test_systolic_animation_is_small_and_offline():
    from aihw.chips import systolic

    trace = systolic.trace(np.arange(12).reshape(4, 3) % 5, np.arange(9).reshape(3, 3) % 4, size=3)
    html = diagrams.systolic_animation(trace).to_jshtml()
    assert "<script" in html and "http" not in html.split("<script", 1)[1][:2000]
    assert html.count("data:image/png;base64") == trace.cycles and len(html) < 400_000


def test_markdown_table_caption_and_name():
    from aihw.report import markdown_table

    plain = markdown_table([{"a": 1}], {"a": "A"})
    assert plain.startswith("| A |")
    captioned = markdown_table([{"a": 1}], {"a": "A"}, caption="Numbers,\n  one row.", name="tbl-x")
    assert captioned.startswith("::::{table} Numbers, one row.\n:name: tbl-x\n") and captioned.endswith("\n::::")


def test_setup_book_checks_displayed_figures_into_a_named_file(tmp_path):
    """With ``check_to``, every figure the notebook displays is checked and its problems written to that file,
    named by the page; a second call without it stops checking (no wrapper stacks on another)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    report = tmp_path / "figures.txt"
    try:
        style.setup_book(check_to=str(report), page="labs/example")
        fig, ax = plt.subplots(figsize=(1.0, 0.6))
        ax.set_title("a title far too long for a one-inch figure to hold")
        svg = shell.display_formatter.formatters["image/svg+xml"](fig)
        assert svg and "<title>" in svg
        lines = report.read_text().splitlines()
        assert lines and all("labs/example" in line for line in lines)
        style.setup_book()
        shell.display_formatter.formatters["image/svg+xml"](fig)
        assert report.read_text().splitlines() == lines
        plt.close(fig)
    finally:
        plt.rcdefaults()
        InteractiveShell.clear_instance()
