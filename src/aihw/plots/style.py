"""The one figure style of the book, owned by the package: every plot function in :mod:`aihw.plots` draws with it,
and every chapter applies it with one call, :func:`setup_book`.

Sizes are set from the book's column so text stays legible where it is read:

* a figure is :data:`COLUMN_WIDTH_IN` inches wide (the column); the browser scales it to the column
  (about 730 px on a desktop, about 358 px on a 390-px phone);
* no text is smaller than :data:`MIN_FONT_PT` points; drawn at the column width that is
  ``MIN_FONT_PT * 358 / (72 * COLUMN_WIDTH_IN)`` ≈ 7.6 px on a phone and 12 px at natural size on a desktop
  (:func:`rendered_font_px` computes it; tests/test_browser_book.py measures it on the built pages);
* figures are SVG with real ``<text>`` (sharp at any zoom, searchable, and measurable by the browser tests);
* legends sit outside the data (:func:`legend_outside`); bar charts start at zero.

Usage: ``with book_style(): ...`` around drawing code, ``@styled`` on a plot function, or :func:`setup_book`
once at the top of a notebook (also switches the inline backend to SVG).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.rcsetup import cycler

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.typing import RcKeyType

COLUMN_WIDTH_IN = 6.0  # the book's column, in inches of figure (100% of the text column)
ROW_HEIGHT_IN = 3.4  # one row of panels
BASE_FONT_PT = 11.0
MIN_FONT_PT = 9.0  # "small" = 11 * 0.833 ≈ 9.2 pt is the smallest text a figure may use
PHONE_COLUMN_PX = 358.0  # text column of a 390-px-wide phone (sphinx-book-theme's padding taken off)
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")  # Okabe-Ito

RC: dict[RcKeyType, Any] = {
    "figure.figsize": (COLUMN_WIDTH_IN, ROW_HEIGHT_IN + 0.4),
    "figure.dpi": 100,
    "savefig.dpi": 200,  # raster outputs (widgets' PNGs) at 2x
    "savefig.bbox": None,
    "svg.fonttype": "none",  # text stays text: sharp, searchable, and its size can be checked
    "font.size": BASE_FONT_PT,
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica", "sans-serif"],
    "axes.titlesize": BASE_FONT_PT,
    "axes.formatter.use_mathtext": False,  # offset text as 1e-5, not a superscript drawn at 70% size
    "axes.labelsize": BASE_FONT_PT,
    "xtick.labelsize": "small",
    "ytick.labelsize": "small",
    "legend.fontsize": "small",
    "legend.title_fontsize": "small",
    "legend.frameon": False,
    "figure.titlesize": BASE_FONT_PT + 1,
    "axes.prop_cycle": cycler(color=list(PALETTE)),
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": False,
    "grid.alpha": 0.3,
    "lines.linewidth": 1.8,
    "lines.markersize": 6,
    "image.cmap": "viridis",
}

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def book_style() -> Iterator[None]:
    """The book's rcParams for the duration of the block (fonts and sizes are read when artists are made)."""
    with mpl.rc_context(RC):
        yield


def legible(fig):
    """Raise any text set below MIN_FONT_PT (an explicit ``fontsize=7`` in a plot, tick labels included) to
    MIN_FONT_PT, so nothing in a figure is smaller than the book's minimum. Returns ``fig``."""
    import matplotlib.text

    for ax in getattr(fig, "axes", ()):
        for axis, name in ((ax.xaxis, "x"), (ax.yaxis, "y")):
            for which in ("major", "minor"):
                ticks = axis.get_major_ticks() if which == "major" else axis.get_minor_ticks()
                size = ticks[0].label1.get_fontsize() if ticks else MIN_FONT_PT
                if size < MIN_FONT_PT:
                    ax.tick_params(axis=name, which=which, labelsize=MIN_FONT_PT)
    for text in fig.findobj(matplotlib.text.Text):
        if text.get_text() and text.get_fontsize() < MIN_FONT_PT:
            text.set_fontsize(MIN_FONT_PT)
    return fig


def plain_log_labels(fig):
    """Label log axes ``0.01, 1, 100, 1e+04`` instead of ``10^{-2}``: a superscript is drawn at 70% of the tick
    size, below the minimum text size. Axes with their own formatter are left alone. Returns ``fig``."""
    from matplotlib.ticker import FuncFormatter, LogFormatterSciNotation, NullFormatter

    for ax in getattr(fig, "axes", ()):
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() == "log" and type(axis.get_major_formatter()) is LogFormatterSciNotation:
                axis.set_major_formatter(FuncFormatter(_plain))
            if axis.get_scale() == "log" and type(axis.get_minor_formatter()) is LogFormatterSciNotation:
                axis.set_minor_formatter(NullFormatter())  # minor labels (2x10^1) are superscripts too
    return fig


def _plain(value: float, _pos=None) -> str:
    return f"{value:g}"


def binary_size(value: float) -> str:
    """``16 KiB``, ``4 MiB``, ``1 GiB`` for a byte count (powers of two print without decimals)."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} B"


def bytes_axis(axis, *, max_ticks: int = 6) -> None:
    """Label a log-2 byte axis ``16 KiB, 256 KiB, 4 MiB``: ticks at powers of two, spaced so that at most
    ``max_ticks`` labels share the axis (labels like ``1.04858e+06`` would run together)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    lo, hi = sorted(axis.get_view_interval())
    lo, hi = max(lo, 1.0), max(hi, 2.0)
    first, last = int(np.ceil(np.log2(lo))), int(np.floor(np.log2(hi)))
    step = max(1, int(np.ceil((last - first + 1) / max_ticks)))
    step = next(s for s in (1, 2, 4, 8, 16) if s >= step) if step <= 16 else step
    start = first + (-first) % step
    axis.set_major_locator(FixedLocator([2.0**k for k in range(start, last + 1, step)]))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: binary_size(v)))
    axis.set_minor_locator(NullLocator())


_LABEL_OFFSETS = ((5, 3, "left", "bottom"), (5, -3, "left", "top"), (-5, 3, "right", "bottom"),
                  (-5, -3, "right", "top"), (0, 7, "center", "bottom"), (0, -7, "center", "top"))


def place_labels(ax, xs, ys, labels, *, fontsize="small", offsets=_LABEL_OFFSETS, **kwargs) -> list:
    """Annotate points ``(xs[i], ys[i])`` with ``labels[i]``, each put at the first of six spots around its
    point (by default right-above, right-below, left-above, left-below, above, below; or ``offsets``: (dx, dy
    in points, ha, va) tried in order) where it overlaps no label already
    placed, no other text of the axes and stays inside the axes; the least-overlapping spot if none is free.

    The figure is laid out first (constrained layout moves the axes), so the positions hold when it is drawn.
    Returns the annotations."""
    fig = figure_of(ax)
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    area = ax.get_window_extent(renderer)
    taken = [t.get_window_extent(renderer) for t in ax.texts if t.get_visible() and t.get_text()]
    from matplotlib.transforms import Bbox

    marker = 5.0 * fig.dpi / 72  # the points themselves (a marker about 10 pt across) are obstacles too
    for px, py in ax.transData.transform(np.column_stack([np.asarray(xs, float), np.asarray(ys, float)])):
        taken.append(Bbox([[px - marker, py - marker], [px + marker, py + marker]]))
    placed = []

    def cost(box) -> float:
        inside = max(0.0, area.x0 - box.x0) + max(0.0, box.x1 - area.x1) + max(0.0, area.y0 - box.y0) + max(
            0.0, box.y1 - area.y1)
        hits = sum(max(0.0, min(box.x1, o.x1) - max(box.x0, o.x0)) * max(0.0, min(box.y1, o.y1) - max(box.y0, o.y0))
                   for o in taken)
        return hits + 50.0 * inside

    for x, y, label in zip(xs, ys, labels, strict=True):
        best = None
        for dx, dy, ha, va in offsets:
            note = ax.annotate(label, (x, y), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va,
                               fontsize=fontsize, **kwargs)
            note.set_in_layout(False)  # placed for this layout: it must not make constrained layout move the axes
            box = note.get_window_extent(renderer)
            c = cost(box)
            if best is None or c < best[0]:
                if best is not None:
                    best[1].remove()
                best = (c, note, box)
            else:
                note.remove()
            if c == 0:
                break
        assert best is not None
        taken.append(best[2])
        placed.append(best[1])
    return placed


