"""The labs start on a Colab-like runtime: a fresh venv with only what Colab preinstalls, the set-up cell as written.

A new virtual environment (never this one, never ``--system-site-packages``) first gets what a Colab runtime has
before a student types anything: the CPU torch (the pinned local wheel), numpy, matplotlib, ipywidgets 7.7.1
(Colab's) and ipykernel. The package wheel the book build publishes (``_ext/lab_wheel.py``) is served from
127.0.0.1 on a free port, in the folder the published book has it in. Then a lab runs, whole, in a kernel of that
venv, its set-up cell exactly as written but for the book's address (``html.baseurl``), pointed at that server:
the cell installs the package, and no package that was there before changes version. A second whole lab runs in
a fresh kernel, where the set-up cell finds the package installed. Every lab's set-up cell is the same text, so
the one that ran stands for all ten (checked).

Nothing leaves the machine: pip uses this machine's configured local package sources (as every install here does).
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
LABS = sorted((ROOT / "labs").glob("*_lab.ipynb"))
COMPAT = ROOT / ".cache" / "compat"  # ipywidgets 7.7.1, downloaded by `make setup`
BOOK_URL = yaml.safe_load((ROOT / "_config.yml").read_text())["html"]["baseurl"].rstrip("/")
WHOLE_LABS = ("gpus_vs_tpus_lab", "memory_lab")  # both measure with torch and build widgets; a few seconds each
KERNEL = "colab-like"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _pip(python: Path, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"pip {' '.join(args)} failed:\n{done.stderr[-3000:]}"
    return done


def _versions(python: Path) -> dict[str, str]:
    listed = json.loads(_pip(python, "list", "--format", "json").stdout)
    return {row["name"].lower().replace("_", "-"): row["version"] for row in listed}


def _colab_preinstalls() -> list[str]:
    widgets = sorted(COMPAT.glob("ipywidgets-7.7.1-*.whl"))
    return ["torch==2.13.0", "numpy", "matplotlib", "ipykernel",
            str(widgets[0]) if widgets else "ipywidgets==7.7.1"]


def _package_sources() -> list[str]:
    """The package sources this machine's pip is configured with, as uv options (uv does not read pip's config)."""
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                         timeout=60).stdout
    args = []
    for line in out.splitlines():
        key, _, value = line.partition("=")
        for item in value.strip().strip("'\"").split():
            if key.endswith(".index-url"):
                args += ["--index-url", item]
            elif key.endswith("extra-index-url"):
                args += ["--extra-index-url", item]
            elif key.endswith("find-links"):
                args += ["--find-links", item]
            elif key.endswith(".constraint"):
                args += ["--constraint", item]
    links = os.environ.get("PIP_FIND_LINKS", "").split()
    return args + [arg for link in links for arg in ("--find-links", link)]


def _fresh_venv(venv: Path) -> Path:
    """A new venv (no system site-packages) with what Colab preinstalls; uv installs it from its own cache in
    ``.cache/uv`` (kept between runs on one machine, built from nothing on a new one), else pip does, slower."""
    try:
        import uv

        uv_bin = uv.find_uv_bin()
    except (ImportError, FileNotFoundError):
        uv_bin = None
    if uv_bin is None:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        _pip(venv / "bin" / "python", "install", "-q", *_colab_preinstalls())
        return venv / "bin" / "python"
    env = {**os.environ, "UV_CACHE_DIR": str(ROOT / ".cache" / "uv")}
    run = functools.partial(subprocess.run, env=env, capture_output=True, text=True, timeout=600)
    made = run([uv_bin, "venv", "-q", "--seed", "--python", sys._base_executable, str(venv)])
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    done = run([uv_bin, "pip", "install", "-q", "--python", str(python), "--index-strategy", "unsafe-best-match",
                *_package_sources(), *_colab_preinstalls()])
    assert done.returncode == 0, done.stderr[-3000:]
    return python


@pytest.fixture(scope="module")
def runtime(tmp_path_factory):
    """(the venv's python, its package versions before any lab ran, the kernels folder)."""
    venv = tmp_path_factory.mktemp("colab") / "venv"
    python = _fresh_venv(venv)
    subprocess.run([str(python), "-m", "ipykernel", "install", "--prefix", str(venv), "--name", KERNEL],
                   check=True, capture_output=True, timeout=120)
    before = _versions(python)
    assert "aihw" not in before and before["ipywidgets"] == "7.7.1" and before["torch"].startswith("2.13.0")
    return python, before, venv / "share" / "jupyter" / "kernels"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    requested: list[str] = []

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        self.requested.append(self.path)


@pytest.fixture(scope="module")
def book_server(tmp_path_factory):
    """A static server on 127.0.0.1 (a free port) holding the wheel where the published book holds it."""
    site = tmp_path_factory.mktemp("site")
    folder = site.joinpath("_static", "wheels")
    folder.mkdir(parents=True)
    wheel = _module("live_calc", ROOT / "_ext" / "live_calc.py").build_wheel(folder)
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", wheel
    finally:
        server.shutdown()
        server.server_close()


def _run_lab(name: str, address: str, kernels: Path, cwd: Path) -> nbformat.NotebookNode:
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    nb = nbformat.read(ROOT / "labs" / f"{name}.ipynb", as_version=4)
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert f'"{BOOK_URL}"' in first.source
    first.source = first.source.replace(f'"{BOOK_URL}"', f'"{address}"')  # the one change: the book's address
    km = KernelManager(kernel_name=KERNEL, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)]))
    venv = kernels.parents[2]
    # a student's kernel: this checkout's src (PYTHONPATH) and this venv are not on its path
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    NotebookClient(nb, km=km, timeout=300, resources={"metadata": {"path": str(cwd)}}).execute(env=env, cwd=str(cwd))
    return nb


