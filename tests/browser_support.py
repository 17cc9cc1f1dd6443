"""Shared helpers of the headless-browser tests (tests/test_browser_*.py).

Skip policy: a missing browser, Playwright or built book skips the test on a laptop, but FAILS it in CI
(``CI`` set to any true-looking value: ``true`` as GitHub Actions sets it, ``1``, ``yes``, ``True``...; ``.ci/run``
sets it), so CI can never pass by skipping.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest

REPO = Path(__file__).resolve().parents[1]
BOOK_HTML = REPO / "_build" / "html"
CHROMIUM_NAMES = ("chromium", "chromium-browser")
CHROMIUM_ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LOCAL_HOSTS = {"127.0.0.1", "localhost"}


FALSE_WORDS = {"", "0", "false", "no", "off", "n", "f"}


def in_ci() -> bool:
    """True when the CI variable holds any true-looking value (not unset, empty, 0, false, no, off)."""
    return os.environ.get("CI", "").strip().lower() not in FALSE_WORDS


def unavailable(reason: str) -> None:
    """Skip (laptop) or fail (CI) a test that cannot run here."""
    if in_ci():
        pytest.fail(f"{reason} (CI must not skip browser tests)", pytrace=False)
    pytest.skip(reason)


def chromium_path() -> str:
    """Path of the system Chromium, or skip/fail if there is none."""
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    unavailable("Chromium not found (run `make browser-deps`, i.e. scripts/install_browser.sh)")
    raise AssertionError("unreachable")


def book_dir() -> Path:
    """The built book's HTML folder, or skip/fail if it has not been built."""
    if not (BOOK_HTML / "index.html").is_file():
        unavailable(f"no built book at {BOOK_HTML}: run `jupyter-book build .` first (make test does)")
    return BOOK_HTML


def require_browser() -> str:
    """Check Playwright and Chromium are both here (skip/fail otherwise); return Chromium's path."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        unavailable("the Python package `playwright` is not installed (it is in requirements.txt)")
    return chromium_path()


@contextmanager
def chromium_browser() -> Iterator[object]:
    """A headless Chromium driven by Playwright (no download: it uses the system browser)."""
    executable = require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def is_local(url: str) -> bool:
    """True for URLs served by the test itself (and for data:/blob:/about: URLs)."""
    parts = urlsplit(url)
    return parts.scheme not in ("http", "https", "ws", "wss") or parts.hostname in LOCAL_HOSTS


def block_external(context, blocked: list[str]) -> None:
    """Abort every request that leaves this machine (the tests must pass offline); record its URL."""
    def handle(route) -> None:
        url = route.request.url
        if is_local(url):
            route.continue_()
        else:
            blocked.append(url)
            route.abort()

    context.route("**/*", handle)


def free_port() -> int:
    """A TCP port that was free a moment ago (callers retry if someone else takes it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