def alt_text(fig, lead: str = "") -> str:
    """A text alternative for ``fig`` built from what it shows: ``lead`` (what the figure is), then each panel's
    title, axis labels (with "log scale" where an axis is logarithmic) and legend entries. For images that a
    widget redraws, so the description follows the figure."""
    parts = [lead.strip().rstrip(".")] if lead.strip() else []
    if getattr(fig, "_suptitle", None) is not None and fig._suptitle.get_text():
        parts.append(fig._suptitle.get_text().replace("\n", " "))
    for ax in getattr(fig, "axes", ()):
        if not ax.get_visible():
            continue
        bits = []
        title = ax.get_title().replace("\n", " ")
        if title:
            bits.append(title)
        if ax.axison:
            for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
                label = axis.get_label_text().replace("\n", " ")
                if label:
                    bits.append(f"{name}: {label}" + (" (log scale)" if axis.get_scale() == "log" else ""))
        legend = ax.get_legend()
        if legend is not None:
            entries = [t.get_text() for t in legend.get_texts() if t.get_text()]
            if entries:
                bits.append("legend: " + "; ".join(entries))
        if bits:
            parts.append(", ".join(bits))
    return ". ".join(parts) + "." if parts else "Figure."


def fit_column(fig):
    """Narrow a figure drawn wider than the book's column to the column width (height kept): a browser shows a
    figure at most a column wide, so a wider one would have its text shrunk below the minimum. Returns ``fig``."""
    width, height = fig.get_size_inches()
    if width > COLUMN_WIDTH_IN * 1.001:
        fig.set_size_inches(COLUMN_WIDTH_IN, height)
    return fig


_DEPTH = 0  # how many styled plot functions are running (one inside another: only the outermost settles)


def settle(fig):
    """Lay ``fig`` out once without rendering, so the first real draw (the SVG the page shows) starts from settled
    tick labels: constrained layout measured before the ticks exist can place an axis label off the canvas.
    Returns ``fig``."""
    fig.draw_without_rendering()
    return fig


