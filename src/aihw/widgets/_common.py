"""Pieces every widget uses: an inline error line, and figures shown as 2x PNGs with alt text."""

from __future__ import annotations

import base64
import html
import io

import ipywidgets as W
import matplotlib.pyplot as plt

from aihw.plots.style import alt_text


def error_box() -> W.HTML:
    """An HTML line that shows bad input inline (never a traceback)."""
    return W.HTML(value="", layout=W.Layout(min_height="1.5em"))


def show_error(box: W.HTML, exc: BaseException | None, *, stale: tuple = ()) -> None:
    """Show ``exc`` inline in ``box`` (or clear it). A ValueError is the reader's input and shows as its message;
    any other exception also names its type. ``stale``: widgets holding a result (a verdict, a table) that no
    longer matches the controls once an error appears; their ``value`` is cleared."""
    if exc is None:
        box.value = ""
        return
    text = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
    box.value = f'<span style="color:#b00020">&#9888; {html.escape(text)}</span>'
    for widget in stale:
        widget.value = b"" if isinstance(widget, W.Image) else ""


IMAGE_DPI = 192  # twice the 96 CSS px per inch a figure is shown at: sharp on a phone and on a high-density screen


def figure_png(fig, *, dpi: int = IMAGE_DPI) -> bytes:
    """Render ``fig`` to PNG bytes at ``dpi`` and close it."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    plt.close(fig)
    return buffer.getvalue()


def img_tag(png: bytes, alt: str, *, width_in: float = 6.0) -> str:
    """An ``<img>`` of PNG bytes with its text alternative, shown at most ``width_in`` inches (96 CSS px each)
    wide and never wider than its column."""
    data = base64.b64encode(png).decode("ascii")
    return (f'<img class="aihw-figure" src="data:image/png;base64,{data}" alt="{html.escape(alt, quote=True)}" '
            f'style="width:100%;max-width:{round(96 * width_in)}px;height:auto">')


def figure_img(fig, *, alt: str = "", dpi: int = IMAGE_DPI) -> str:
    """``fig`` as an ``<img>`` (PNG at ``dpi``) with alt text: ``alt`` followed by what the figure shows
    (:func:`aihw.plots.style.alt_text`: titles, axes, legend). Closes the figure."""
    description = alt_text(fig, alt)
    width_in = float(fig.get_size_inches()[0])
    return img_tag(figure_png(fig, dpi=dpi), description, width_in=width_in)


def image_box() -> W.HTML:
    """The widget a figure is shown in: an HTML ``<img>`` with alt text (:func:`figure_img`); ipywidgets'
    Image has no alt attribute."""
    return W.HTML(value="", layout=W.Layout(width="100%"))


def show_figure(out: W.Output, fig, *, alt: str = "") -> None:
    """Replace ``out``'s content with ``fig`` (a 2x PNG with alt text) and close the figure."""
    from IPython.display import HTML, display

    tag = figure_img(fig, alt=alt)
    out.clear_output(wait=True)
    with out:
        display(HTML(tag))


def run_button(label: str) -> W.Button:
    """The primary button that starts an expensive run."""
    # width "auto" (at least 14em): ipywidgets' fixed 148 px clipped labels such as "Prune and measure"
    return W.Button(description=label, button_style="primary", icon="play",
                    layout=W.Layout(width="auto", min_width="14em"))


def guarded_run(button: W.Button, status: W.HTML, err: W.HTML, busy: str, work) -> None:
    """Run ``work()`` with ``button`` disabled and ``status`` saying ``busy``; ``work`` returns the new status.

    Every exception (bad input, a failed or hung rank, a bug) is shown inline in ``err``: a widget never raises
    into the notebook. An interrupt (KeyboardInterrupt) still stops the kernel's work as usual.
    """
    button.disabled, status.value = True, busy
    try:
        status.value = work() or ""
        show_error(err, None)
    except Exception as exc:
        show_error(err, exc)
        status.value = ""
    finally:
        button.disabled = False
