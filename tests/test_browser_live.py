"""The live calculators in the built book (headless Chromium): the CLI's numbers, offline, errors inline.

Served from a local HTTP server (a browser refuses to fetch WebAssembly from file:// URLs); every request must
stay on that server. The times are printed for the record (bench/bench_live.py prints them too), not asserted.
"""

from __future__ import annotations

import functools
import http.server
import json
import threading
from urllib.parse import urlsplit

import pytest
from browser_support import book_dir, chromium_browser, require_browser, unavailable

from aihw.cli import live

pytestmark = pytest.mark.browser

PAGES = {"memory": "chapters/memory.html", "roofline": "chapters/gpus_vs_tpus.html",
         "serve": "chapters/inference.html", "plan": "chapters/planning.html", "scaling": "chapters/scaling.html",
         "collectives": "chapters/data_parallel.html"}
BOOK_GROWTH_LIMIT = 15e6  # bytes the live calculators may add to the book


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm"}

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def server():
    root = book_dir()
    if not (root / "_static" / "pyodide" / "pyodide.asm.wasm").is_file():
        unavailable("the book was built without the live calculators (no Pyodide core: "
                    "run `python scripts/live_assets.py fetch`, which needs npm)")
    require_browser()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def _same(a, b) -> bool:
    """Equal JSON, numbers equal to 1e-12 relative: WebAssembly's libm may round a power's last bit differently,
    and JSON in the browser writes 20.0 as 20."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return a == pytest.approx(b, rel=1e-12, abs=0)
    return a == b


def _wait_state(page, panel: str, states: tuple[str, ...], runs: int) -> None:
    page.wait_for_function(
        "([sel, states, runs]) => { const p = document.querySelector(sel);"
        " return states.includes(p.dataset.state) && Number(p.dataset.runs || 0) >= runs; }",
        arg=[panel, list(states), runs], timeout=120_000)


@pytest.mark.parametrize("command", sorted(PAGES))
def test_live_calculator_matches_the_cli_offline_with_inline_errors(server, command):
    requests: list[str] = []
    with chromium_browser() as browser:
        context = browser.new_context()
        context.on("request", lambda r: requests.append(r.url))
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(server + PAGES[command], wait_until="load")
        panel = f".aihw-live[data-config*='\"command\": \"{command}\"']"
        assert page.locator(panel).is_visible(), "the live panel stays hidden"
        assert page.locator(".aihw-live-fallback").count() >= 1, "no static fallback content"

        # First input: Pyodide loads, then the result appears.
        first = page.locator(f"{panel} input[type=text]").first
        first.press("End")
        first.type(" ")
        _wait_state(page, panel, ("ready",), 1)
        first_ms = float(page.locator(panel).get_attribute("data-last-ms"))
        argv = json.loads(page.locator(panel).get_attribute("data-argv"))
        shown = json.loads(page.locator(panel).get_attribute("data-result"))
        expected = live.run(command, argv)
        assert expected["ok"] and _same(shown, expected["result"])
        cells = page.locator(f"{panel} .aihw-live-result td[data-value]")
        assert cells.count() >= 2
        for i in range(cells.count()):
            value = cells.nth(i).get_attribute("data-value")
            assert value == "" or json.loads(value) is not None

        # A bad value: the CLI's one-line message beside the field, the last good result kept.
        field = page.locator(f"{panel} .aihw-live-field").filter(has=page.locator("input[inputmode=decimal]")).first
        flag = field.get_attribute("data-flag")
        field.locator("input").first.fill("-3")
        _wait_state(page, panel, ("error",), 2)
        message = page.locator(panel).get_attribute("data-error")
        bad_argv = [a if a != argv[argv.index(flag) + 1] or i != argv.index(flag) + 1 else "-3"
                    for i, a in enumerate(argv)] if flag in argv else [*argv, flag, "-3"]
        assert message == live.run(command, bad_argv)["error"]
        assert page.locator(f"{panel} .aihw-live-error").filter(has_text=message.replace("aihw: error: ", "")) \
            .count() + page.locator(f"{panel} .aihw-live-status").filter(
                has_text=message.replace("aihw: error: ", "")).count() >= 1
        assert _same(json.loads(page.locator(panel).get_attribute("data-result")), shown), "last good result lost"

        # A later update is quick (printed, not asserted: the machine may be loaded).
        field.locator("input").first.fill(field.locator("input").first.input_value().replace("-3", "2"))
        _wait_state(page, panel, ("ready", "error"), 3)
        later_ms = float(page.locator(panel).get_attribute("data-last-ms"))
        print(f"\n{command}: first result {first_ms:.0f} ms after the first input, later update {later_ms:.0f} ms")
        context.close()
    origin = urlsplit(server).netloc
    outside = [u for u in requests if urlsplit(u).scheme in ("http", "https") and urlsplit(u).netloc != origin]
    assert not outside, f"requests left the book's own files: {outside}"
    assert not errors, errors


def test_live_calculators_add_less_than_15_mb():
    root = book_dir()
    added = [p for d in ("pyodide", "live") for p in (root / "_static" / d).glob("*")]
    if not added:
        unavailable("the book was built without the live calculators")
    total = sum(p.stat().st_size for p in added)
    assert total < BOOK_GROWTH_LIMIT, f"{total / 1e6:.1f} MB"
