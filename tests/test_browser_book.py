"""Open every page of the built book (``_build/html``) in headless Chromium and check what a reader sees.

The book is served from a local HTTP server on a free port; every request that would leave the machine is
aborted (the book must work offline), so a page that depends on a CDN shows up here.
"""

from __future__ import annotations

import functools
import http.server
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from browser_support import block_external, book_dir, chromium_browser, is_local, require_browser

pytestmark = pytest.mark.browser

NOT_PAGES = {"genindex.html", "search.html"}
NOT_PAGE_DIRS = {"_static", "_sources", "_images"}
REDIRECT = 'http-equiv="refresh"'
MIN_FIGURES = {"chapters/gpus_vs_tpus.html": 4, "labs/gpus_vs_tpus_lab.html": 3}

# Runs in the page once it has loaded: make lazy images load, wait for them and for MathJax, then report.
INSPECT_JS = """async () => {
  const imgs = [...document.images];
  imgs.forEach(i => { i.loading = "eager"; });
  const settle = i => i.complete ? null : new Promise(r => { i.addEventListener("load", r);
                                                           i.addEventListener("error", r); });
  await Promise.race([Promise.all(imgs.map(settle)), new Promise(r => setTimeout(r, 5000))]);
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const article = document.querySelector("article.bd-article") || document.body;
  return {
    broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute("src")),
    figures: article.querySelectorAll("img").length,
    math: article.querySelectorAll(".math").length,
    mathjax: document.querySelectorAll("mjx-container").length,
    traceback_text: document.body.innerText.includes("Traceback"),
    traceback_nodes: document.querySelectorAll(".output_traceback, .traceback").length,
    execution: (document.querySelector('meta[name="aihw-execution"]') || {}).content || null,
    error_outputs: document.querySelectorAll(".output.error, .output.traceback").length,
  };
}"""


@dataclass
class PageReport:
    errors: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    info: dict = field(default_factory=dict)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep pytest output clean
        pass


def book_pages(root: Path) -> list[str]:
    """Every built HTML page of the book, as paths relative to ``root``."""
    pages = []
    for path in root.rglob("*.html"):
        rel = path.relative_to(root)
        if rel.name in NOT_PAGES or NOT_PAGE_DIRS & set(rel.parts) or any(p.startswith(".") for p in rel.parts):
            continue
        pages.append(rel.as_posix())
    return sorted(pages)


def _visit(context, url: str, *, redirect: bool) -> PageReport:
    """Open ``url`` (following a redirect page to its target) and inspect it."""
    report = PageReport()
    page = context.new_page()

    def on_console(msg) -> None:
        if msg.type == "error" and is_local(msg.location.get("url", "") or url):
            report.errors.append(f"console: {msg.text}")

    page.on("console", on_console)
    page.on("pageerror", lambda exc: report.errors.append(f"page error: {exc}"))
    page.on("response", lambda r: r.status >= 400 and report.errors.append(f"HTTP {r.status}: {r.url}"))
    try:
        page.goto(url, wait_until="load")
        if redirect:
            page.wait_for_url(lambda now: now != url, timeout=10_000)
            page.wait_for_load_state("load")
        report.info = page.evaluate(INSPECT_JS)
    finally:
        page.close()
    return report


@pytest.fixture(scope="module")
def book() -> dict[str, PageReport]:
    """Visit every page once; the tests below assert on the reports."""
    root = book_dir()
    require_browser()
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        with chromium_browser() as browser:
            context = browser.new_context()
            reports = {}
            for rel in book_pages(root):
                blocked: list[str] = []
                block_external(context, blocked)
                redirect = REDIRECT in (root / rel).read_text(encoding="utf-8", errors="replace").lower()
                reports[rel] = _visit(context, base + rel, redirect=redirect)
                reports[rel].blocked = blocked
                context.unroute("**/*")
            context.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    return reports


def _problems(book: dict[str, PageReport], check) -> str:
    lines = [f"{rel}: {p}" for rel, rep in book.items() for p in check(rep)]
    return "\n".join(lines)


def test_every_page_is_visited(book):
    assert set(MIN_FIGURES) <= set(book), sorted(book)
    assert all(rep.info for rep in book.values())


def test_no_console_errors(book):
    problems = _problems(book, lambda rep: rep.errors)
    assert not problems, "console errors, page errors or failed local requests:\n" + problems


def test_every_image_loads(book):
    problems = _problems(book, lambda rep: [f"broken image {src}" for src in rep.info["broken"]])
    assert not problems, problems


def test_no_tracebacks(book):
    def check(rep):
        found = []
        if rep.info["traceback_text"]:
            found.append('the text "Traceback"')
        if rep.info["traceback_nodes"]:
            found.append(f"{rep.info['traceback_nodes']} traceback output(s)")
        return found

    problems = _problems(book, check)
    assert not problems, "executed cells failed:\n" + problems


def test_every_executed_page_executed_without_error(book):
    """A page whose notebook failed to run (allow_errors is off) is marked "failed" by _ext/page_assets.py,
    and carries error outputs when it ran partly; every chapter and lab must have run."""
    def check(rep):
        found = []
        if rep.info["execution"] == "failed":
            found.append("its notebook failed to execute at build time")
        if rep.info["error_outputs"]:
            found.append(f"{rep.info['error_outputs']} error output(s)")
        return found

    problems = _problems(book, check)
    assert not problems, "pages whose execution failed:\n" + problems
    executed = {rel for rel, rep in book.items() if rep.info["execution"] == "ok"}
    labs = {rel for rel in book if rel.startswith("labs/")}
    missing = sorted((labs | set(MIN_FIGURES)) - executed)
    assert not missing, f"pages that should have run at build time but carry no execution record: {missing}"


def test_math_is_rendered(book):
    def check(rep):
        if rep.info["math"] and not rep.info["mathjax"]:
            cdn = [u for u in rep.blocked if "mathjax" in u.lower()]
            why = f" (MathJax is loaded from {cdn[0]}, unreachable offline)" if cdn else ""
            return [f"{rep.info['math']} math element(s) but no rendered <mjx-container>{why}"]
        return []

    problems = _problems(book, check)
    assert not problems, "math is not rendered:\n" + problems


@pytest.mark.parametrize(("rel", "least"), sorted(MIN_FIGURES.items()))
def test_pages_show_their_figures(book, rel, least):
    assert book[rel].info["figures"] >= least, f"{rel}: {book[rel].info['figures']} figure image(s) in the text"


# ---- Phone width: layout, figure text size, hidden solutions -------------------------------------------------

PHONE = {"width": 390, "height": 844}
MIN_FIGURE_TEXT_PX = 7.0  # smallest figure text, in CSS pixels, on a 390-px phone (aihw.plots.style sizes to it)
RASTER_DPI = 100  # a PNG that records no resolution is taken as drawn at matplotlib's figure.dpi

PHONE_JS = """async () => {
  const imgs = [...document.images];
  imgs.forEach(i => { i.loading = "eager"; });
  const settle = i => i.complete ? null : new Promise(r => { i.addEventListener("load", r);
                                                           i.addEventListener("error", r); });
  await Promise.race([Promise.all(imgs.map(settle)), new Promise(r => setTimeout(r, 5000))]);
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  await new Promise(r => setTimeout(r, 300));  // togglebutton and theme scripts run on load
  const article = document.querySelector("article.bd-article") || document.body;
  const wide = [...document.querySelectorAll("body *")].filter(e => {
    const r = e.getBoundingClientRect(); return r.width > 0 && r.right > window.innerWidth + 1;
  }).filter(e => !e.closest("[style*='overflow'], .table-wrapper, pre, mjx-container, table, .highlight, .cell_output, .output, .bd-sidebar-primary, .bd-sidebar-secondary, .animation"))
    .slice(0, 5).map(e => e.tagName.toLowerCase() + "." + [...e.classList].join("."));
  const visible = e => !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length);
  return {
    scroll_width: document.documentElement.scrollWidth,
    inner_width: window.innerWidth,
    wide: wide,
    images: [...article.querySelectorAll("img")].filter(visible).map(i => ({
      src: i.currentSrc || i.src, width: i.getBoundingClientRect().width, natural: i.naturalWidth})),
    solutions: [...article.querySelectorAll(".solution")].map(s => ({
      visible_body: [...s.children].filter(c => !c.classList.contains("admonition-title") && c.offsetHeight > 0).length,
      dropdown: s.classList.contains("dropdown") || s.classList.contains("toggle")})),
    text: article.innerText,
  };
}"""


@pytest.fixture(scope="module")
def phone() -> dict[str, dict]:
    """Visit every page at a 390-px phone width; the tests below assert on what each page reports."""
    root = book_dir()
    require_browser()
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    reports: dict[str, dict] = {}
    try:
        with chromium_browser() as browser:
            context = browser.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True)
            block_external(context, [])
            for rel in book_pages(root):
                if REDIRECT in (root / rel).read_text(encoding="utf-8", errors="replace").lower():
                    continue
                page = context.new_page()
                try:
                    page.goto(base + rel, wait_until="load")
                    reports[rel] = page.evaluate(PHONE_JS)
                finally:
                    page.close()
            context.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    return reports


def test_no_horizontal_scroll_on_a_phone(phone):
    problems = [f"{rel}: page is {r['scroll_width']} px wide in a {r['inner_width']} px viewport "
                f"(too wide: {', '.join(r['wide']) or '?'})"
                for rel, r in phone.items() if r["scroll_width"] > r["inner_width"] + 1]
    assert not problems, "\n".join(problems)


def _svg_min_font_px(path: Path, rendered_width: float) -> tuple[float, str] | None:
    """Smallest text of an SVG figure, in CSS px when the image is ``rendered_width`` px wide: font sizes in the
    SVG's user units times rendered width / viewBox width. None when the SVG has no text elements."""
    import re

    svg = path.read_text(encoding="utf-8", errors="replace")
    box = re.search(r'viewBox="\s*[-\d.]+\s+[-\d.]+\s+([\d.]+)\s+[\d.]+"', svg)
    sizes = [(float(m.group(1)), m.group(0)) for m in re.finditer(r"font(?:-size)?:\s*(?:[a-z]+\s+)*([\d.]+)px", svg)]
    if not box or not sizes:
        return None
    size, text = min(sizes)
    return size * rendered_width / float(box.group(1)), text


