"""The package's layering: `import aihw` and the analytic modules load neither torch, matplotlib nor ipywidgets."""

import importlib.util
import pkgutil
import subprocess
import sys

import pytest

import aihw

# The analytic layer: standard library + numpy only (the CLI sits on it and must start fast).
ANALYTIC = ["aihw", "aihw.catalogue.hardware", "aihw.precision", "aihw.roofline", "aihw.systolic", "aihw.simt",
            "aihw.exercises", "aihw.catalogue.compare", "aihw.report", "aihw._validate", "aihw.scaling", "aihw.memory",
            "aihw.model_presets", "aihw.memory_fit", "aihw.collective_cost", "aihw.pipeline_sim", "aihw.planner",
            "aihw.catalogue.networks",
            "aihw.cli"]
ANALYTIC = [m for m in ANALYTIC if importlib.util.find_spec(m) is not None]
HEAVY = ("torch", "matplotlib", "ipywidgets")


@pytest.mark.parametrize("module", ANALYTIC)
def test_analytic_modules_do_not_import_heavy_layers(module):
    code = (f"import sys, {module}; heavy = [m for m in {HEAVY!r} if m in sys.modules]; "
            "print(','.join(heavy)); sys.exit(1 if heavy else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"{module} imported {proc.stdout.strip()} {proc.stderr[-500:]}"


def test_nothing_imports_upward():
    """Analytic and torch modules never import plots or widgets (checked on the source text)."""
    root = aihw.__path__[0]
    offenders = []
    for info in pkgutil.walk_packages([root], prefix="aihw."):
        if info.name.startswith(("aihw.plots", "aihw.widgets")):
            continue
        path = info.module_finder.find_spec(info.name).origin
        text = open(path, encoding="utf-8").read()
        if "aihw.plots" in text or "aihw.widgets" in text:
            offenders.append(info.name)
    assert not offenders, f"these modules import the plotting/widget layer: {offenders}"