def _text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        parts.append(out.get("text", ""))
        parts.append(out.get("data", {}).get("text/plain", ""))
    return "".join(parts)


def test_every_lab_has_the_same_set_up_cell():
    labs_script = _module("labs_script", ROOT / "scripts" / "labs.py")
    blocks = set()
    for lab in LABS:
        first = next(c for c in nbformat.read(lab, as_version=4).cells if c.cell_type == "code").source
        blocks.add(first[:labs_script._setup_prefix_end(first)])
    assert blocks == {labs_script.setup_cell()}


def test_labs_start_from_the_books_wheel_and_replace_nothing_preinstalled(runtime, book_server, tmp_path):
    python, before, kernels = runtime
    address, wheel = book_server
    nb = _run_lab(WHOLE_LABS[0], address, kernels, tmp_path)
    first = next(c for c in nb.cells if c.cell_type == "code")
    shown = _text(first)
    assert "Could not install" not in shown, shown  # the book's wheel, not the fallback
    assert f"/_static/wheels/{wheel.name}" in _Quiet.requested
    import aihw

    assert f"aihw: {aihw.__version__}" in shown and "torch: 2.13.0" in shown and "catalogue match" in shown
    after = _versions(python)
    assert after["aihw"] == aihw.__version__
    changed = {name: (version, after.get(name)) for name, version in before.items() if after.get(name) != version}
    assert not changed, f"the set-up cell replaced preinstalled packages (before, after): {changed}"
    origin = json.loads(subprocess.run([str(python), "-c", "import importlib.metadata as m, sys; "
                                        "sys.stdout.write(m.distribution('aihw').read_text('direct_url.json'))"],
                                       capture_output=True, text=True, check=True).stdout)
    assert origin["url"] == f"{address}/_static/wheels/{wheel.name}"


def test_a_second_lab_runs_whole_where_the_package_is_installed(runtime, book_server, tmp_path):
    python, before, kernels = runtime
    address, wheel = book_server
    if "aihw" not in _versions(python):
        pytest.fail("the first lab did not install the package (see the test before this one)")
    requests = len(_Quiet.requested)
    nb = _run_lab(WHOLE_LABS[1], address, kernels, tmp_path)
    assert len(_Quiet.requested) == requests  # installed already: the set-up cell downloads nothing
    assert "device" in _text(next(c for c in nb.cells if c.cell_type == "code"))
