"""Execute the book's pages into its execution cache, several at a time, before ``jupyter-book build``.

The book executes every page once and keeps the result in a jupyter-cache database (``execute: cache`` in
``_config.yml``); Sphinx would execute them one after another while it reads. This script fills the same cache
with the same notebooks (read by myst-nb's own reader, so the cache key is the one the build looks up), running
``--jobs`` pages at once, longest first; the build that follows then finds every page executed and only renders.
A page already in the cache (same code) is not run again. A page that fails is reported with its error, and the
script exits 1; the build would fail on it anyway.

    python scripts/execute_pages.py [--jobs 2] [--pages chapters/memory.md ...]

It prints each page's execution time and the wall time. It reads ``execute.timeout``, ``execute.allow_errors``
and ``execute.cache`` from ``_config.yml``, and the pages from ``_toc.yml``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
TIMES = "page_times.json"  # beside the cache: last execution time of each page, to start the longest first


def toc_pages(root: Path = ROOT) -> list[Path]:
    """Every page of ``_toc.yml`` that exists as a MyST notebook or an .ipynb, in book order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    names: list[str] = [toc["root"]]

    def walk(entries: list[dict[str, Any]]) -> None:
        for entry in entries:
            if "file" in entry:
                names.append(entry["file"])
            for key in ("chapters", "sections", "parts"):
                walk(entry.get(key, []))

    walk(toc.get("parts", []) + toc.get("chapters", []))
    pages = []
    for name in names:
        for suffix in (".ipynb", ".md"):
            path = root / (name + suffix)
            if path.is_file():
                pages.append(path)
                break
    return pages


def _settings(root: Path) -> dict[str, Any]:
    config = yaml.safe_load((root / "_config.yml").read_text())
    execute = config.get("execute", {})
    cache = execute.get("cache") or str(root / "_build" / ".jupyter_cache")
    extensions = config.get("parse", {}).get("myst_enable_extensions", [])
    return {"timeout": int(execute.get("timeout", 30)), "allow_errors": bool(execute.get("allow_errors", False)),
            "cache": Path(cache), "extensions": list(extensions)}


def read_page(path: Path, extensions: list[str]) -> nbformat.NotebookNode | None:
    """The notebook myst-nb builds from a page (None for a page that is plain Markdown)."""
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.read import create_nb_reader
    from myst_parser.config.main import MdParserConfig

    text = path.read_text()
    reader = create_nb_reader(str(path), MdParserConfig(enable_extensions=set(extensions)), NbParserConfig(), text)
    return None if reader is None else reader.read(text)


def _execute(path: str, nb_json: str, timeout: int, allow_errors: bool) -> tuple[str, float, str | None]:
    """Run one notebook in a fresh kernel with the page's folder as working directory (as the build does)."""
    from jupyter_cache.executors.utils import single_nb_execution

    nb = nbformat.reads(nb_json, as_version=4)
    start = time.perf_counter()
    result = single_nb_execution(nb, cwd=str(Path(path).parent), allow_errors=allow_errors, timeout=timeout,
                                 meta_override=True)
    seconds = time.perf_counter() - start
    if result.err is not None:
        return path, seconds, result.exc_string or repr(result.err)
    return nbformat.writes(nb), seconds, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="pages run at once")
    parser.add_argument("--pages", nargs="*", type=Path, help="only these pages (default: every page of the toc)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1 (got {args.jobs})")
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    settings = _settings(ROOT)
    cache = get_cache(str(settings["cache"]))
    times_file = Path(settings["cache"]) / TIMES
    past = json.loads(times_file.read_text()) if times_file.is_file() else {}
    pages = [p.resolve() for p in args.pages] if args.pages else toc_pages()
    todo: list[tuple[Path, nbformat.NotebookNode]] = []
    for page in pages:
        nb = read_page(page, settings["extensions"])
        if nb is None or not any(c.cell_type == "code" for c in nb.cells):
            continue
        try:
            cache.match_cache_notebook(nb)
        except KeyError:
            todo.append((page, nb))
    # longest first (last run's times; unknown pages count as long), so the two queues end together
    todo.sort(key=lambda item: -past.get(str(item[0].relative_to(ROOT)), 1e9))
    print(f"execute_pages: {len(todo)} of {len(pages)} pages to run, {args.jobs} at a time", flush=True)
    start = time.perf_counter()
    failures: list[tuple[Path, str]] = []
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=context) as pool:
        futures: list[tuple[Path, nbformat.NotebookNode, Future[tuple[str, float, str | None]]]] = [
            (page, nb, pool.submit(_execute, str(page), nbformat.writes(nb), settings["timeout"],
                                   settings["allow_errors"]))
            for page, nb in todo]
        for page, _nb, future in futures:
            out, seconds, error = future.result()
            name = str(page.relative_to(ROOT))
            past[name] = round(seconds, 1)
            if error is not None:
                failures.append((page, error))
                print(f"  FAILED {name} after {seconds:.1f} s", flush=True)
                continue
            executed = nbformat.reads(out, as_version=4)
            cache.cache_notebook_bundle(CacheBundleIn(executed, str(page), data={"execution_seconds": seconds}),
                                        check_validity=False, overwrite=True)
            print(f"  {name:<36} {seconds:>6.1f} s", flush=True)
    times_file.parent.mkdir(parents=True, exist_ok=True)
    times_file.write_text(json.dumps(past, indent=1, sort_keys=True))
    print(f"execute_pages: {len(todo)} pages in {time.perf_counter() - start:.0f} s wall", flush=True)
    for page, error in failures:
        print(f"\n--- {page.relative_to(ROOT)} failed:\n{error[-3000:]}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
