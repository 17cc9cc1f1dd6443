"""Cold set-up + executed book build, and the whole CI run, on a fresh clone (the README's two commands).

Targets (issue 2), on the 2-core reference machine: set-up under 5 min, executed book build <= 10 min,
`.ci/run` <= 20 min. This takes as long as those commands do; run it on purpose, not in the test suite:

    python bench/bench_build_and_ci.py [--skip-ci]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGETS_S = {"set-up (make setup)": 300, "book build (jupyter-book, cold cache)": 600, "CI (.ci/run)": 1200}


def _timed(name: str, cmd: list[str], cwd: Path, log: Path) -> tuple[str, float, int]:
    start = time.perf_counter()
    with log.open("w") as out:
        code = subprocess.call(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    return name, time.perf_counter() - start, code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-ci", action="store_true", help="time only set-up and the book build")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="aihw-bench-") as tmp:
        clone = Path(tmp) / "aihw"
        subprocess.check_call(["git", "clone", "-q", str(REPO), str(clone)])
        rows.append(_timed("set-up (make setup)", ["make", "setup"], clone, Path(tmp) / "setup.log"))
        rows.append(_timed("book build (jupyter-book, cold cache)",
                           [str(clone / ".venv/bin/jupyter-book"), "build", ".", "-W", "-n", "--keep-going"],
                           clone, Path(tmp) / "book.log"))
        if not args.skip_ci:
            env_ci = ["env", "CI=true", "bash", ".ci/run"]
            rows.append(_timed("CI (.ci/run)", env_ci, clone, Path(tmp) / "ci.log"))
        print(f"{'step (fresh clone, ' + str(os.cpu_count()) + ' cores)':<44} {'seconds':>8} {'target':>8} "
              f"{'exit':>5}  result")
        failed = False
        for name, seconds, code in rows:
            ok = code == 0 and seconds <= TARGETS_S[name]
            failed |= code != 0
            print(f"{name:<44} {seconds:>8.0f} {TARGETS_S[name]:>8} {code:>5}  {'PASS' if ok else 'FAIL'}")
        if failed:
            for log in sorted(Path(tmp).glob("*.log")):
                print(f"--- tail of {log.name}\n" + "".join(log.read_text().splitlines(True)[-30:]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