def styled(func: F) -> F:
    """Decorator: run a plot function under :func:`book_style` (and label its log axes in plain numbers)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        global _DEPTH
        with book_style():
            _DEPTH += 1
            try:
                result = func(*args, **kwargs)
            finally:
                _DEPTH -= 1
            if not isinstance(result, mpl.figure.Figure):
                return result
            fig = legible(plain_log_labels(tidy(fit_column(result))))
            if _DEPTH == 0:
                settle(fig)
            return fig

    return wrapper  # type: ignore[return-value]


def figure_of(ax: Axes) -> Figure:
    """The top-level figure an axes is drawn on (the root figure when the axes sits on a subfigure)."""
    fig = ax.figure
    return fig if isinstance(fig, Figure) else fig.figure


def setup_book(*, formats: tuple[str, ...] = ("svg",), check_to: str | None = None,
               page: str | None = None) -> None:
    """Apply the style for the whole session (one call at the top of a chapter or lab) and, inside IPython,
    make the inline backend emit ``formats`` (SVG by default). With ``check_to`` (a file path),
    :func:`aihw.plots.check.check_figure` runs on every figure the notebook displays and appends its problems
    to that file, one line each, named by ``page``."""
    mpl.rcParams.update(RC)
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is always there in a notebook
        return
    if get_ipython() is None:
        return
    from matplotlib_inline.backend_inline import set_matplotlib_formats

    # The figure as drawn, at the column width: 'tight' bounding boxes grow figures with outside legends past
    # the column, and the browser then shrinks their text (constrained layout already makes room inside).
    set_matplotlib_formats(*formats, bbox_inches=None)
    _wrap_figure_formatters(get_ipython(), formats, check_to=check_to, page=page or "notebook")


def svg_with_title(svg: str, title: str) -> str:
    """``svg`` with ``title`` as its first child ``<title>`` (a text alternative the book's pages use as the
    image's alt text, and screen readers read for an inline SVG)."""
    import html
    import re

    found = re.search(r"<svg\b[^>]*>", svg)
    if found is None or "<title>" in svg[found.end():found.end() + 200]:
        return svg
    return svg[:found.end()] + f"<title>{html.escape(title, quote=False)}</title>" + svg[found.end():]


def _wrap_figure_formatters(ip, formats: tuple[str, ...], *, check_to: str | None, page: str) -> None:
    """Every figure the notebook displays as SVG carries a ``<title>`` describing it (:func:`alt_text`: the
    book copies it into the image's alt text). With ``check_to``, :func:`aihw.plots.check.check_figure` also
    runs on every displayed figure and appends its problems to that file, so a figure composed in a page (not
    only the package's plot functions) is checked as the reader sees it."""
    mime = {"svg": "image/svg+xml", "png": "image/png", "retina": "image/png", "pdf": "application/pdf"}
    for fmt in formats:
        formatter = ip.display_formatter.formatters.get(mime.get(fmt, ""))
        if formatter is None:
            continue
        try:
            draw = formatter.lookup_by_type(Figure)
        except KeyError:
            continue
        draw = getattr(draw, "_aihw_unwrapped", draw)

        def wrapped(fig, _draw=draw, _svg=fmt == "svg"):
            if check_to:
                from aihw.plots.check import check_figure

                problems = check_figure(fig, name=page)
                if problems:
                    with open(check_to, "a", encoding="utf-8") as out:
                        out.write("\n".join(problems) + "\n")
            data = _draw(fig)
            return svg_with_title(data, alt_text(fig)) if _svg and isinstance(data, str) else data

        wrapped._aihw_unwrapped = draw  # type: ignore[attr-defined]
        formatter.for_type(Figure, wrapped)


def subplots(nrows: int = 1, ncols: int = 1, *, row_height: float = ROW_HEIGHT_IN, width: float = COLUMN_WIDTH_IN,
             **kwargs):
    """``plt.subplots`` at the column width, ``row_height`` inches per row, constrained layout."""
    kwargs.setdefault("layout", "constrained")
    with book_style():
        return plt.subplots(nrows, ncols, figsize=(width, row_height * nrows + 0.3), **kwargs)


def panels(n: int, *, row_height: float = ROW_HEIGHT_IN, **kwargs):
    """``n`` panels stacked in one column at the column width (legible on a phone); returns (fig, axes)."""
    fig, axes = subplots(n, 1, row_height=row_height, **kwargs)
    return fig, (list(axes) if n > 1 else [axes])


def tidy(fig):
    """Lay ``fig`` out without overlaps (constrained layout, which also makes room for legends outside the axes)
    unless the caller chose a layout already; returns ``fig``."""
    if fig.get_layout_engine() is None:
        fig.set_layout_engine("constrained")
    return fig


def legend_outside(ax, *, where: str = "below", ncols: int | None = None, **kwargs):
    """A legend off the data: a row below the axes (``where="below"``) or a column on the right."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    if where == "right":
        return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **kwargs)
    longest = max(len(label) for label in labels)
    ncols = ncols or (1 if longest > 24 else min(len(handles), 2 if longest > 12 else 3))
    return ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=ncols, borderaxespad=0.0, **kwargs)


def rendered_font_px(font_pt: float, figure_width_in: float = COLUMN_WIDTH_IN,
                     column_px: float = PHONE_COLUMN_PX) -> float:
    """Height in CSS pixels of ``font_pt`` text in a figure ``figure_width_in`` wide, scaled to ``column_px``."""
    return font_pt * column_px / (72.0 * figure_width_in)


def small_text(fig) -> list[tuple[str, float]]:
    """Visible texts of ``fig`` smaller than :data:`MIN_FONT_PT` (text, size in pt): empty for a styled figure."""
    found = []
    for text in fig.findobj(mpl.text.Text):
        if text.get_visible() and text.get_text().strip() and text.get_fontsize() < MIN_FONT_PT - 1e-6:
            found.append((text.get_text(), float(text.get_fontsize())))
    return found


__all__ = ["COLUMN_WIDTH_IN", "ROW_HEIGHT_IN", "MIN_FONT_PT", "BASE_FONT_PT", "PALETTE", "RC", "book_style", "figure_of",
           "styled", "plain_log_labels", "bytes_axis", "binary_size", "place_labels", "alt_text", "svg_with_title", "setup_book", "subplots", "panels", "tidy", "legend_outside", "rendered_font_px", "small_text"]
