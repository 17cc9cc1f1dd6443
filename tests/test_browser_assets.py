"""The book's own figure and table assets in a real Chromium at phone width, on a small page built from the same
markup the book has (no book build needed): a figure opens enlarged on a tap and closes on Escape, it has a
full-size link; a wide, long table scrolls in its own box while its caption stays whole and visible above it;
the page never scrolls sideways and nothing is fetched from outside."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from browser_support import block_external, chromium_browser

ROOT = Path(__file__).resolve().parents[1]
SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="432pt" height="216pt" viewBox="0 0 432 216">'
       '<rect width="432" height="216" fill="#eee"/><text x="10" y="100" font-size="9">9 pt text</text></svg>')


def _page(tmp_path: Path) -> Path:
    spec = importlib.util.spec_from_file_location("page_assets", ROOT / "_ext" / "page_assets.py")
    assets = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(assets)
    (tmp_path / "fig.svg").write_text(SVG)
    head = "".join(f"<th>column {i} with a long heading</th>" for i in range(8))
    body = "".join("<tr>" + "".join(f"<td>value {r}.{i}</td>" for i in range(8)) + "</tr>" for r in range(40))
    table = ('<div class="pst-scrollable-table-container">\n<table class="table" id="tbl-long"><caption>'
             '<span class="caption-number">Table 14.1 </span><span class="caption-text">Published training runs '
             'against the planner, with a caption long enough to wrap over several lines on a phone.</span>'
             f'</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>\n</div>')
    html = ('<!doctype html><html><head><meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<style>{(ROOT / "_static" / "aihw.css").read_text()}</style></head><body>'
            '<main><article class="bd-article" style="padding:0 16px">'
            '<figure><img src="fig.svg" alt="A test figure"><figcaption>Figure 1.1 A figure.</figcaption></figure>'
            f'{assets.wrap_tables(table)}<p>after</p></article></main>'
            f'<script>{(ROOT / "_static" / "figure_zoom.js").read_text()}</script></body></html>')
    page = tmp_path / "page.html"
    page.write_text(html)
    return page


@pytest.mark.browser
def test_figures_enlarge_and_tables_keep_their_captions_on_a_phone(tmp_path):
    page_file = _page(tmp_path)
    blocked: list[str] = []
    with chromium_browser() as browser:
        context = browser.new_context(viewport={"width": 390, "height": 844})
        block_external(context, blocked)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(page_file.as_uri())
        page.wait_for_function("document.querySelector('img.aihw-zoomable') !== null")
        shown = page.evaluate("document.querySelector('figure img').getBoundingClientRect().width")
        assert page.locator("a.aihw-fullsize").count() == 1
        page.click("figure img")
        page.wait_for_selector(".aihw-zoom:not([hidden]) img.aihw-zoom-image")
        enlarged = page.evaluate("document.querySelector('.aihw-zoom-image').getBoundingClientRect().width")
        assert enlarged >= 1.9 * shown, (shown, enlarged)
        assert page.evaluate("document.activeElement.className") == "aihw-zoom-close"
        page.keyboard.press("Escape")
        assert page.evaluate("document.querySelector('.aihw-zoom').hidden")
        report = page.evaluate("""() => {
          const cap = document.querySelector('.aihw-table-caption').getBoundingClientRect();
          const box = document.querySelector('.aihw-table-scroll');
          const r = box.getBoundingClientRect();
          return {capLeft: cap.left, capRight: cap.right, boxRight: r.right, boxHeight: r.height,
                  scrollW: box.scrollWidth, clientW: box.clientWidth, scrollH: box.scrollHeight,
                  pageW: document.documentElement.scrollWidth, viewW: window.innerWidth};
        }""")
        assert report["capLeft"] >= 0 and report["capRight"] <= report["viewW"], report
        assert report["scrollW"] > report["clientW"] and report["scrollH"] > report["boxHeight"], report
        assert report["boxHeight"] <= 0.75 * 844, report
        assert report["pageW"] <= report["viewW"], report
        assert not errors and not blocked, (errors, blocked)
