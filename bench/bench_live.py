"""Speed of the book's live calculators in headless Chromium: first result after the first input, later updates.

Targets (issue 17): first result <= 5 s after the first input on 2 cores (Pyodide's core and the aihw wheel load
then, once), later updates <= 200 ms (the median of UPDATES). Needs a built book with the live calculators
(`make book`) and Chromium. Prints a table with the spread of the updates and the machine's load average (a
loaded machine is slower: repeat on a quiet one); exits 0 either way (a bench reports, it does not gate),
marking each row PASS/FAIL. ``python bench/bench_live.py plan`` runs only the named calculators.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import statistics
import sys
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1] / "_build" / "html"
PAGES = {"memory": "chapters/memory.html", "roofline": "chapters/gpus_vs_tpus.html",
         "serve": "chapters/inference.html", "plan": "chapters/planning.html", "scaling": "chapters/scaling.html",
         "collectives": "chapters/data_parallel.html"}
FIRST_S, UPDATE_S = 5.0, 0.200
UPDATES = 10
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu"]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm"}

    def log_message(self, *args) -> None:
        pass


def _wait(page, panel: str, runs: int) -> float:
    page.wait_for_function("([s, n]) => Number(document.querySelector(s).dataset.runs || 0) >= n",
                           arg=[panel, runs], timeout=120_000)
    return float(page.locator(panel).get_attribute("data-last-ms")) / 1e3


def main() -> None:
    if not (ROOT / "_static" / "pyodide" / "pyodide.asm.wasm").is_file():
        print("no live calculators in _build/html: run `make book` (needs npm for the Pyodide core)")
        return
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(ROOT)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}/"
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    only = sys.argv[1:] or list(PAGES)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'calculator':<12}{'first result (s)':>17}{'update median (ms)':>20}{'quartiles (ms)':>16}"
          f"{'max (ms)':>10}  verdict")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        for command, rel in PAGES.items():
            if command not in only:
                continue
            page = browser.new_page()
            page.goto(base + rel, wait_until="load")
            panel = f".aihw-live[data-config*='\"command\": \"{command}\"']"
            box = page.locator(f"{panel} input[type=text]").first
            box.press("End")
            box.type(" ")
            first = _wait(page, panel, 1)
            updates = []
            for i in range(UPDATES):
                box.type(" ")
                updates.append(_wait(page, panel, 2 + i))
            median = statistics.median(updates)
            low, _, high = statistics.quantiles(updates, n=4)
            verdict = "PASS" if first <= FIRST_S and median <= UPDATE_S else "FAIL"
            print(f"{command:<12}{first:>17.2f}{median * 1e3:>20.0f}{f'{low * 1e3:.0f}-{high * 1e3:.0f}':>16}"
                  f"{max(updates) * 1e3:>10.0f}  {verdict}")
            page.close()
        browser.close()
    httpd.shutdown()
    print(f"load average {os.getloadavg()[0]:.1f} after the runs")


if __name__ == "__main__":
    main()
