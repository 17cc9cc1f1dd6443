"""Shared pieces of the lab generators (scripts/make_lab_*.py): the set-up cell and writing the notebook.

The install line reads the repository URL from _config.yml, the one setting that also drives the book's launch
buttons. Run a generator from the repository root: `python scripts/make_lab_roofline.py`.
"""

from __future__ import annotations

from pathlib import Path

import nbformat as nbf
import yaml

ROOT = Path(__file__).resolve().parents[1]
REPO_URL = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]

SETUP = f'''# Set-up: on a GPU runtime (e.g. Colab) this installs the course package; a preinstalled torch is kept as is.
try:
    import aihw  # noqa: F401  (imported to check it is installed)
except ImportError:
    %pip install -q "aihw[labs] @ git+{REPO_URL}"
    import aihw  # noqa: F401
'''

md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell


def write_lab(name: str, cells: list) -> Path:
    """Write labs/<name>.ipynb without outputs, with the python3 kernel and stable cell ids (clean diffs)."""
    for i, cell in enumerate(cells):
        cell["id"] = f"{name}-{i:02d}"
    nb = nbf.v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"}})
    path = ROOT / "labs" / f"{name}.ipynb"
    nbf.write(nb, path)
    return path
