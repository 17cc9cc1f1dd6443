"""Widgets of the lab "Inside the accelerator": a live energy calculator and the attention comparison.

The work is in plain functions tests call directly: :func:`energy_view` (pJ per MAC of each design for the
control values) and :func:`attention_view` (time and saved bytes of the three attention kinds at one sequence
length, behind a Run button). Bad input shows inline, never as a traceback.
"""

from __future__ import annotations

import html

import ipywidgets as W

from aihw.chips import energy
from aihw.plots.accelerator import plot_energy
from aihw.widgets._common import error_box, guarded_run, run_button, show_error, show_figure


def energy_view(*, n: int = 256, array: int = 128, precision: str = "bf16", on_chip_scale: float = 1.0) -> dict:
    """pJ per MAC (low, central, high) and the on-chip part per design, plus an HTML table."""
    counts = energy.design_counts(n, array=array)
    bands = {name: energy.energy_band(c, precision=precision, on_chip_scale=on_chip_scale)
             for name, c in counts.items()}
    on_chip = {}
    for name, c in counts.items():
        e = energy.energy_per_mac(c, precision=precision, on_chip_scale=on_chip_scale)
        on_chip[name] = e.total - e.levels["offchip"]
    rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{b['low']:.2f}</td><td>{b['central']:.2f}</td>"
                   f"<td>{b['high']:.2f}</td><td>{on_chip[k]:.2f}</td></tr>" for k, b in bands.items())
    table = ("<table><tr><th>design</th><th>low</th><th>central</th><th>high</th><th>on chip (central)</th></tr>"
             f"{rows}</table><small>pJ per MAC, Horowitz 45 nm prices x on-chip scale {on_chip_scale:g}</small>")
    return {"bands": bands, "on_chip": on_chip, "html": table}


def energy_figure(view: dict):
    """The calculator's chart: pJ per MAC per design at the book's column width (legible on a phone)."""
    return plot_energy(view["bands"], on_chip=view["on_chip"])


def energy_calculator() -> W.VBox:
    """Matrix size, array size, precision and process scale: the energy per MAC of each design, live."""
    n = W.IntSlider(value=256, min=16, max=512, step=16, description="n", continuous_update=False)
    array = W.Dropdown(options=[32, 64, 128, 256], value=128, description="array / tile")
    precision = W.Dropdown(options=list(energy.MAC_PRECISIONS), value="bf16", description="precision")
    scale = W.FloatLogSlider(value=1.0, base=10, min=-1.5, max=0, step=0.1, description="on-chip scale",
                             continuous_update=False)
    table, out, err = W.HTML(), W.Output(), error_box()

    def update(*_):
        try:
            view = energy_view(n=n.value, array=array.value, precision=precision.value,
                               on_chip_scale=scale.value)
        except ValueError as exc:
            show_error(err, exc)
            return
        show_error(err, None)
        table.value = view["html"]
        show_figure(out, energy_figure(view), alt="Bar chart of energy per multiply-accumulate for each design, "
                                                   "low-high band as error bars, on-chip part inside")

    for control in (n, array, precision, scale):
        control.observe(update, names="value")
    update()
    return W.VBox([W.HBox([n, array]), W.HBox([precision, scale]), err, table, out])


def attention_view(seq: int, *, heads: int = 4, head_dim: int = 32, block: int = 64) -> list[dict]:
    """Forward+backward time and bytes saved for backward of naive, SDPA and tiled attention at ``seq``."""
    from aihw.accel.attention import compare_attention  # torch loads only when a measurement is asked for

    if not 16 <= seq <= 1024:
        raise ValueError(f"seq must be in [16, 1024] for a measurement of a few seconds, got {seq!r}")
    return compare_attention((seq,), heads=heads, head_dim=head_dim, block=block, repeats=3)


def attention_explorer() -> W.VBox:
    """A sequence-length slider and a Run button: measure the three attention kinds on this machine."""
    seq = W.IntSlider(value=256, min=64, max=1024, step=64, description="sequence", continuous_update=False)
    button, status, err, table = run_button("Measure"), W.HTML(), error_box(), W.HTML()

    def work() -> str:
        rows = attention_view(seq.value)
        table.value = "<table><tr><th>kind</th><th>fwd+bwd (ms, min-max)</th><th>saved for backward (MB)</th>" \
            "<th>HBM traffic, computed (MB)</th></tr>" + "".join(
                f"<tr><td>{r['kind']}</td><td>{r['seconds'] * 1e3:.1f} ({r['low'] * 1e3:.1f}-{r['high'] * 1e3:.1f})"
                f"</td><td>{r['saved_bytes'] / 1e6:.2f}</td><td>{r['traffic_bytes'] / 1e6:.2f}</td></tr>"
                for r in rows) + "</table>"
        return f"measured at sequence {seq.value}; all three equal SDPA (assert_close)"

    button.on_click(lambda _: guarded_run(button, status, err, "measuring...", work))
    return W.VBox([W.HBox([seq, button]), status, err, table])


# --- worked solutions of the lab's exercises (shown only through aihw.exercises.reveal) ---------------------

def _worked_1() -> tuple[float, str]:
    from aihw.catalogue import hardware

    h100 = hardware.get_chip("H100 SXM")
    tc, fp32 = h100.peak_flops("bf16"), h100.peak_flops("fp32")
    value = 100 * tc / (tc + fp32)
    return value, (f"tensor-core bf16 peak / (that + fp32 CUDA-core peak) = {tc / 1e12:,.1f} / ({tc / 1e12:,.1f} + "
                   f"{fp32 / 1e12:.0f}) TFLOP/s = {value:.1f} %.")


def _worked_2() -> tuple[float, str]:
    n, size = 1024, 128
    tiles = (n // size) ** 2                                    # T_k x T_n weight tiles
    cycles = size + (n // size) * ((n // size) * (n + size - 2) + n)
    value = 100 * n**3 / (cycles * size**2)
    return value, (f"{tiles} weight tiles; with double buffering only the first {size}-cycle load is exposed: "
                   f"cycles = N + T_k (T_n (M + N - 2) + N_cols) = {cycles:,}; utilisation = n^3 / (cycles N^2) = "
                   f"{value:.1f} %.")


def _worked_3() -> tuple[float, str]:
    value = (2 + 2 + 2 + 3 + 2) * 4 * 2**20 / 1e6
    return value, ("mul reads x and writes t (2 passes), add 2, relu 2, the second mul reads t and x and writes (3), "
                   f"tanh 2: 11 passes x 4 bytes x 2^20 = {value:.1f} MB.")


def _worked_4() -> tuple[str, str]:
    return "memory", ("Element-wise and normalisation ops do about one FLOP per byte they move, far below any "
                      "machine's ridge point: the step is memory-bound (and, for a model this small, overhead-bound).")


WORKED = {1: _worked_1, 2: _worked_2, 3: _worked_3}   # numeric: tests/test_lab_solutions.py checks them
CHOICES = {4: _worked_4}  # categorical answers, for aihw.exercises.expected
SOLUTIONS = {n: (lambda f=f: f()[1]) for n, f in (*WORKED.items(), *CHOICES.items())}
