"""The checks behind `make test` cannot pass by skipping or by reusing stale pages."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from browser_support import in_ci

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("value", "expected"), [
    ("true", True), ("True", True), ("1", True), ("yes", True), ("on", True), ("github", True),
    ("", False), ("0", False), ("false", False), ("FALSE", False), ("no", False), ("off", False),
])
def test_any_true_looking_ci_value_counts_as_ci(monkeypatch, value, expected):
    monkeypatch.setenv("CI", value)
    assert in_ci() is expected


def test_ci_script_sets_ci():
    assert re.search(r"^export CI=true\b", (ROOT / ".ci" / "run").read_text(), re.MULTILINE)


@pytest.mark.parametrize(("ci", "outcome"), [("yes", "1 error"), ("", "1 skipped")])
def test_a_test_file_skipped_at_module_level_fails_in_ci(tmp_path, ci, outcome):
    for name in ("conftest.py", "browser_support.py"):
        shutil.copy(ROOT / "tests" / name, tmp_path / name)
    (tmp_path / "test_moved_submodule.py").write_text(
        'import pytest\nobserver = pytest.importorskip("torch.no_such_submodule")\n\n'
        "def test_uses_it():\n    assert observer\n")
    env = {**os.environ, "CI": ci}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert outcome in done.stdout, done.stdout[-2000:]
    if ci:
        assert done.returncode != 0 and "in CI a module-level skip is a failure" in done.stdout


def test_the_test_book_build_executes_every_page_every_time():
    """make test-book drops the execution cache (keyed on the page, not the package) and rebuilds all pages
    (--all), so a page that no longer runs cannot pass on old outputs or "no targets are out of date"."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^test-book:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE).group(1)
    assert "rm -rf _build/.jupyter_cache" in recipe
    assert re.search(r"jupyter-book build \. .*--all", recipe) and "-W" in recipe
    book_recipe = re.search(r"^book:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE).group(1)
    assert "--all" not in book_recipe and "jupyter_cache" not in book_recipe  # readers keep the cache


def _page_assets():
    spec = importlib.util.spec_from_file_location("page_assets", ROOT / "_ext" / "page_assets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pages_whose_execution_failed_are_marked_for_the_browser_tests():
    assets = _page_assets()
    assert assets.execution_state({"succeeded": False, "error": "CellExecutionError"}) == "failed"
    assert assets.execution_state({"succeeded": True}) == "ok"
    assert assets.execution_state(None) is None

    class App:
        class env:  # noqa: N801 - a stand-in for Sphinx's build environment
            nb_metadata = {"chapters/broken": {"exec_data": {"succeeded": False}}, "chapters/fine": {}}

    for page, expected in (("chapters/broken", 'content="failed"'), ("chapters/fine", None)):
        context = {"metatags": ""}
        assets._execution_marker(App, page, "page.html", context, None)
        assert (expected in context["metatags"]) if expected else context["metatags"] == ""
