"""Widgets of the lab "Model, pipeline and tensor parallelism".

* :func:`schedule_explorer` (live): the simulator's Gantt chart for any schedule, p, m and v.
* :func:`pipeline_panel` (Run button): a real pipeline run on this machine, measured beside simulated.
* :func:`planner_widget` (live): the planner's ranked layouts for a model on a cluster.

The work is done by plain functions (:func:`simulate_view`, :func:`run_view`, :func:`plan_view`) the tests call.
"""

from __future__ import annotations

import html

import ipywidgets as W

from aihw import planning
from aihw.catalogue.hardware import list_chips
from aihw.catalogue.networks import load_networks
from aihw.layout.schedules import SCHEDULES, bubble_fraction, simulate
from aihw.plots.model_parallel import plot_measured_and_simulated, plot_simulated
from aihw.transformer.shapes import list_presets
from aihw.widgets._common import error_box, figure_img, guarded_run, image_box, run_button, show_error


def simulate_view(schedule: str = "1f1b", p: int = 4, m: int = 8, v: int = 1):
    """Simulate one step (forward 1, backward 2 time units); return (figure, facts)."""
    v = v if schedule == "interleaved" else 1
    run = simulate(schedule, p, m, v=v)
    facts = {"bubble (simulated)": run.bubble, "bubble (closed form)": bubble_fraction(p, m, v=v),
             "peak micro-batches in flight, stage 0": run.peak_in_flight[0], "step (time units)": run.step_s}
    return plot_simulated(run), facts


def run_view(p: int = 2, m: int = 4, schedule: str = "1f1b", *, width: int = 64, micro_batch_size: int = 4):
    """Run the pipeline for real (``p`` gloo ranks, a few seconds); return (figure, summary dict)."""
    from aihw.models.tinygpt import TinyGPTConfig
    from aihw.parallel.pipeline import PipelineConfig, run_pipeline, summary, timeline

    cfg = PipelineConfig(model=TinyGPTConfig(width=width, depth=6), micro_batches=m,
                         micro_batch_size=micro_batch_size, schedule=schedule)
    runs = run_pipeline(cfg, stages=p)[0]
    result = summary(runs)
    events, step = timeline(runs)
    sim = simulate(schedule, p, m, forward_s=result["forward_s"], backward_s=result["backward_s"])
    return plot_measured_and_simulated(events, step, sim, measured_bubble=result["bubble_measured"]), result


def plan_view(model: str = "llama-2-13b", chip: str = "H100 SXM", chips_per_node: int = 8, nodes: int = 4,
              network: str = "InfiniBand NDR", global_batch: int = 512, seq: int = 4096,
              gemm_fraction: float | None = None, top: int = 5) -> tuple[planning.Plan, str]:
    """Plan and an HTML table of the ``top`` layouts, the explanation and the assumptions."""
    cfg = planning.PlanConfig(model=model, cluster=planning.Cluster(chip=chip, chips_per_node=chips_per_node,
                                                                  nodes=nodes, network=network),
                             global_batch=global_batch, seq=seq,
                             efficiency=planning.Efficiency(gemm_fraction=gemm_fraction or None))
    result = planning.plan(cfg)
    terms = ("compute", "bubble", "tp_comm", "cp_comm", "ep_comm", "pp_comm", "dp_comm", "overhead")
    cols = ("layout", "GB/chip", "step s", *(t.replace("_", " ") for t in terms), "MFU")
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in (
            x.label, f"{x.memory_bytes / 1e9:.1f}", f"{x.step_s:.3g}", *(f"{x.breakdown[t]:.3g}" for t in terms),
            f"{x.mfu:.0%}")) + "</tr>" for x in result.ranked[:top])
    table = "<table><tr>" + "".join(f"<th>{c}</th>" for c in cols) + f"</tr>{rows}</table>"
    notes = "".join(f"<li>{html.escape(s)}</li>" for s in planning.explain(result))
    assumptions = "".join(f"<li>{html.escape(a)}</li>" for a in result.assumptions)
    return result, f"{table}<ul>{notes}</ul><details><summary>assumptions</summary><ul>{assumptions}</ul></details>"


def _facts_html(facts: dict) -> str:
    return " &nbsp;|&nbsp; ".join(f"<b>{html.escape(k)}</b>: " + (f"{v:.1%}" if isinstance(v, float) and v < 1
                                                                   else f"{v:g}") for k, v in facts.items())


def schedule_explorer(schedule: str = "1f1b", p: int = 4, m: int = 8, v: int = 2) -> W.VBox:
    """Sliders for p, m, v and the schedule; the simulated Gantt chart and bubble update live."""
    sched = W.ToggleButtons(options=SCHEDULES, value=schedule, description="schedule",
                            style={"button_width": "auto"})
    sliders = {name: W.IntSlider(value=val, min=1, max=hi, description=name, continuous_update=False)
               for name, val, hi in (("p", p, 16), ("m", m, 32), ("v", v, 4))}
    err, facts, image = error_box(), W.HTML(), image_box()

    def update(_=None) -> None:
        try:
            fig, info = simulate_view(sched.value, *(s.value for s in sliders.values()))
        except Exception as exc:
            show_error(err, exc, stale=(facts,))
            return
        show_error(err, None)
        facts.value = _facts_html(info)
        image.value = figure_img(fig, alt="Gantt chart of the simulated pipeline: forward and backward blocks "
                                          "per stage over time, idle time in grey")

    for control in (sched, *sliders.values()):
        control.observe(update, names="value")
    update()
    return W.VBox([sched, W.HBox(list(sliders.values())), err, facts, image])


