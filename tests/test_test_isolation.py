"""Tests write only under pytest's temporary directory (the repository's conftest.py gives every run a home of
its own): checked where each kind of test runs its code, in this process, in a process it starts, and in an
nbval kernel, by asking each where the course's cache and the tools' files would go.

Why not snapshot the real ~/.cache/aihw before and after: other people's runs and book builds on the same
machine write there at any time, so such a test would fail for changes that are not this run's."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]

# Defines where(): the places a process would write its files, by the tools' own functions.
PROBE = '''
def where():
    import tempfile
    from pathlib import Path

    import IPython.paths
    import jupyter_core.paths
    import matplotlib
    import torch.hub

    from aihw.models.digits import default_cache_dir

    return {"home": str(Path.home()), "aihw cache": str(default_cache_dir()),
            "matplotlib config": matplotlib.get_configdir(), "matplotlib cache": matplotlib.get_cachedir(),
            "IPython": IPython.paths.get_ipython_dir(), "Jupyter config": jupyter_core.paths.jupyter_config_dir(),
            "Jupyter data": jupyter_core.paths.jupyter_data_dir(),
            "Jupyter runtime": jupyter_core.paths.jupyter_runtime_dir(), "torch hub": torch.hub.get_dir(),
            "temporary files": tempfile.gettempdir()}
'''


def _outside(paths: dict[str, str], base: Path) -> dict[str, str]:
    base = base.resolve()
    return {name: path for name, path in paths.items() if not Path(path).resolve().is_relative_to(base)}


def _where_here() -> dict[str, str]:
    namespace: dict = {}
    exec(PROBE, namespace)
    return namespace["where"]()


def test_this_process_writes_under_pytests_temporary_directory(tmp_path_factory):
    paths = _where_here()
    assert not _outside(paths, tmp_path_factory.getbasetemp()), paths


def test_a_process_a_test_starts_writes_there_too(tmp_path_factory):
    """Subprocesses, the launcher's spawned ranks and servers inherit this process's environment."""
    done = subprocess.run([sys.executable, "-c", PROBE + "\nimport json\nprint(json.dumps(where()))"],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    paths = json.loads(done.stdout.splitlines()[-1])
    assert not _outside(paths, tmp_path_factory.getbasetemp()), paths


def test_an_nbval_kernel_writes_under_its_runs_temporary_directory(tmp_path):
    """An inner ``pytest --nbval-lax`` run with the repository's conftest.py: its kernel's home, caches and
    temporary files lie under that run's own base temporary directory (not merely under this outer run's)."""
    shutil.copy(ROOT / "conftest.py", tmp_path / "conftest.py")
    cell = PROBE + "\nimport json\nfrom pathlib import Path\n" \
        "paths = {**where(), 'IPython profile': get_ipython().profile_dir.location}\n" \
        "Path('kernel_paths.json').write_text(json.dumps(paths))\n"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, tmp_path / "probe.ipynb")
    basetemp = tmp_path / "basetemp"
    done = subprocess.run([sys.executable, "-m", "pytest", "--nbval-lax", "-q", "-p", "no:cacheprovider",
                           f"--basetemp={basetemp}", "probe.ipynb"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-3000:]
    paths = json.loads((tmp_path / "kernel_paths.json").read_text())
    assert not _outside(paths, basetemp), paths
