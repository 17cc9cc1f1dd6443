"""A pytest plugin: the notebooks nbval runs are kept as executed pages of the book, so `make test` runs each lab
once, not once under nbval and again in the test build.

    pytest --nbval-lax labs -p scripts.nbval_cache --nbval-cache _build/.jupyter_cache

nbval executes every code cell of a lab in one kernel and keeps what the cell printed and displayed
(``IPyNbCell.test_outputs``). When every cell of a notebook passed and none was skipped, this plugin writes the
notebook with those outputs into the book's jupyter-cache database, under the same key the book build looks up
(the code cells and kernelspec of the notebook file). The build then renders the lab from nbval's run instead of
executing it a second time. A notebook with a failed or skipped cell is not written, so the build runs it itself.
"""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest

_RUNS = pytest.StashKey[dict[str, dict[str, object]]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--nbval-cache", default=None, metavar="DIR",
                     help="write each notebook whose cells all passed into this jupyter-cache folder")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_RUNS] = {}


def _notebook_of(item: pytest.Item) -> str | None:
    if type(item).__name__ != "IPyNbCell" or not hasattr(item, "cell_num"):
        return None
    return str(item.path)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    path = _notebook_of(item)
    if path is None:
        return
    run = item.config.stash[_RUNS].setdefault(path, {"outputs": {}, "ok": True, "start": time.perf_counter(),
                                                     "end": time.perf_counter()})
    if report.when == "call" and report.passed:
        run["outputs"][item.cell_num] = list(getattr(item, "test_outputs", None) or [])  # type: ignore[index]
    elif report.failed or report.skipped:
        run["ok"] = False
    run["end"] = time.perf_counter()


def pytest_sessionfinish(session: pytest.Session) -> None:
    folder = session.config.getoption("--nbval-cache")
    runs = session.config.stash.get(_RUNS, {})
    if not folder or not runs:
        return
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache = get_cache(str(Path(folder).resolve()))
    for path, run in runs.items():
        nb = nbformat.read(path, as_version=4)
        code = [cell for cell in nb.cells if cell.cell_type == "code"]
        outputs: dict[int, list[nbformat.NotebookNode]] = run["outputs"]  # type: ignore[assignment]
        if not run["ok"] or len(outputs) != len(code):
            continue
        for number, cell in enumerate(code):
            cell.outputs = [nbformat.from_dict(dict(out)) for out in outputs[number]]
            cell.execution_count = number + 1
            for out in cell.outputs:
                if out.get("output_type") == "execute_result":
                    out["execution_count"] = number + 1
        nbformat.validate(nb)
        seconds = float(run["end"]) - float(run["start"])  # type: ignore[arg-type]
        cache.cache_notebook_bundle(CacheBundleIn(nb, path, data={"execution_seconds": round(seconds, 1),
                                                                  "executed_by": "nbval"}),
                                    check_validity=False, overwrite=True)