def pipeline_panel(p: int = 2, m: int = 4, schedule: str = "1f1b") -> W.VBox:
    """Choose p, m and the schedule, press Run: the measured timeline beside the simulated one."""
    p_box = W.BoundedIntText(value=p, min=1, max=6, description="p (ranks)")
    m_box = W.BoundedIntText(value=m, min=1, max=16, description="m")
    sched = W.ToggleButtons(options=("gpipe", "1f1b"), value=schedule, description="schedule",
                            style={"button_width": "auto"})
    button = run_button("Run")
    status, err, image = W.HTML("Press Run: it starts p processes (a few seconds each)."), error_box(), image_box()

    def work() -> str:
        fig, result = run_view(p_box.value, m_box.value, sched.value)
        image.value = figure_img(fig, alt="Two Gantt charts: the measured pipeline timeline above the simulated "
                                          "one fed with the measured stage times")
        return _facts_html({"bubble measured": result["bubble_measured"], "theory": result["bubble_theory"],
                            "simulated with measured times": result["bubble_simulated"]})

    button.on_click(lambda _: guarded_run(button, status, err, "running...", work))
    return W.VBox([W.HBox([p_box, m_box]), sched, button, status, err, image])


def planner_widget(model: str = "llama-2-13b", chip: str = "H100 SXM") -> W.VBox:
    """Model, cluster, batch and matmul efficiency in; the ranked layouts and why the best one wins out (live)."""
    style = {"description_width": "120px"}
    controls = {
        "model": W.Dropdown(options=list_presets(), value=model, description="model", style=style),
        "chip": W.Dropdown(options=[c.short_name for c in list_chips() if c.interconnect is not None],
                           value=chip, description="chip", style=style),
        "chips_per_node": W.BoundedIntText(value=8, min=1, max=512, description="chips per node", style=style),
        "nodes": W.BoundedIntText(value=4, min=0, max=4096, description="nodes", style=style),
        "network": W.Dropdown(options=[n.name for n in load_networks()], value="InfiniBand NDR",
                              description="network", style=style),
        "global_batch": W.BoundedIntText(value=512, min=1, max=1 << 20, description="global batch", style=style),
        "seq": W.BoundedIntText(value=4096, min=1, max=1 << 20, description="sequence", style=style),
        "gemm_fraction": W.FloatSlider(value=0.0, min=0.0, max=1.0, step=0.05,
                                       description="matmul fraction (0: chip's)", style=style),
    }
    err, table = error_box(), W.HTML()

    def update(_=None) -> None:
        try:
            _, table.value = plan_view(**{k: c.value for k, c in controls.items()})
        except Exception as exc:
            show_error(err, exc, stale=(table,))
            return
        show_error(err, None)

    for control in controls.values():
        control.observe(update, names="value")
    update()
    return W.VBox([W.HBox([W.VBox(list(controls.values())[:4]), W.VBox(list(controls.values())[4:])]), err, table])


__all__ = ["simulate_view", "run_view", "plan_view", "schedule_explorer", "pipeline_panel", "planner_widget"]


# --- worked solutions of the lab's exercises (shown only through aihw.exercises.reveal) ---------------------

def _worked_1() -> tuple[float, str]:
    value = 7 / 31
    return value, f"(p-1)/(m+p-1) = 7/31 = {value:.3f}: fill and drain take p-1 slots of a step of m+p-1."


def _worked_2() -> tuple[float, str]:
    return 8.0, ("Stage 0 runs p-1 = 7 warm-up forwards, then one more forward before its first backward: 8 = p. "
                 "Stage k holds p-k.")


def _worked_3() -> tuple[float, str]:
    value = 4 * 1 * 4096 * 5120 * 2
    return float(value), (f"4 all-reduces per layer and step (2 forward, 2 backward), each over b x s x h = "
                          f"1 x 4096 x 5120 values of 2 bytes: {value:,} bytes.")


def _worked_4() -> tuple[float, str]:
    value = (3 / 11) / (3 / 19)
    return value, f"1F1B: (p-1)/(m+p-1) = 3/11; interleaved: (p-1)/(vm+p-1) = 3/19; ratio {value:.3f}."


def _worked_5() -> tuple[str, str]:
    return "tensor", ("A pipeline cut sends one activation tensor per micro-batch between neighbouring stages; tensor "
                      "parallelism all-reduces activations twice in every layer, forward and backward, on the "
                      "critical path: 'tensor' needs NVLink-class bandwidth.")


WORKED = {1: _worked_1, 2: _worked_2, 3: _worked_3, 4: _worked_4}
CHOICES = {5: _worked_5}  # categorical answers, for aihw.exercises.expected
SOLUTIONS = {n: (lambda f=f: f()[1]) for n, f in (*WORKED.items(), *CHOICES.items())}
