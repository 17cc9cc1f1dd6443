"""_ext/page_assets.wrap_tables: the caption leaves the scrolling box and sits above it; long tables scroll
in a box of their own; the figure-zoom script fetches nothing."""

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _page_assets():
    spec = importlib.util.spec_from_file_location("page_assets", ROOT / "_ext" / "page_assets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _table(rows: int, caption: bool = True) -> str:
    cap = ('<caption><span class="caption-number">Table 14.1 </span><span class="caption-text">Runs.</span>'
           '<a class="headerlink" href="#tbl-x">#</a></caption>') if caption else ""
    body = "".join(f"<tr><td>{i}</td></tr>" for i in range(rows))
    return (f'<p>before</p><div class="pst-scrollable-table-container">\n<table class="table" id="tbl-x">{cap}'
            f"<thead><tr><th>n</th></tr></thead><tbody>{body}</tbody></table>\n</div><p>after</p>")


def test_caption_moves_above_the_scrolling_box():
    pa = _page_assets()
    html = pa.wrap_tables(_table(3))
    assert "<caption>" not in html
    caption = html.index('class="aihw-table-caption" id="tbl-x-caption"')
    scroll = html.index('class="pst-scrollable-table-container aihw-table-scroll"')
    assert caption < scroll < html.index("<table")
    assert 'aria-labelledby="tbl-x-caption"' in html and "Table 14.1" in html and "aihw-table-long" not in html
    assert html.startswith("<p>before</p>") and html.endswith("<p>after</p>")


def test_long_tables_scroll_in_their_own_box_and_uncaptioned_tables_are_kept():
    pa = _page_assets()
    assert "aihw-table-long" in pa.wrap_tables(_table(pa.LONG_TABLE_ROWS + 1))
    plain = pa.wrap_tables(_table(2, caption=False))
    assert "<table" in plain and "aihw-table-caption" not in plain and 'aria-label="table"' in plain
    assert pa.wrap_tables("<p>no table</p>") == "<p>no table</p>"


def test_figure_zoom_script_is_offline():
    js = (ROOT / "_static" / "figure_zoom.js").read_text()
    assert not re.search(r"https?://", js) and "fetch(" not in js and "XMLHttpRequest" not in js
    css = (ROOT / "_static" / "aihw.css").read_text()
    assert ".aihw-zoom" in css and ".aihw-table-caption" in css


def test_alt_text_comes_from_the_svg_title():
    from aihw.plots.style import svg_with_title

    pa = _page_assets()
    svg = '<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="10pt">\n <metadata/></svg>'
    titled = svg_with_title(svg, "Loss <against> compute & more")
    assert pa.alt_from_svg(titled) == "Loss <against> compute & more"
    assert svg_with_title(titled, "again") == titled and pa.alt_from_svg(svg) is None
