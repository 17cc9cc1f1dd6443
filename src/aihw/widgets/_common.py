"""Pieces every widget uses: an inline error line and showing a matplotlib figure in an Output."""

from __future__ import annotations

import html
import io

import ipywidgets as W
import matplotlib.pyplot as plt


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


def show_figure(out: W.Output, fig) -> None:
    """Replace ``out``'s content with ``fig`` and close the figure (no duplicate display)."""
    out.clear_output(wait=True)
    with out:
        from IPython.display import display

        display(fig)
    plt.close(fig)


def figure_png(fig, *, dpi: int = 150) -> bytes:
    """Render ``fig`` to PNG bytes (for a ``W.Image``) and close it: cheaper than displaying in an Output."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    plt.close(fig)
    return buffer.getvalue()


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
