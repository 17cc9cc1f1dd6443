"""The labs' widgets work under ipywidgets 7.7 too, the version Colab has long shipped.

Installing the course never upgrades a runtime's ipywidgets (the ``labs`` extra accepts 7.7 and 8.x): Colab's
issue tracker documents widgets that stop rendering after an upgrade to 8 (googlecolab/colabtools #3020, #4525).
So every widget test file runs again here, in a child process whose ipywidgets is 7.7.1 (its wheel, and that of
its dependency ipython_genutils, put first on the path; `make setup` fetches both into .cache/compat).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPAT = ROOT / ".cache" / "compat"
WHEELS = ("ipywidgets-7.7.1-py2.py3-none-any.whl", "ipython_genutils-0.2.0-py2.py3-none-any.whl")
WIDGET_TESTS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*widget*.py")
                      if p.name != Path(__file__).name)


def _wheels() -> list[str]:
    paths = [COMPAT / name for name in WHEELS]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        message = f"ipywidgets 7.7 wheels missing in {COMPAT} ({', '.join(missing)}): run `make setup`"
        if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
            pytest.fail(message + " (CI must not skip this)", pytrace=False)
        pytest.skip(message)
    return [str(p) for p in paths]


def test_widget_tests_pass_under_ipywidgets_7_7():
    assert WIDGET_TESTS, "no widget test files found"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*_wheels(), str(ROOT / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    version = subprocess.run([sys.executable, "-c", "import ipywidgets; print(ipywidgets.__version__)"],
                             env=env, capture_output=True, text=True, timeout=120)
    assert version.stdout.strip() == "7.7.1", version.stderr[-1000:]
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W",
                           "ignore::DeprecationWarning", *WIDGET_TESTS], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout
