"""The package's layering, declared once as the import-linter contract in pyproject.toml.

These tests read that contract: every part of ``aihw`` has a layer, ``lint-imports`` keeps the contract, and
``import aihw`` plus every module of the analytic layer loads neither torch, matplotlib nor ipywidgets.
"""

import pkgutil
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import aihw

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "matplotlib", "ipywidgets")


def _layers() -> list[list[str]]:
    """The layers contract's layers, top to bottom, each a list of module names."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["id"] == "layers")
    return [[name.strip() for name in layer.split(":")] for layer in contract["layers"]]


LAYERS = _layers()
ANALYTIC_PARTS = LAYERS[-1]


def _analytic_modules() -> list[str]:
    """Every module of the analytic layer (its packages walked), found in the package tree."""
    modules = []
    for part in ANALYTIC_PARTS:
        modules.append(part)
        spec_path = Path(aihw.__path__[0], *part.split(".")[1:])
        if spec_path.is_dir():
            modules += [info.name for info in pkgutil.walk_packages([str(spec_path)], prefix=part + ".")
                        if not info.name.endswith(".__main__")]  # importing it runs the command line
    return modules


def test_contract_puts_heavy_libraries_between_torch_layer_and_analytic_layer():
    assert LAYERS[0] == ["aihw.widgets"] and LAYERS[1] == ["aihw.plots"]
    assert sorted(LAYERS[-2]) == sorted(HEAVY)
    assert all(name.startswith("aihw.") for layer in LAYERS[:-2] + [LAYERS[-1]] for name in layer)


def test_every_part_of_aihw_has_a_layer():
    """A new module or package fails here until it is added to the contract (see pyproject.toml)."""
    declared = {name for layer in LAYERS for name in layer}
    parts = {f"aihw.{info.name}" for info in pkgutil.iter_modules(aihw.__path__)}
    missing = sorted(parts - declared)
    assert not missing, (f"{missing} have no layer: add each to [tool.importlinter] in pyproject.toml "
                         "(torch packages to the torch-experiments line, analytic ones to the last line)")
    stale = sorted(name for name in declared - parts if name.startswith("aihw."))
    assert not stale, f"the contract names modules that do not exist: {stale}"


@pytest.mark.skipif(shutil.which("lint-imports", path=str(Path(sys.executable).parent)) is None,
                    reason="import-linter is not installed (requirements.txt)")
def test_import_contract_is_kept():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    proc = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-1000:]


@pytest.mark.parametrize("module", ["aihw", *_analytic_modules()])
def test_analytic_modules_do_not_load_heavy_libraries(module):
    """At run time too: nothing the analytic layer imports (directly or not) pulls in a heavy library."""
    code = (f"import sys, {module}; heavy = [m for m in {HEAVY!r} if m in sys.modules]; "
            "print(','.join(heavy)); sys.exit(1 if heavy else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"{module} imported {proc.stdout.strip()} {proc.stderr[-500:]}"
