"""Every pytest run of this repository (``pytest tests``, ``pytest --nbval-lax labs``) writes only under its own
temporary directory, never into the home directory of whoever runs it.

The course caches trained weights under ``~/.cache/aihw`` (``aihw.models.digits.default_cache_dir()``), and
matplotlib, IPython, Jupyter, torch and the browser keep files under the home directory and the system's
temporary directory. At the start of the session this points HOME, the XDG directories, the per-tool variables
and TMPDIR at folders inside pytest's base temporary directory. The processes a test starts inherit them: nbval's
kernels (``jupyter_client`` copies ``os.environ`` when it starts each kernel), the launcher's spawned ranks,
subprocesses and servers. The package itself reads no environment variable of its own: its cache follows the
home directory, as for any reader.

The temporary cache starts as a copy of the real one (read, never written): trained weights are keyed by a hash
of everything that decides them and written atomically, so a copy behaves as the real cache would, and the labs
do not retrain what the book build (which runs before them in ``make test``) or the reader has already trained.
With an empty real cache they train, as before.

It runs in ``pytest_sessionstart``, before collection imports anything, and the session's end puts the
environment back. ``tests/test_test_isolation.py`` checks the test process, a started process and an nbval kernel.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

# (variable, folder inside the temporary home); each is set explicitly, so that a value the developer's shell
# already sets (say MPLCONFIGDIR or TORCH_HOME) cannot send writes back to the real home.
_HOME_FOLDERS = (
    ("XDG_CACHE_HOME", ".cache"),
    ("XDG_CONFIG_HOME", ".config"),
    ("XDG_DATA_HOME", ".local/share"),
    ("XDG_STATE_HOME", ".local/state"),
    ("MPLCONFIGDIR", ".config/matplotlib"),
    ("IPYTHONDIR", ".ipython"),
    ("JUPYTER_CONFIG_DIR", ".jupyter"),
    ("JUPYTER_DATA_DIR", ".local/share/jupyter"),
    ("JUPYTER_RUNTIME_DIR", ".local/share/jupyter/runtime"),
    ("TORCH_HOME", ".cache/torch"),
    ("TORCHINDUCTOR_CACHE_DIR", ".cache/torchinductor"),
    ("TRITON_CACHE_DIR", ".cache/triton"),
    ("CUDA_CACHE_PATH", ".nv/ComputeCache"),
)
AIHW_CACHE = Path(".cache") / "aihw"  # under a home: aihw.models.digits.default_cache_dir() (not imported: torch)
_SAVED_KEY = pytest.StashKey[tuple[dict[str, str | None], str | None]]()


def isolated_environment(base: Path) -> dict[str, str]:
    """The variables that keep a run's writes inside ``base``: a home, its usual folders, and a TMPDIR."""
    home = base / "home"
    env = {"HOME": str(home), "TMPDIR": str(base / "tmp")}
    env.update({name: str(home / folder) for name, folder in _HOME_FOLDERS})
    return env


def _copy_cache(real: Path, temporary: Path) -> None:
    """Copy the finished files of the real weight cache (not another process's half-written ``.tmp<pid>``)."""
    temporary.mkdir(parents=True, exist_ok=True)
    if not real.is_dir():
        return
    for path in real.iterdir():
        if path.is_file() and ".tmp" not in path.name:
            try:
                shutil.copy2(path, temporary / path.name)
            except OSError:
                pass  # gone meanwhile (replaced by another run): the labs train it again if they need it


def pytest_sessionstart(session: pytest.Session) -> None:
    # The session's own TempPathFactory (what the tmp_path fixtures use), so the folders lie in this run's
    # numbered base temporary directory and are cleaned up with it.
    base = session.config._tmp_path_factory.mktemp("isolated", numbered=False)
    env = isolated_environment(base)
    for name in ("HOME", "TMPDIR", "MPLCONFIGDIR", "IPYTHONDIR", "JUPYTER_RUNTIME_DIR"):
        Path(env[name]).mkdir(parents=True, exist_ok=True)
    Path(env["JUPYTER_RUNTIME_DIR"]).chmod(0o700)
    _copy_cache(Path.home() / AIHW_CACHE, Path(env["HOME"]) / AIHW_CACHE)
    session.config.stash[_SAVED_KEY] = ({name: os.environ.get(name) for name in env}, tempfile.tempdir)
    os.environ.update(env)
    tempfile.tempdir = env["TMPDIR"]  # this process's tempfile calls, which read TMPDIR once only
    try:  # Hypothesis keeps its example database and caches under ./.hypothesis unless told otherwise
        from hypothesis.configuration import set_hypothesis_home_dir
    except ImportError:
        pass
    else:
        set_hypothesis_home_dir(base / "hypothesis")


@pytest.hookimpl(trylast=True)  # after session-scoped fixtures (servers, browsers) are torn down
def pytest_sessionfinish(session: pytest.Session) -> None:
    saved = session.config.stash.get(_SAVED_KEY, None)
    if saved is None:
        return
    variables, tempdir = saved
    for name, value in variables.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    tempfile.tempdir = tempdir
    try:
        from hypothesis.configuration import set_hypothesis_home_dir
    except ImportError:
        return
    set_hypothesis_home_dir(None)
