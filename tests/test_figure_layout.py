"""Every figure the book and the labs draw passes aihw.plots.check: no two text boxes overlap, no text leaves the
canvas or spills out of the box it labels, and no text renders below the stated minimum on a 390-px phone.

Each figure is built with cheap inputs shaped like the book's (the same chips, labels and number of bars; made-up
timings where the book measures), including the chapters' stacked panels and the widgets' figures at their
default state. A plot function added to aihw.plots without a case here fails test_every_plot_function_is_covered.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import aihw.plots  # noqa: E402
from aihw.plots import check  # noqa: E402

CASES: dict[str, tuple[tuple[str, ...], object]] = {}


def case(name: str, *uses: str):
    """Register a figure builder; ``uses``: the plot functions it exercises (module.function)."""

    def register(builder):
        CASES[name] = (uses, builder)
        return builder

    return register


# --- data shaped like the book's ---------------------------------------------------------------------------

def _timing(seconds: float):
    return SimpleNamespace(samples=[seconds * 0.95, seconds, seconds * 1.1])


def _dp_rows(world_size: int = 2) -> list[dict]:
    from aihw.comm import collectives as cc

    link = cc.LinkModel(50e-6, 2e9)
    rows = []
    for algorithm in ("ring", "builtin", "naive", "tree"):
        model = "ring" if algorithm == "builtin" else algorithm
        for size in [2**k for k in range(12, 25, 2)]:
            t = cc.all_reduce_time(size, world_size, link=link, algorithm=model if model != "tree" else "ring")
            algbw = size / t
            rows.append({"algorithm": algorithm, "world_size": world_size, "size_bytes": size, "time_s": t,
                         "iters": 3, "algbw": algbw, "busbw": cc.bus_bandwidth(algbw, world_size)})
    return rows


def _dp_fits():
    from aihw.comm import collectives as cc

    return {"ring": cc.LinkModel(52e-6, 1.9e9), "naive": cc.LinkModel(48e-6, 2.1e9), "builtin": cc.LinkModel(30e-6, 3e9)}


def _memory_rows() -> list[dict]:
    rows = []
    for method in ("dp", "zero1", "fsdp"):
        for comp, size in (("weights", 4.2e5), ("gradients", 4.2e5), ("optimizer", 8.4e5)):
            rows.append({"method": method, "rank": 0, "component": comp, "measured_bytes": size,
                         "predicted_bytes": size * (0.5 if method != "dp" and comp != "weights" else 1.0)})
    return rows


def _compare_rows() -> list[dict]:
    comps = (("weights", 1.2e6), ("gradients", 1.2e6), ("optimizer", 2.4e6), ("activations", 3.1e6), ("peak", 8.6e6))
    return [{"component": c, "predicted": v, "measured": v * 1.03, "ratio": 1.03} for c, v in comps]


def _interval(values):
    from aihw.stats import mean_ci95

    return mean_ci95(values)


def _tradeoff_points() -> list[dict]:
    base = {"fp32": (0.974, 106e3, 85e-6)}
    pts = [{"name": "fp32", "family": "fp32", "accuracy": 0.974, "size_bytes": 106e3, "latency_s": 85e-6}]
    for name, fam, acc, size, lat in (
            ("int8 per-channel", "quantized", 0.973, 27e3, None), ("int4 per-channel", "quantized", 0.968, 14e3, None),
            ("int4 per-tensor", "quantized", 0.95, 14e3, None), ("int8 dynamic", "int8 dynamic", 0.972, 28e3, 70e-6),
            ("pruned 50%", "pruned", 0.97, 55e3, 60e-6), ("pruned 90%", "pruned", 0.93, 12e3, 40e-6),
            ("distilled", "distilled", 0.955, 13e3, 30e-6), ("student alone", "student alone", 0.94, 13e3, 30e-6),
            ("distilled + int8", "distilled + int8", 0.953, 3.5e3, 28e-6)):
        pts.append({"name": name, "family": fam, "accuracy": acc, "size_bytes": size, "latency_s": lat})
    assert base
    return pts


# --- accelerator ------------------------------------------------------------------------------------------

def _hierarchy_levels():
    from aihw.catalogue import hardware

    h100 = hardware.get_chip("H100 SXM")
    return [
        {"name": "registers", "size": f"{h100.anatomy_value('register_file_per_sm') / 1024:.0f} KiB per SM",
         "note": "every CUDA-core operand"},
        {"name": "shared memory / L1", "size": f"≤ {h100.anatomy_value('shared_memory_per_sm') / 1024:.0f} KiB per SM",
         "note": "tiles; wgmma operands"},
        {"name": "L2", "size": f"{h100.anatomy_value('l2_cache') / 1e6:.0f} MB per chip"},
        {"name": "HBM", "size": f"{h100.memory.quoted}, {h100.bandwidth_bytes_per_s / 1e12:.2f} TB/s"},
    ]


@case("accelerator Fig: anatomy (3 panels)", "accelerator.draw_sm", "accelerator.draw_tpu_core",
      "accelerator.draw_hierarchy")
def _anatomy():
    from aihw.catalogue import hardware
    from aihw.plots import accelerator as plots
    from aihw.plots.style import subplots

    fig, axes = subplots(3, 1, row_height=2.8)
    plots.draw_sm(hardware.get_chip("H100 SXM"), ax=axes[0])
    plots.draw_tpu_core(hardware.get_chip("TPU v5p"), ax=axes[1])
    plots.draw_hierarchy(_hierarchy_levels(), ax=axes[2], title="H100 memory hierarchy (fast and small on top)")
    return fig


@case("accelerator: draw_sm alone", "accelerator.draw_sm")
def _sm():
    from aihw.plots import accelerator as plots

    return plots.draw_sm()


@case("accelerator: draw_tpu_core alone", "accelerator.draw_tpu_core")
def _tpu_core():
    from aihw.plots import accelerator as plots

    return plots.draw_tpu_core()


@case("accelerator Fig: utilisation sweep", "accelerator.plot_utilisation_sweep")
def _util_sweep():
    from aihw.plots import accelerator as plots

    ns = [64, 128, 256, 512, 1024, 2048]
    return plots.plot_utilisation_sweep({
        "weights loaded between tiles": [{"n": n, "utilisation": 0.3 + 0.1 * i} for i, n in enumerate(ns)],
        "double-buffered weights": [{"n": n, "utilisation": 0.5 + 0.08 * i} for i, n in enumerate(ns)]})


def _bandwidth_rows():
    sizes = [16 << 10 << k for k in range(15)]
    return [{"bytes": s, "gbps": 200 / (1 + i / 4), "low": 180 / (1 + i / 4), "high": 210 / (1 + i / 4)}
            for i, s in enumerate(sizes)]


CACHES = {"L1d": 48 << 10, "L2": 2 << 20, "L3": 32 << 20}


@case("accelerator Fig: bandwidth sweep", "accelerator.plot_bandwidth_sweep")
def _bandwidth():
    from aihw.plots import accelerator as plots

    plateaus = [{"bandwidth": 190, "start": 16 << 10, "end": 48 << 10}, {"bandwidth": 90, "start": 4 << 20,
                                                                          "end": 16 << 20}]
    return plots.plot_bandwidth_sweep(_bandwidth_rows(), caches=CACHES, plateaus=plateaus)


@case("accelerator Fig: latency", "accelerator.plot_latency")
def _latency():
    from aihw.plots import accelerator as plots

    by_size = [{"working_set": 16 << 10 << k, "ns": 1 + 3 * k, "high": 1.2 + 3.3 * k} for k in range(14)]
    by_stride = [{"stride": 8 << k, "ns": 2 + k, "high": 2.5 + k} for k in range(10)]
    return plots.plot_latency(by_size, by_stride, caches=CACHES)


@case("accelerator Fig: fusion", "accelerator.plot_predicted_measured")
def _fusion():
    from aihw.plots import accelerator as plots

    rows = [{"variant": v, "predicted_s": p, "measured_s": p * 1.3, "low": p * 1.2, "high": p * 1.5}
            for v, p in (("eager (5 kernels)", 0.018), ("fused (torch.compile)", 0.0035), ("one pass (ideal)", 0.0033))]
    return plots.plot_predicted_measured(rows)


@case("accelerator Fig 4.4: attention", "accelerator.plot_attention")
def _attention():
    from aihw.plots import accelerator as plots

    rows = [{"kind": kind, "seq": s, "seconds": f * s * s * 1e-8, "low": f * s * s * 0.9e-8, "high": f * s * s * 1.2e-8,
             "saved_bytes": f * s * s * 40.0} for kind, f in (("naive", 3.0), ("sdpa", 1.0), ("tiled", 2.0))
            for s in (64, 128, 256, 512, 1024)]
    return plots.plot_attention(rows)


@case("accelerator Fig: profile", "accelerator.plot_profile")
def _profile():
    from aihw.plots import accelerator as plots

    return plots.plot_profile({"matmul": 0.05, "attention": 0.02, "element-wise": 0.015, "normalisation": 0.01,
                               "optimizer": 0.008, "copy / layout": 0.004, "other": 0.002})


def _energy_view():
    from aihw.widgets.accelerator_lab import energy_view

    return energy_view(n=256, array=128, precision="bf16", on_chip_scale=1.0)


@case("accelerator Fig: energy", "accelerator.plot_energy")
def _energy():
    from aihw.plots import accelerator as plots

    view = _energy_view()
    return plots.plot_energy(view["bands"], on_chip=view["on_chip"])


@case("accelerator lab widget: energy calculator (default)", "accelerator.plot_energy")
def _energy_widget():
    from aihw.widgets import accelerator_lab

    return accelerator_lab.energy_figure(_energy_view())


# --- gpus_vs_tpus -----------------------------------------------------------------------------------------

@case("gpus_vs_tpus: GPU SM diagram", "diagrams.draw_gpu_sm")
def _gpu_sm():
    from aihw.plots import diagrams

    return diagrams.draw_gpu_sm()


@case("gpus_vs_tpus Fig 1.2: TPU chip diagram", "diagrams.draw_tpu_chip")
def _tpu_chip():
    from aihw.plots import diagrams

    return diagrams.draw_tpu_chip()


@case("gpus_vs_tpus: systolic dataflow", "diagrams.draw_systolic_dataflow")
def _dataflow():
    from aihw.plots import diagrams

    return diagrams.draw_systolic_dataflow()


def _ws():
    from aihw.chips import systolic

    rng = np.random.default_rng(0)
    return systolic.simulate(rng.integers(-3, 4, (64, 64)), rng.integers(-3, 4, (64, 64)), size=16)


@case("gpus_vs_tpus Fig: access counts and utilisation (2 panels)", "gpus_vs_tpus.plot_access_counts",
      "gpus_vs_tpus.plot_utilisation")
def _access_util():
    from aihw.chips.simt import simt_matmul_counts
    from aihw.plots.gpus_vs_tpus import plot_access_counts, plot_utilisation
    from aihw.plots.style import panels

    ws = _ws()
    fig, axes = panels(2, row_height=3.6)
    plot_access_counts(ws.counts, simt_matmul_counts(64, 64, 64), ax=axes[0])
    plot_utilisation(ws, ax=axes[1])
    return fig


@case("gpus_vs_tpus lab: access counts", "gpus_vs_tpus.plot_access_counts")
def _access():
    from aihw.chips.simt import simt_matmul_counts
    from aihw.plots.gpus_vs_tpus import plot_access_counts

    return plot_access_counts(_ws().counts, simt_matmul_counts(64, 64, 64))


def _book_ops():
    from aihw.catalogue import hardware
    from aihw.chips import roofline

    h100 = hardware.get_chip("H100 SXM")
    return [roofline.estimate_matmul(h100, 8192, 8192, 8192, "bf16"),
            roofline.estimate_matmul(h100, 1, 8192, 8192, "bf16"), roofline.estimate_elementwise(h100, 2**28, "bf16")]


@case("gpus_vs_tpus Fig 1.6: roofline of seven chips", "gpus_vs_tpus.plot_roofline")
def _roofline7():
    from aihw.plots.gpus_vs_tpus import plot_roofline

    return plot_roofline(["H100 SXM", "A100 80GB", "B200", "MI300X", "TPU v5e", "TPU v5p", "TPU v6e"], "bf16",
                         ops=_book_ops())


@case("gpus_vs_tpus Fig: attainable vs size", "gpus_vs_tpus.plot_attainable_vs_size")
def _attainable():
    from aihw.plots.gpus_vs_tpus import plot_attainable_vs_size

    return plot_attainable_vs_size("H100 SXM", [2**i for i in range(5, 15)], dtypes=("fp32", "bf16", "fp8"))


def _fake_measurement():
    points = [SimpleNamespace(dtype="fp32", n=n, intensity=n / 6, flops_per_s=2e10 + n * 1e8) for n in (128, 256, 512)]
    return SimpleNamespace(label="this CPU", matmul=points, best_bandwidth=lambda: 2e10,
                           best_flops=lambda dtype: max(p.flops_per_s for p in points))


@case("gpus_vs_tpus Fig 1.8: roofline with this machine", "gpus_vs_tpus.plot_roofline")
def _roofline_measured():
    from aihw.plots.gpus_vs_tpus import plot_roofline

    return plot_roofline(["H100 SXM", "TPU v5e"], "fp32", measured=_fake_measurement())


@case("gpus_vs_tpus lab: roofline with ops", "gpus_vs_tpus.plot_roofline")
def _roofline_lab():
    from aihw.plots.gpus_vs_tpus import plot_roofline

    return plot_roofline(["H100 SXM", "TPU v5e", "MI300X"], "bf16", ops=_book_ops())


@case("gpus_vs_tpus lab widget: roofline explorer (default)", "gpus_vs_tpus.RooflinePlot")
def _roofline_widget():
    from aihw.catalogue import hardware
    from aihw.plots.gpus_vs_tpus import RooflinePlot
    from aihw.widgets.gpus_vs_tpus_lab import DEFAULT_CHIPS, roofline_report

    estimates, _ = roofline_report(DEFAULT_CHIPS, "bf16", 4096, 4096, 4096)
    canvas = RooflinePlot()
    canvas.update([hardware.get_chip(c) for c in DEFAULT_CHIPS], "bf16", ops=[est for _, est in estimates[:1]])
    return canvas.fig


@case("gpus_vs_tpus lab widget: systolic stepper (default)", "gpus_vs_tpus.plot_trace_step")
def _trace_step():
    from aihw.widgets.gpus_vs_tpus_lab import systolic_step

    rng = np.random.default_rng(0)
    A, B = rng.integers(-3, 4, (4, 3)), rng.integers(-3, 4, (3, 3))
    return systolic_step(A, B, size=3, dataflow="weight-stationary", cycle=4)[0]


# --- formats ------------------------------------------------------------------------------------------------

@case("formats Fig: number lines (2 panels)", "formats.plot_number_line")
def _number_lines():
    from aihw.plots.formats import plot_number_line
    from aihw.plots.style import subplots

    fig, axes = subplots(2, 1, row_height=1.6)
    plot_number_line("fp8_e4m3", low=0, high=20, ax=axes[0])
    plot_number_line("bf16", low=0.9, high=1.1, ax=axes[1])
    return fig


def _curves(recipes, n=60):
    return {r: list(2.3 * np.exp(-np.arange(n) / (20 + 5 * i)) + 0.3) for i, r in enumerate(recipes)}


@case("formats Fig: underflow (2 panels)", "formats.plot_losses", "formats.plot_fraction")
def _underflow():
    from aihw.plots.formats import plot_fraction, plot_losses
    from aihw.plots.style import subplots

    recipes = ("fp32", "fp16", "fp16_scaled")
    fig, axes = subplots(2, 1, row_height=3.0)
    plot_losses(_curves(recipes), title="training loss", ax=axes[0])
    plot_fraction({r: [0.1 * i] * 60 for i, r in enumerate(recipes)}, ylabel="gradient elements == 0",
                  title="fraction of gradient elements flushed to zero", ax=axes[1])
    return fig


@case("formats lab widget: loss panel", "formats.plot_losses")
def _formats_widget():
    from aihw.plots.formats import plot_losses

    return plot_losses(_curves(("fp32", "bf16_pure", "bf16_master", "bf16_stochastic")), title="lost updates")


@case("formats Fig: block formats (3 panels)", "formats.plot_block_errors")
def _blocks():
    from aihw.formats import numerics
    from aihw.plots.formats import plot_block_errors
    from aihw.plots.style import subplots

    rng = np.random.default_rng(0)
    rows = numerics.compare_block_formats(rng.normal(0, 0.02, (64, 64)))
    fig, axes = subplots(3, 1, row_height=2.8)
    for ax, title in zip(axes, ("TinyGPT weights (trained)", "MLP activations (after GELU)",
                                "weights with one 30x outlier channel"), strict=True):
        plot_block_errors(rows, title=title, ax=ax)
    return fig


# --- data parallel ------------------------------------------------------------------------------------------

@case("data_parallel Fig: all-reduce time and bus bandwidth (2 panels)", "data_parallel.plot_time_vs_size",
      "data_parallel.plot_bus_bandwidth")
def _dp_time_bw():
    from aihw.plots.data_parallel import plot_bus_bandwidth, plot_time_vs_size
    from aihw.plots.style import panels

    fig, axes = panels(2, row_height=3.8)
    plot_time_vs_size(_dp_rows(), fits=_dp_fits(), ax=axes[0])
    plot_bus_bandwidth(_dp_rows(), ax=axes[1])
    return fig


@case("data_parallel lab: all-reduce time", "data_parallel.plot_time_vs_size")
def _dp_time():
    from aihw.plots.data_parallel import plot_time_vs_size

    return plot_time_vs_size(_dp_rows(), fits=_dp_fits())


@case("data_parallel Fig: node vs torus", "diagrams.draw_node_vs_torus", "diagrams.draw_nvswitch_node",
      "diagrams.draw_tpu_torus")
def _node_torus():
    from aihw.plots import diagrams

    return diagrams.draw_node_vs_torus()


@case("data_parallel Fig: cluster estimates", "data_parallel.plot_cluster_estimates")
def _cluster():
    from aihw.comm import collectives as cc
    from aihw.plots.data_parallel import plot_cluster_estimates

    return plot_cluster_estimates(cc.cluster_estimates(14e9, nodes=4, tpu_chips=256),
                                  title="All-reduce of 7B bf16 gradients (14 GB), alpha-beta model")


@case("data_parallel lab widget: cluster panel (default)", "data_parallel.plot_cluster_estimates")
def _cluster_widget():
    from aihw.plots.data_parallel import plot_cluster_estimates
    from aihw.widgets import data_parallel_lab

    estimates, _ = data_parallel_lab.cluster_report(7e9)
    return plot_cluster_estimates(estimates, title="All-reduce of 1.4e+10 gradients")


@case("data_parallel Fig: loss curves", "data_parallel.plot_loss_curves")
def _loss_curves():
    from aihw.plots.data_parallel import plot_loss_curves

    per_rank = [{"rank": r, "losses": list(2.3 * np.exp(-np.arange(30) / (10 + r)) + 0.2), "mode": "bucketed"}
                for r in range(4)]
    return plot_loss_curves(per_rank, reference={"losses": list(2.3 * np.exp(-np.arange(30) / 11) + 0.2)})


@case("data_parallel Fig: step breakdown", "data_parallel.plot_step_breakdown")
def _breakdown_dp():
    from aihw.plots.data_parallel import plot_step_breakdown

    rows = [{"label": f"{n} rank{'s' if n > 1 else ''}", "compute_s": 0.04 / n, "comm_s": 0.004 * (n - 1),
             "efficiency": 1 / (1 + 0.1 * (n - 1) * n)} for n in (1, 2, 3, 4)]
    return plot_step_breakdown(rows)


@case("data_parallel Fig: sharded memory", "data_parallel.plot_memory_comparison")
def _dp_memory():
    from aihw.plots.data_parallel import plot_memory_comparison

    return plot_memory_comparison(_memory_rows())


# --- memory ------------------------------------------------------------------------------------------------

@case("memory Fig: breakdown by stage", "memory.plot_breakdown")
def _mem_stages():
    from aihw.catalogue import hardware
    from aihw.memory.estimator import estimate_memory
    from aihw.plots.memory import plot_breakdown

    h100 = hardware.get_chip("H100 SXM")
    stages = {"bf16 weights": estimate_memory("llama-2-7b", mode="infer", batch=1, seq=1),
              "+ training state": estimate_memory("llama-2-7b", batch=1, seq=1),
              "+ activations": estimate_memory("llama-2-7b", batch=8, seq=4096),
              "full recompute": estimate_memory("llama-2-7b", batch=8, seq=4096, recompute="full"),
              "ZeRO-3, 8 GPUs": estimate_memory("llama-2-7b", batch=8, seq=4096, recompute="full", zero=3, dp=8)}
    return plot_breakdown(stages, capacity_bytes=h100.memory_bytes, capacity_label=h100.name)


@case("memory Fig: predicted vs measured (2 panels)", "memory.plot_predicted_vs_measured",
      "memory.plot_measured_scatter")
def _mem_measured():
    from aihw.plots.memory import plot_measured_scatter, plot_predicted_vs_measured
    from aihw.plots.style import panels

    fig, axes = panels(2, row_height=4.0)
    rows = _compare_rows()
    plot_predicted_vs_measured(rows, ax=axes[0], title="TinyGPT 128x3, batch 4, no recompute")
    plot_measured_scatter([dict(r, predicted=r["predicted"] * k, measured=r["measured"] * k) for k in (1, 3, 9)
                           for r in rows if r["component"] != "peak"], ax=axes[1])
    return fig


@case("memory lab: predicted vs measured", "memory.plot_predicted_vs_measured")
def _mem_lab():
    from aihw.plots.memory import plot_predicted_vs_measured

    return plot_predicted_vs_measured(_compare_rows(), title="TinyGPT 128x3, batch 4 (fp32, AdamW)")


@case("memory lab widget: static figure (default) and with a measurement", "memory.plot_breakdown",
      "memory.plot_prediction_with_measurement")
def _mem_widget():
    from aihw.widgets import memory_lab

    view = memory_lab.memory_view()
    return memory_lab.draw(view)


@case("memory lab widget: prediction with measurement", "memory.plot_prediction_with_measurement")
def _mem_widget_measured():
    from aihw.widgets import memory_lab

    settings = memory_lab.measured_settings({"hidden": 128, "layers": 3, "heads": 4, "vocab": 256, "batch": 4, "seq": 64})
    return memory_lab.draw(memory_lab.memory_view(**settings), _compare_rows())


# --- model parallel ---------------------------------------------------------------------------------------

@case("model_parallel Fig: schedules (3 panels)", "model_parallel.plot_simulated", "model_parallel.plot_timeline")
def _schedules():
    from aihw.layout import schedules
    from aihw.plots.model_parallel import plot_simulated
    from aihw.plots.style import panels

    fig, axes = panels(3, row_height=2.6)
    for ax, (schedule, v) in zip(axes, (("gpipe", 1), ("1f1b", 1), ("interleaved", 2)),
                                 strict=True):
        plot_simulated(schedules.simulate(schedule, 4, 8, v=v), ax=ax)
    return fig


@case("model_parallel lab: one schedule", "model_parallel.plot_simulated")
def _schedule_lab():
    from aihw.layout import schedules
    from aihw.plots.model_parallel import plot_simulated

    return plot_simulated(schedules.simulate("1f1b", 4, 8))


@case("model_parallel lab widget: schedule explorer (default)", "model_parallel.plot_simulated")
def _schedule_widget():
    from aihw.widgets.model_parallel_lab import simulate_view

    return simulate_view("1f1b", 4, 8, 2)[0]


def _measured_events(p: int = 2, m: int = 4):
    from aihw.layout import schedules

    sim = schedules.simulate("1f1b", p, m, forward_s=0.004, backward_s=0.008)
    events = [e for e in sim.events if e.kind in ("forward", "backward")]
    events += [schedules.TimelineEvent(e.stage, kind, e.micro_batch, e.end, e.end + 0.0005)
               for e in list(events) for kind in ("send", "recv") if e.kind == "forward"]
    return events, sim.step_s * 1.2, sim


@case("model_parallel Fig: measured and simulated", "model_parallel.plot_measured_and_simulated")
def _measured_sim():
    from aihw.plots.model_parallel import plot_measured_and_simulated

    events, step, sim = _measured_events()
    return plot_measured_and_simulated(events, step, sim, measured_bubble=0.31)


@case("model_parallel: bubble against m", "model_parallel.plot_bubble_vs_m")
def _bubble():
    from aihw.plots.model_parallel import plot_bubble_vs_m

    return plot_bubble_vs_m([2, 4, 8], 32, measured={2: [(1, 0.5), (4, 0.21), (8, 0.12)]})


def _plan():
    from aihw.widgets.model_parallel_lab import plan_view

    return plan_view()[0]


@case("model_parallel Fig: planner layouts", "model_parallel.plot_layout_times")
def _layouts():
    from aihw.plots.model_parallel import plot_layout_times

    return plot_layout_times(_plan().ranked, top=8)


# --- cheaper ----------------------------------------------------------------------------------------------

@case("cheaper Fig: weight grids (2 panels)", "cheaper.plot_weight_grid")
def _grids():
    from aihw.plots.cheaper import plot_weight_grid
    from aihw.plots.style import panels

    rng = np.random.default_rng(0)
    values = rng.normal(0, 0.05, 4096)
    fig, axes = panels(2)
    plot_weight_grid(values, np.linspace(-0.2, 0.2, 15), title="int4 per-channel(axis=0) sym: layer 0", ax=axes[0])
    plot_weight_grid(values, np.linspace(-0.2, 0.2, 255), title="int8 per-tensor sym: layer 0", ax=axes[1])
    return fig


@case("cheaper Fig: layer SQNR", "cheaper.plot_layer_sqnr")
def _sqnr():
    from aihw.plots.cheaper import plot_layer_sqnr

    rows = [{"layer": layer, "scheme": s, "sqnr_db": d} for layer in ("0", "2", "4")
            for s, d in (("int8 per-tensor", 38), ("int8 per-channel", 42), ("int4 per-channel", 18))]
    return plot_layer_sqnr(rows)


@case("cheaper: scheme accuracy", "cheaper.plot_scheme_accuracy")
def _scheme_acc():
    from aihw.plots.cheaper import plot_scheme_accuracy

    rows = [{"scheme": s, "accuracy": a} for s, a in (("int8 per-tensor", 0.97), ("int4 per-channel(axis=0) sym", 0.96),
                                                       ("W8A8: int8 weights + int8 activations", 0.95))]
    return plot_scheme_accuracy(rows, baseline=0.974)


@case("cheaper Fig: paired differences", "cheaper.plot_paired_differences")
def _paired():
    from aihw.plots.cheaper import plot_paired_differences

    rows = [{"scheme": s, "vs_fp32": _interval([d - 0.002, d, d + 0.002])} for s, d in (
        ("int8 per-tensor sym", -0.001), ("int8 per-channel(axis=0) sym", 0.0), ("int4 per-tensor sym", -0.03),
        ("int4 per-channel(axis=0) sym", -0.008), ("int2 per-channel(axis=0) sym", -0.3),
        ("W8A8: int8 weights + int8 activations", -0.002))]
    return plot_paired_differences(rows, key="vs_fp32", title="Quantized minus fp32, paired over seeds")


@case("cheaper Fig: INT8 speed-up", "cheaper.plot_int8_speedup")
def _speedup():
    from aihw.plots.cheaper import plot_int8_speedup

    rows = [{"width": w, "batch": b, "fp32_s": 1e-4 * b, "int8_s": 1e-4 * b / (0.8 + 0.0005 * w * np.log2(b + 1))}
            for w in (256, 1024, 4096) for b in (1, 8, 64, 512)]
    return plot_int8_speedup(rows)


@case("cheaper Fig: sparsity curves", "cheaper.plot_sparsity_curves")
def _sparsity():
    from aihw.plots.cheaper import plot_sparsity_curves

    rows = [{"structure": st, "fine_tuned": t, "sparsity": s,
             "ci": _interval([0.97 - s**3 * (0.5 if t else 1) * k for k in (0.9, 1.0, 1.1)])}
            for st in ("unstructured", "neurons") for t in (False, True) for s in (0.3, 0.5, 0.7, 0.9)]
    return plot_sparsity_curves(rows, baseline=_interval([0.973, 0.975, 0.974]))


@case("cheaper Fig: latency bars", "cheaper.plot_latency_bars")
def _latency_bars():
    from aihw.plots.cheaper import plot_latency_bars

    lat = {"dense fp32": 85e-6, "50% unstructured (dense kernel)": 84e-6, "50% of neurons removed": 50e-6,
           "int8 dynamic": 70e-6, "distilled student": 30e-6}
    flops = {k: 1e5 * (1 + i) for i, k in enumerate(lat)}
    return plot_latency_bars(lat, flops=flops)


@case("cheaper Fig: distillation (2 panels)", "cheaper.plot_distillation")
def _distill():
    from aihw.plots.cheaper import plot_distillation
    from aihw.plots.style import panels

    fig, axes = panels(2)
    for ax, base in zip(axes, (0.95, 0.90), strict=True):
        rows = [{"temperature": t, "ci": _interval([base + 0.01 * np.log(t + 1) + d for d in (-0.003, 0, 0.003)])}
                for t in (1.0, 2.0, 4.0, 8.0, 16.0)]
        plot_distillation(rows, control=_interval([base - 0.01, base, base + 0.01]), teacher=0.974, ax=ax)
    return fig


@case("cheaper lab: accuracy bars", "cheaper.plot_accuracy_bars")
def _acc_bars():
    from aihw.plots.cheaper import plot_accuracy_bars

    return plot_accuracy_bars({"teacher (fp32)": 0.974, "student alone": _interval([0.90, 0.91, 0.92]),
                               "distilled student": _interval([0.92, 0.93, 0.94])},
                              title="64-unit student, 10% of the training images, T = 8 (one run)")


@case("cheaper Fig: trade-off", "cheaper.plot_tradeoff")
def _tradeoff():
    from aihw.plots.cheaper import plot_tradeoff

    return plot_tradeoff(_tradeoff_points())


# --- inference --------------------------------------------------------------------------------------------

def _decode_points():
    return [SimpleNamespace(weight_bytes=w, seconds=w / 1.5e10 + 1e-4, timing=_timing(w / 1.5e10 + 1e-4))
            for w in (2e6, 8e6, 32e6, 64e6, 128e6)]


@case("inference Fig: decode vs bytes", "inference.plot_decode_vs_bytes")
def _decode():
    from aihw.plots import inference as iplots

    return iplots.plot_decode_vs_bytes(_decode_points(), bandwidth=1.5e10, llc_bytes=32 << 20)


def _batch_points():
    return [SimpleNamespace(batch=b, tokens_per_s=b / (0.01 + 0.0005 * b), predicted_s=0.008 + 0.0004 * b,
                            seconds=0.01 + 0.0005 * b, timing=_timing(0.01 + 0.0005 * b),
                            memory_s=0.008, compute_s=0.0004 * b) for b in (1, 2, 4, 8, 16, 32, 64)]


@case("inference Fig: batch sweep", "inference.plot_batch_sweep")
def _batch():
    from aihw.plots import inference as iplots

    return iplots.plot_batch_sweep(_batch_points(), title="Measured on this machine (768 x 2, GQA, fp32)")


@case("inference Fig: roofline points", "inference.plot_roofline_points")
def _roof_points():
    from aihw.plots import inference as iplots

    points = [(f"decode b={b}", 0.5 * b * (1 - b / 200), b * 1e9 / (1 + b / 40)) for b in (1, 2, 4, 8, 16, 32, 64)]
    points.append(("prefill 60 tokens", 25.0, 3e10))
    return iplots.plot_roofline_points(bandwidth=2e10, peak=1e11, points=points)


@case("inference Fig: serving sweep", "inference.plot_serving_sweep")
def _serving():
    from aihw.plots import inference as iplots
    from aihw.serving.estimator import ServingConfig, batch_sweep

    return iplots.plot_serving_sweep(batch_sweep(ServingConfig("llama-3-8b", context=4096), (1, 2, 4, 8, 16, 32,
                                                                                              64, 128, 256)))


@case("inference Fig: KV waste", "inference.plot_waste")
def _waste():
    from aihw.inference.paged import waste_for_trace
    from aihw.plots import inference as iplots

    return iplots.plot_waste(waste_for_trace([(0, 100, 200), (30, 50, 400), (60, 20, 100)], max_tokens=2048,
                                             block_size=16, bytes_per_token=131072))


# --- scaling and planning --------------------------------------------------------------------------------

@case("scaling Fig: loss against compute", "scaling.plot_loss_vs_compute")
def _loss_compute():
    from aihw.plots.scaling import plot_loss_vs_compute

    return plot_loss_vs_compute()


@case("scaling Fig: tokens per parameter", "scaling.plot_tokens_per_param")
def _tokens_per_param():
    from aihw.plots.scaling import plot_tokens_per_param

    return plot_tokens_per_param()


@case("planning lab widget: published run against the planner's best (default)", "model_parallel.plot_layout_times")
def _alternatives():
    from aihw.widgets import planning_lab

    return planning_lab.alternatives_figure("GPT-3 175B ZeRO-3, 1536 GPUs")


@case("planning lab widget: Llama 3 405B against the planner's best", "model_parallel.plot_layout_times")
def _alternatives_llama():
    from aihw.planning import published
    from aihw.widgets import planning_lab

    return planning_lab.alternatives_figure(published.LLAMA3_RUNS[-1].name)


@case("planning Fig: planner against published runs", "planning.plot_validation")
def _validation():
    from aihw.planning import published
    from aihw.plots.planning import plot_validation

    return plot_validation(published.table())


# --- the checker itself -----------------------------------------------------------------------------------

def test_checker_finds_overlap_off_canvas_overflow_and_small_text():
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    fig = Figure(figsize=(6, 3))
    ax = fig.subplots()
    ax.text(0.5, 0.5, "one label", fontsize=11)
    ax.text(0.52, 0.5, "another label", fontsize=11)
    fig.text(0.98, 0.5, "runs off the right edge", fontsize=11)
    ax.add_patch(Rectangle((0.1, 0.1), 0.05, 0.05))
    ax.text(0.125, 0.125, "too wide for its box", ha="center", va="center", fontsize=11)
    ax.text(0.5, 0.9, "tiny", fontsize=6)
    problems = check.check_figure(fig)
    kinds = {p.split(":")[0] for p in problems}
    assert kinds == {"overlap", "off canvas", "overflow", "too small"}, problems
    clean = Figure(figsize=(6, 3))
    clean.subplots().set_title("fine")
    assert check.check_figure(clean) == []
    with pytest.raises(check.FigureLayoutError, match="overlap"):
        check.assert_figure_ok(fig)


def test_phone_assumption():
    # a 6-inch figure on a 390-px phone (358-px column): 9 pt renders at 7.46 CSS px; at natural size, 12 px
    from matplotlib.figure import Figure

    assert check.phone_scale(Figure(figsize=(6, 3))) * 9 == pytest.approx(7.458, abs=0.01)
    assert check.phone_scale(Figure(figsize=(3, 3))) == pytest.approx(96 / 72)


def _public_plot_functions() -> set[str]:
    names = set()
    for info in pkgutil.iter_modules(aihw.plots.__path__):
        if info.name in ("style", "check", "__init__"):
            continue
        module = importlib.import_module(f"aihw.plots.{info.name}")
        for name, obj in vars(module).items():
            if (name.startswith(("plot_", "draw_")) or name == "RooflinePlot") and getattr(
                    obj, "__module__", "") == module.__name__ and (inspect.isfunction(obj) or inspect.isclass(obj)):
                names.add(f"{info.name}.{name}")
    return names


def test_every_plot_function_is_covered():
    covered = {u for uses, _ in CASES.values() for u in uses}
    assert _public_plot_functions() <= covered, sorted(_public_plot_functions() - covered)


@pytest.mark.parametrize("name", sorted(CASES))
def test_figure_layout(name):
    fig = CASES[name][1]()
    try:
        problems = check.check_figure(fig, name=name)
        assert not problems, "\n".join(problems)
    finally:
        plt.close(fig)


def test_widget_figures_are_2x_images_with_alt_text():
    import re

    from widget_support import walk

    from aihw.widgets import gpus_vs_tpus_lab, model_parallel_lab

    for widget in (gpus_vs_tpus_lab.roofline_explorer(), gpus_vs_tpus_lab.systolic_stepper(),
                   model_parallel_lab.schedule_explorer()):
        images = [w.value for w in walk(widget) if "<img" in str(getattr(w, "value", ""))]
        assert images, widget
        for tag in images:
            alt = re.search(r'alt="([^"]*)"', tag)
            assert alt and len(alt.group(1)) > 20, tag[:200]
            assert "data:image/png;base64," in tag and "max-width:" in tag
    plt.close("all")
