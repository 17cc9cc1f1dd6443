"""The labs' single source: each ``labs/<slug>_lab.py`` (jupytext py:percent) is paired with ``labs/<slug>_lab.ipynb``.

The ``.py`` is the source an instructor edits as text (or in JupyterLab, where jupytext keeps both files in step
through ``labs/jupytext.toml``); the ``.ipynb`` is what Colab, nbval and the book use, committed without outputs.

    python scripts/labs.py sync    # rewrite every .ipynb from its .py (set-up cell re-rendered from _config.yml)
    python scripts/labs.py check   # exit 1, naming the lab, when an .ipynb is out of step with its .py
    python scripts/labs.py instructor [DIR]  # graded labs with the package's answers and worked solutions
                                             # (default _build/instructor; kept out of the book and the repository)

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
    """The git tag of the release this book and its labs belong to (created by ``make release``)."""
    return f"v{package_version()}"


def wheel_name() -> str:
    """The file name of the package wheel the book build publishes beside the book (``_static/wheels/``)."""
    return f"aihw-{package_version()}-py3-none-any.whl"


WHEEL_FOLDER = "_static/wheels"  # inside the built book: <html.baseurl>/_static/wheels/<wheel_name()>
KEPT = ("torch", "numpy", "matplotlib", "ipywidgets")  # a runtime's own builds, never replaced by the install
SETUP_END = "display(environment())"  # the set-up block ends with the line that shows the runtime


def book_url() -> str:
    """The book's published address, ``html.baseurl`` in ``_config.yml``, without the trailing slash."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    return config["html"]["baseurl"].rstrip("/")


def setup_cell() -> str:
    """The first code cell of every lab, rendered from ``_config.yml`` and the package version.

    Without ``aihw`` installed it installs the wheel of this version from the book's own address, falling back
    to the repository's release tag; every package of ``KEPT`` the runtime has is pinned to its own version
    (a pip constraints file), so the install adds only what is missing.
    """
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    repo = config["repository"]["url"]
    kept = ", ".join(f'"{name}"' for name in KEPT)
    return (
        "# Set-up: without the course package (a fresh Colab runtime, say) this installs the version this book was\n"
        "# built with, from the book's own site or else the repository; the runtime's torch, numpy, matplotlib and\n"
        "# ipywidgets are pinned as they are, so nothing of theirs is replaced.\n"
        "try:\n"
        "    import aihw  # noqa: F401  (imported to check it is installed)\n"
        "except ImportError:\n"
        "    import importlib\n"
        "    import subprocess\n"
        "    import sys\n"
        "    import tempfile\n"
        "    from importlib import metadata\n"
        f'    BOOK = "{book_url()}"  # where this book is published (html.baseurl in _config.yml)\n'
        f'    SOURCES = [f"{{BOOK}}/{WHEEL_FOLDER}/{wheel_name()}", "git+{repo}@{release_tag()}"]\n'
        '    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as keep:\n'
        f"        for name in ({kept}):\n"
        "            try:\n"
        '                keep.write(f"{name}=={metadata.version(name)}\\n")\n'
        "            except metadata.PackageNotFoundError:\n"
        "                pass\n"
        "    for source in SOURCES:\n"
        '        pip = [sys.executable, "-m", "pip", "install", "-q", "-c", keep.name, f"aihw[labs] @ {source}"]\n'
        "        done = subprocess.run(pip, capture_output=True, text=True)\n"
        "        if done.returncode == 0:\n"
        "            break\n"
        '        print(f"Could not install from {source}:", (done.stderr.strip().splitlines() or ["?"])[-1])\n'
        "    importlib.invalidate_caches()\n"
        "    import aihw  # noqa: F401\n"
        "from aihw.measure.environment import environment\n\n"
        f"{SETUP_END}  # this runtime in one block: versions, device, GPU and its catalogue chip"
    )


def _setup_prefix_end(source: str) -> int:
    """Index just past the set-up block: the try/except that imports aihw, then the runtime's block if present."""
    block = re.match(r"(?:#[^\n]*\n)*try:\n    import aihw[^\n]*\nexcept ImportError:\n(?:    [^\n]*(?:\n|$))+"
                     r"(?:from aihw\.measure\.environment import environment\n+" + re.escape(SETUP_END) + r"[^\n]*)?",
                     source)
    if not block:
        return -1
    return block.end() - (1 if block.group(0).endswith("\n") else 0)


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


def graded(src: Path):
    """The :class:`aihw.grading.Assignment` of the lab at ``src`` (its widget module's ``ASSIGNMENT``), or None."""
    import importlib

    module = importlib.import_module(f"aihw.widgets.{src.stem}")
    return getattr(module, "ASSIGNMENT", None)


def instructor_notebook(src: Path) -> nbformat.NotebookNode:
    """The instructor's (autograder's) version of a graded lab: every answer variable set to the package's value,
    and each exercise followed by its worked solution. Generated from the one source, never committed."""
    assignment = graded(src)
    if assignment is None:
        raise ValueError(f"{src.name} has no graded questions (ASSIGNMENT in aihw.widgets.{src.stem})")
    nb = notebook_from_text(src)
    key = assignment.key()
    cells = [nbformat.v4.new_markdown_cell(
        f"**Instructor version of {src.stem}** (answers and worked solutions from aihw {package_version()}; "
        "do not hand it out). `python scripts/grade.py` scores students' notebooks against the same key.")]
    for cell in nb.cells:
        cells.append(cell)
        if cell.cell_type != "code":
            continue
        for variable, value in key.items():
            cell.source = re.sub(rf"^{variable} = None\b", f"{variable} = {value!r}", cell.source, flags=re.MULTILINE)
        asked = [q for q in assignment.questions if f'grader.check("{q.name}"' in cell.source]
        shown: set[str] = set()
        for q in asked:
            text = q.worked()
            if text not in shown:  # two questions of one exercise share its worked solution
                shown.add(text)
                cells.append(nbformat.v4.new_markdown_cell(f"**Worked solution ({q.name}).** {text}"))
    for i, cell in enumerate(cells):
        cell["id"] = f"{src.stem}-instructor-{i:02d}"
    nb.cells = cells
    return nb


def write_instructor(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for src in sources():
        if graded(src) is not None:
            path = out / f"{src.stem}.ipynb"
            nbformat.write(instructor_notebook(src), path)
            written.append(path)
    return written


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "sync":
        sync()
    elif command == "check":
        found = check()
        print("\n".join(found) or f"{len(sources())} labs in step with their text sources")
        sys.exit(1 if found else 0)
    elif command == "instructor":
        target = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "_build" / "instructor"
        for path in write_instructor(target):
            print(f"wrote {path}")
    else:
        sys.exit("usage: python scripts/labs.py sync|check|instructor [DIR]")
