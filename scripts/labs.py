"""The labs' single source: each ``labs/<slug>_lab.py`` (jupytext py:percent) is paired with ``labs/<slug>_lab.ipynb``.

The ``.py`` is the source an instructor edits as text (or in JupyterLab, where jupytext keeps both files in step
through ``labs/jupytext.toml``); the ``.ipynb`` is what Colab, nbval and the book use, committed without outputs.

    python scripts/labs.py sync    # rewrite every .ipynb from its .py (set-up cell re-rendered from _config.yml)
    python scripts/labs.py check   # exit 1, naming the lab, when an .ipynb is out of step with its .py

The set-up cell (the first code cell) is rendered from ``repository.url`` in ``_config.yml``, the setting that also
drives the book's launch buttons, so the install line and the buttons cannot disagree. It installs the release
that matches the book: the git tag ``v<version>`` where ``<version>`` is ``aihw.__version__`` of this checkout
(README, "Releases"), never the moving ``main``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import jupytext
import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
LABS = ROOT / "labs"


def package_version() -> str:
    """``__version__`` of the package in this checkout (read from the source, not from what is installed)."""
    text = (ROOT / "src" / "aihw" / "__init__.py").read_text()
    found = re.search(r'^__version__ = "([^"]+)"', text, re.MULTILINE)
    if not found:
        raise ValueError("src/aihw/__init__.py has no __version__ = \"...\" line")
    return found.group(1)


def release_tag() -> str:
    """The git tag of the release this book and its labs belong to."""
    return f"v{package_version()}"


def setup_cell() -> str:
    """The first code cell of every lab, rendered from ``_config.yml`` and the package version."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    url = config["repository"]["url"]
    return (
        "# Set-up: on a GPU runtime (e.g. Colab) this installs the course package; a preinstalled torch is kept as is.\n"
        "try:\n"
        "    import aihw  # noqa: F401  (imported to check it is installed)\n"
        "except ImportError:\n"
        f'    %pip install -q "aihw[labs] @ git+{url}@{release_tag()}"  # the release this book is built from\n'
        "    import aihw  # noqa: F401"
    )


def _setup_prefix_end(source: str) -> int:
    """Index just past the set-up block (the try/except that imports aihw) in the first code cell."""
    block = re.match(r"(?:#[^\n]*\n)*try:\n    import aihw[^\n]*\nexcept ImportError:\n(?:    [^\n]*(?:\n|$))+", source)
    return block.end() - (1 if block and block.group(0).endswith("\n") else 0) if block else -1


def notebook_from_text(path: Path) -> nbformat.NotebookNode:
    """Read ``labs/<name>.py`` into a notebook: set-up cell re-rendered, stable cell ids, no outputs."""
    nb = jupytext.read(path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    if not code:
        raise ValueError(f"{path.name}: a lab needs at least one code cell (the set-up cell)")
    first = code[0]
    end = _setup_prefix_end(first.source)
    if end < 0:
        raise ValueError(f"{path.name}: the first code cell must start with the set-up block "
                         "(try: import aihw / except ImportError: %pip install ...)")
    first.source = setup_cell() + first.source[end:]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{path.stem}-{i:02d}"
        tags = list(cell.metadata.get("tags", []))  # kept: e.g. hide-input folds a solutions cell in the book
        cell.metadata = {"tags": tags} if tags else {}
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                   "language_info": {"name": "python"},
                   "jupytext": {"formats": "ipynb,py:percent"}}
    nb.nbformat, nb.nbformat_minor = 4, 5
    return nb


def _cells(nb) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source.strip(), tuple(c.metadata.get("tags", ()))) for c in nb.cells]


def sources() -> list[Path]:
    return sorted(p for p in LABS.glob("*_lab.py"))


def sync() -> None:
    for src in sources():
        nb = notebook_from_text(src)
        nbformat.write(nb, src.with_suffix(".ipynb"))
        jupytext.write(nb, src, fmt="py:percent")  # the set-up cell re-rendered in the text source too
        print(f"wrote {src.with_suffix('.ipynb').relative_to(ROOT)}")


def check() -> list[str]:
    """Problems, one line each: an .ipynb missing, stale, or carrying outputs; an .ipynb without a .py."""
    problems = []
    for src in sources():
        ipynb = src.with_suffix(".ipynb")
        if not ipynb.exists():
            problems.append(f"{ipynb.name} is missing: run `make labs`")
            continue
        committed = nbformat.read(ipynb, as_version=4)
        if _cells(committed) != _cells(notebook_from_text(src)):
            problems.append(f"{ipynb.name} is out of date with {src.name}: run `make labs` "
                            "(or save the lab in JupyterLab with jupytext installed)")
        if any(c.cell_type == "code" and (c.get("outputs") or c.get("execution_count")) for c in committed.cells):
            problems.append(f"{ipynb.name} has outputs: run `make labs` to strip them")
    orphans = {p.stem for p in LABS.glob("*.ipynb")} - {p.stem for p in sources()}
    problems += [f"labs/{name}.ipynb has no text source labs/{name}.py" for name in sorted(orphans)]
    return problems


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "sync":
        sync()
    elif command == "check":
        found = check()
        print("\n".join(found) or f"{len(sources())} labs in step with their text sources")
        sys.exit(1 if found else 0)
    else:
        sys.exit("usage: python scripts/labs.py sync|check")
