"""Grade submitted lab notebooks: run each one, read its answer variables, score them with the package's key.

    python scripts/grade.py submissions/*.ipynb            # one line per notebook: total / possible
    python scripts/grade.py --json grades.json a.ipynb ...  # and every question's points, as JSON

The lab is read from the notebook (its ``grader = <slug>.ASSIGNMENT`` line), the expected values are computed by
the package at grading time (:mod:`aihw.grading`), never read from the notebook, so a learner cannot change them.
A notebook whose cells fail still runs to the end (``allow_errors``): answers given before the failure count.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

MARK = "AIHW-ANSWERS "


def assignment_of(nb: nbformat.NotebookNode):
    """The lab's :class:`aihw.grading.Assignment`, named by the notebook's ``grader = <slug>.ASSIGNMENT`` line."""
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    found = re.search(r"^grader = (\w+_lab)\.ASSIGNMENT", source, re.MULTILINE)
    if not found:
        raise ValueError("not a graded lab: no `grader = <lab>.ASSIGNMENT` line")
    return importlib.import_module(f"aihw.widgets.{found.group(1)}").ASSIGNMENT


def _reader(variables: tuple[str, ...]) -> str:
    return ("import json as _json\n"
            "def _plain(v):\n"
            "    v = v.item() if hasattr(v, 'item') else v\n"
            "    return v if isinstance(v, (int, float, str, type(None))) else repr(v)\n"
            f"print({MARK!r} + _json.dumps({{v: _plain(globals().get(v)) for v in {list(variables)!r}}}))")


def answers_of(path: Path, *, timeout: int = 600) -> tuple[object, dict]:
    """(the lab's assignment, variable -> answer) after running the notebook at ``path`` in a fresh kernel."""
    nb = nbformat.read(path, as_version=4)
    assignment = assignment_of(nb)
    nb.cells.append(nbformat.v4.new_code_cell(_reader(assignment.variables)))
    NotebookClient(nb, timeout=timeout, allow_errors=True, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    for out in nb.cells[-1].get("outputs", []):
        for line in out.get("text", "").splitlines():
            if line.startswith(MARK):
                return assignment, json.loads(line[len(MARK):])
    raise RuntimeError(f"{path}: the answers could not be read (did the kernel die?)")


def grade_notebook(path: Path, *, timeout: int = 600):
    """The :class:`aihw.grading.Grade` of the notebook at ``path``."""
    assignment, answers = answers_of(path, timeout=timeout)
    return assignment.grade(answers)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="grade.py", description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--json", type=Path, help="also write every question's points here")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell (default 600)")
    args = parser.parse_args(argv)
    results = {}
    for path in args.notebooks:
        try:
            grade = grade_notebook(path, timeout=args.timeout)
        except (OSError, ValueError, RuntimeError) as error:
            print(f"{path}: error: {error}", file=sys.stderr)
            return 1
        results[str(path)] = grade.as_dict()
        print(f"{path}: {grade.total:g} / {grade.possible:g}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
