"""Where the time goes from nothing: a fresh clone's set-up, executed book build and test stages, per stage and
per page, with the machine's load.

Targets on an idle 2-core machine: `make book` (set-up + executed book) <= 6 min, `make test` <= 15 min. This takes
as long as those commands do; run it on purpose, not in the test suite:

    python bench/bench_build_and_ci.py [--skip-ci] [--keep DIR]

The clone gets no caches: pip's, npm's and the course's weight cache (``~/.cache/aihw``) are pointed at empty
folders inside the clone's temporary directory, as on a new machine. Per-page times are the execution seconds the
book's execution cache records for each page (the test build's, for the CI run).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGETS_S = {"make book (set-up + book)": 360, "make test (whole suite)": 900}
# The stages of `make test`, in its order: the labs run under nbval first, and the test build renders their runs.
CI_STAGES = (("browser-deps", ["browser-deps"]), ("lint", ["lint"]), ("test-labs", ["test-labs"]),
             ("test-book", ["test-book", "KEEP_LABS=1"]), ("test-unit", ["test-unit"]))


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.1f}/{five:.1f}"


def _timed(name: str, cmd: list[str], cwd: Path, log: Path, env: dict[str, str]) -> dict[str, object]:
    load_before = _load()
    start = time.perf_counter()
    with log.open("w") as out:
        code = subprocess.call(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)
    seconds = time.perf_counter() - start
    return {"stage": name, "seconds": round(seconds, 1), "exit": code, "load": f"{load_before} -> {_load()}"}


def page_seconds(cache_dir: Path) -> dict[str, float]:
    """Execution seconds per page as recorded in a jupyter-cache database (``<cache>/global.db``)."""
    db = cache_dir / "global.db"
    if not db.is_file():
        return {}
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT uri, data FROM nbcache").fetchall()
    out: dict[str, float] = {}
    for uri, data in rows:
        seconds = json.loads(data or "{}").get("execution_seconds")
        if seconds is not None:
            out[os.path.relpath(uri, cache_dir.parents[1]) if os.path.isabs(uri) else uri] = float(seconds)
    return out


def _print_pages(title: str, pages: dict[str, float]) -> None:
    if not pages:
        return
    print(f"\n{title}: {len(pages)} pages, {sum(pages.values()):.0f} s of execution in all")
    for page, seconds in sorted(pages.items(), key=lambda kv: -kv[1]):
        print(f"  {page:<40} {seconds:>7.1f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-ci", action="store_true", help="time only `make book`")
    parser.add_argument("--keep", type=Path, help="clone here (kept) instead of a temporary folder")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args()
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="aihw-bench-") as tmp:
        base = args.keep or Path(tmp)
        clone = base / "aihw"
        subprocess.check_call(["git", "clone", "-q", str(REPO), str(clone)])
        fresh = base / "fresh-home-caches"
        env = dict(os.environ, PIP_CACHE_DIR=str(fresh / "pip"), npm_config_cache=str(fresh / "npm"),
                   XDG_CACHE_HOME=str(fresh / "xdg"), HOME=str(fresh / "home"))
        Path(env["HOME"]).mkdir(parents=True)
        rows.append(_timed("make book (set-up + book)", ["make", "book"], clone, base / "book.log", env))
        book_pages = page_seconds(clone / "_build" / ".jupyter_cache")
        test_pages: dict[str, float] = {}
        if not args.skip_ci:
            env_ci = dict(env, CI="true")
            stage_rows = [_timed(f"  make {name}", ["make", *argv], clone, base / f"{name}.log", env_ci)
                          for name, argv in CI_STAGES]
            test_pages = page_seconds(clone / "_build" / ".jupyter_cache")
            total = sum(float(r["seconds"]) for r in stage_rows)  # type: ignore[arg-type]
            rows.append({"stage": "make test (whole suite)", "seconds": round(total, 1),
                         "exit": max(int(r["exit"]) for r in stage_rows),  # type: ignore[call-overload]
                         "load": "see stages"})
            rows.extend(stage_rows)
        print(f"fresh clone, {os.cpu_count()} cores, no pip/npm/weight caches")
        print(f"{'stage':<34} {'seconds':>8} {'target':>7} {'exit':>5}  {'load 1m/5m':<16} result")
        failed = False
        for row in rows:
            target = TARGETS_S.get(str(row["stage"]))
            ok = row["exit"] == 0 and (target is None or float(row["seconds"]) <= target)  # type: ignore[arg-type]
            failed |= row["exit"] != 0
            print(f"{row['stage']:<34} {row['seconds']:>8} {target or '':>7} {row['exit']:>5}  "
                  f"{row['load']:<16} {'PASS' if ok else 'FAIL'}")
        _print_pages("book build, per page", book_pages)
        _print_pages("test build (make test-book), per page", test_pages)
        if args.json:
            args.json.write_text(json.dumps({"rows": rows, "book_pages": book_pages, "test_pages": test_pages},
                                            indent=1))
        if failed:
            for log in sorted(base.glob("*.log")):
                print(f"--- tail of {log.name}\n" + "".join(log.read_text().splitlines(True)[-30:]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
