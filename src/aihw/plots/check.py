"""A layout check for every figure the book and the labs draw: text that collides, leaves the canvas, overflows
the box it labels, or is too small to read on a phone.

:func:`check_figure` draws the figure once and reads each visible text element's rendered extent
(``Text.get_window_extent(renderer)``, in figure pixels). It reports, as one line each:

* **overlap**: two text elements whose boxes intersect by more than :data:`OVERLAP_PX` in both directions
  (tick labels running together, a note on top of a legend, two scatter labels on each other);
* **off canvas**: a text element that reaches more than :data:`OFF_CANVAS_PX` past the figure's edge (a
  clipped title, a legend outside its figure, a cut-off axis label);
* **overflow**: a text element whose centre lies in a drawn box (a rectangle patch of an axes) but which is
  wider or taller than that box (a label spilling out of its block in a diagram);
* **too small**: text that renders below ``min_px_at_phone`` CSS pixels on a phone.

The phone assumption, stated once: the page is 390 CSS px wide, and the book's text column on it is
:data:`~aihw.plots.style.PHONE_COLUMN_PX` = 358 CSS px (sphinx-book-theme's padding taken off). A figure is shown
at its natural size (1 pt = 4/3 CSS px) or, when that is wider than the column, scaled down to the column. The
smallest text a book figure may use is :data:`~aihw.plots.style.MIN_FONT_PT` = 9 pt in a 6-inch figure, which
gives 7.46 CSS px on that phone; :data:`MIN_PX_AT_PHONE` = 7.4 px is the stated minimum, and every figure
can be tapped to open at full size (``_static/figure_zoom.js``), where the same text is 12 CSS px.

``check_figure`` returns the list of problems (empty when the figure passes); :func:`assert_figure_ok` raises
:class:`FigureLayoutError` with all of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import matplotlib.axis as maxis
import matplotlib.patches as mpatches
import matplotlib.text as mtext
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

from aihw.plots.style import PHONE_COLUMN_PX

MIN_PX_AT_PHONE = 7.4  # CSS px on a 390-px phone (358-px column): 9 pt in a 6-inch figure
OVERLAP_PX = 1.0  # at 100 dpi: boxes may touch, not intersect
OFF_CANVAS_PX = 1.0


class FigureLayoutError(AssertionError):
    """A figure failed :func:`check_figure`; the message lists every problem."""


@dataclass(frozen=True)
class _Item:
    text: mtext.Text
    box: Bbox

    @property
    def label(self) -> str:
        return repr(self.text.get_text().replace("\n", " ")[:40])


def phone_scale(fig: Figure, column_px: float = PHONE_COLUMN_PX) -> float:
    """CSS pixels per figure point when ``fig`` is shown in a column ``column_px`` wide (natural size or less)."""
    natural_px = fig.get_size_inches()[0] * 96.0
    return 96.0 / 72.0 * min(1.0, column_px / natural_px)


def rendered_px(text: mtext.Text, fig: Figure, column_px: float = PHONE_COLUMN_PX) -> float:
    """The height of ``text``'s font in CSS px when ``fig`` is shown ``column_px`` wide."""
    return float(text.get_fontsize()) * phone_scale(fig, column_px)


def _texts(artist) -> list[mtext.Text]:
    """Visible, non-empty texts below ``artist``, skipping everything under an invisible artist. An axis
    contributes the tick labels it actually draws (the ticks inside its view limits), not every tick it holds."""
    found: list[mtext.Text] = []
    if not artist.get_visible():
        return found
    if isinstance(artist, mtext.Text):
        if artist.get_text().strip():
            found.append(artist)
    if isinstance(artist, maxis.Axis):
        if artist.axes is not None and not artist.axes.axison:  # ax.axis("off"): no axis is drawn
            return found
        found.extend(t for t in (artist.label, artist.offsetText) if t.get_visible() and t.get_text().strip())
        for tick in artist._update_ticks():  # type: ignore[attr-defined]  # the ticks drawn (private but long-stable matplotlib API)
            if tick.get_visible():
                found.extend(t for t in (tick.label1, tick.label2) if t.get_visible() and t.get_text().strip())
        return found
    for child in artist.get_children():
        found.extend(_texts(child))
    return found