def _png_dpi(data: bytes) -> float | None:
    """The resolution a PNG records in its pHYs chunk (matplotlib writes the dpi it drew at), in dots per inch;
    None when the file records none or is not a PNG."""
    import struct

    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return None
    at = 8
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"pHYs" and length == 9:
            x_per_unit, _, unit = struct.unpack(">IIB", data[at + 8:at + 17])
            return x_per_unit * 0.0254 if unit == 1 and x_per_unit > 0 else None
        if kind in (b"IDAT", b"IEND"):
            return None  # pHYs comes before the image data
        at += 12 + length
    return None


def _raster_bytes(src: str, path: Path) -> bytes:
    """The bytes of an image: decoded from a data: URL, or read from its file."""
    import base64

    if src.startswith("data:"):
        head, _, payload = src.partition(",")
        return base64.b64decode(payload) if head.endswith(";base64") else b""
    return path.read_bytes()


def test_png_dpi_reads_what_matplotlib_records():
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(1, 1))
    try:
        for dpi in (72, 100, 192):
            buffer = io.BytesIO()
            fig.savefig(buffer, format="png", dpi=dpi)
            assert _png_dpi(buffer.getvalue()) == pytest.approx(dpi, rel=0.01)
    finally:
        plt.close(fig)
    assert _png_dpi(b"GIF89a") is None


def test_figure_text_is_legible_on_a_phone(phone):
    """Every figure's smallest text is at least MIN_FIGURE_TEXT_PX CSS pixels at phone width (SVG: measured from
    the file's font sizes and the rendered width; raster: its scale on screen times the smallest text it can
    hold, MIN_FONT_PT at the dpi the PNG records, RASTER_DPI when it records none)."""
    from urllib.parse import unquote, urlsplit

    from aihw.plots.style import MIN_FONT_PT

    root = book_dir()
    problems, checked = [], 0
    for rel, report in phone.items():
        for img in report["images"]:
            if img["width"] < 100:
                continue  # icons
            inline = img["src"].startswith("data:")  # e.g. the frames of an animation
            path = Path("inline") if inline else root / unquote(urlsplit(img["src"]).path).lstrip("/")
            if not inline and ("_static" in path.parts or not path.is_file()):
                continue  # logos
            if path.suffix == ".svg":
                found = _svg_min_font_px(path, img["width"])
                if found is None:
                    problems.append(f"{rel}: {path.name} has no <text> (SVG text drawn as paths cannot be checked)")
                    continue
                px, text = found
            else:
                dpi = _png_dpi(_raster_bytes(img["src"], path)) or RASTER_DPI
                px = img["width"] / max(img["natural"], 1) * MIN_FONT_PT * dpi / 72
                text = (f"{'inline ' if inline else ''}raster {img['natural']} px at {dpi:.0f} dpi "
                        f"shown at {img['width']:.0f} px")
            checked += 1
            if px < MIN_FIGURE_TEXT_PX:
                problems.append(f"{rel}: {path.name} smallest text {px:.1f} px ({text})")
    assert checked >= 10, f"only {checked} figure(s) checked"
    assert not problems, "figure text too small on a phone:\n" + "\n".join(problems)


def test_chapter_figures_are_vector(phone):
    from urllib.parse import urlsplit

    raster = [f"{rel}: {urlsplit(img['src']).path}" for rel, r in phone.items() if rel.startswith("chapters/")
              for img in r["images"] if "/_images/" in img["src"] and not img["src"].endswith(".svg")]
    assert not raster, "chapter figures should be SVG (sharp at any zoom):\n" + "\n".join(raster)


def test_solutions_are_hidden_by_default(phone):
    """Chapter solutions are closed dropdowns; no lab output shows a worked solution (labs reveal on request)."""
    problems, solutions = [], 0
    for rel, r in phone.items():
        for i, s in enumerate(r["solutions"]):
            solutions += 1
            if not s["dropdown"] or s["visible_body"]:
                problems.append(f"{rel}: solution {i + 1} is open (dropdown={s['dropdown']})")
        if rel.startswith("labs/") and "Solution to exercise" in r["text"]:
            problems.append(f"{rel}: a lab output reveals a worked solution (aihw.exercises.reveal was run)")
    assert solutions >= 5, f"only {solutions} solution(s) found"
    assert not problems, "\n".join(problems)


def test_no_page_reaches_outside_the_book(book):
    """The book works offline: no page asks for a CDN or any other host (matplotlib's animation player, for one,
    links Font Awesome from a CDN unless the course strips it)."""
    problems = _problems(book, lambda rep: [f"requests {url}" for url in rep.blocked])
    assert not problems, "pages request files from outside the book:\n" + problems