def _clipped_away(text: mtext.Text, box: Bbox) -> bool:
    """A text with clipping on whose box lies wholly outside its clip box is not drawn at all."""
    if not text.get_clip_on():
        return False
    clip = text.get_clip_box()
    return clip is not None and not box.overlaps(clip)


def _intersection(a: Bbox, b: Bbox) -> tuple[float, float]:
    return min(a.x1, b.x1) - max(a.x0, b.x0), min(a.y1, b.y1) - max(a.y0, b.y0)


def _boxes(fig: Figure, renderer) -> list[tuple[Bbox, mpatches.Patch]]:
    """Rectangle and fancy-box patches drawn on the axes (the blocks of a diagram, bars)."""
    boxes: list[tuple[Bbox, mpatches.Patch]] = []
    for ax in fig.axes:
        for patch in ax.patches:
            if isinstance(patch, (mpatches.Rectangle, mpatches.FancyBboxPatch)) and patch.get_visible():
                box = patch.get_window_extent(renderer)
                if box.width > 2 and box.height > 2:
                    boxes.append((box, patch))
    return boxes


def check_figure(fig: Figure, *, min_px_at_phone: float = MIN_PX_AT_PHONE, column_px: float = PHONE_COLUMN_PX,
                 name: str = "") -> list[str]:
    """Every layout problem of ``fig`` (see the module docstring), one line each; empty when it passes."""
    if not hasattr(fig.canvas, "get_renderer"):  # a bare Figure(): give it an Agg canvas to measure with
        FigureCanvasAgg(fig)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    canvas = fig.bbox
    prefix = f"{name}: " if name else ""
    problems: list[str] = []
    items: list[_Item] = []
    texts = list({id(t): t for t in _texts(fig)}.values())
    for text in texts:
        box = text.get_window_extent(renderer)
        if box.width <= 0 or box.height <= 0 or _clipped_away(text, box):
            continue
        items.append(_Item(text, box))
    for item in items:
        px = rendered_px(item.text, fig, column_px)
        if px < min_px_at_phone - 1e-6:
            problems.append(f"{prefix}too small: {item.label} renders at {px:.1f} CSS px on a phone "
                            f"(minimum {min_px_at_phone:g})")
        e = item.box
        out = max(canvas.x0 - e.x0, canvas.y0 - e.y0, e.x1 - canvas.x1, e.y1 - canvas.y1)
        if out > OFF_CANVAS_PX:
            problems.append(f"{prefix}off canvas: {item.label} reaches {out:.0f} px past the figure's edge")
    for i, first in enumerate(items):
        for second in items[i + 1:]:
            w, h = _intersection(first.box, second.box)
            if w > OVERLAP_PX and h > OVERLAP_PX:
                problems.append(f"{prefix}overlap: {first.label} and {second.label} ({w:.0f} x {h:.0f} px)")
    boxes = _boxes(fig, renderer)
    for item in items:
        if item.text.axes is None:
            continue
        cx, cy = (item.box.x0 + item.box.x1) / 2, (item.box.y0 + item.box.y1) / 2
        holders = [box for box, patch in boxes if box.contains(cx, cy) and patch.axes is item.text.axes]
        if not holders:
            continue
        box = min(holders, key=lambda bb: bb.width * bb.height)
        w, h = _intersection(item.box, box)
        if item.box.width - w > OFF_CANVAS_PX or item.box.height - h > OFF_CANVAS_PX:
            problems.append(f"{prefix}overflow: {item.label} spills out of the box it sits in")
    return problems


def assert_figure_ok(fig: Figure, **kwargs) -> Figure:
    """Raise :class:`FigureLayoutError` listing every problem :func:`check_figure` finds; return ``fig``."""
    problems = check_figure(fig, **kwargs)
    if problems:
        raise FigureLayoutError("\n".join(problems))
    return fig


def check_all(figures: Iterable[tuple[str, Figure]], **kwargs) -> list[str]:
    """The problems of several named figures, together."""
    return [p for name, fig in figures for p in check_figure(fig, name=name, **kwargs)]


__all__ = ["MIN_PX_AT_PHONE", "FigureLayoutError", "check_figure", "assert_figure_ok", "check_all", "phone_scale",
           "rendered_px"]
