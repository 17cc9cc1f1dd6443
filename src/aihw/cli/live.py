"""Live calculators: the CLI's own ``--json`` code, run in the reader's browser (Pyodide) or here.

The book's static pages carry a form for some subcommands of ``aihw`` (see ``_ext/live_calc.py``). In the browser,
Pyodide (CPython in WebAssembly, standard library only) imports this module from the package's own wheel and
calls :func:`run_json` with the command line the form describes. That is the very function the terminal's
``aihw <command> ... --json`` runs, so the numbers in the page and in the terminal cannot drift apart, and a bad
input gets the same one-line message.

Standard library only, and so must be everything the live commands import: ``tests/test_live.py`` imports them
with numpy and torch blocked.
"""

from __future__ import annotations

import argparse
import io
import json
from collections.abc import Callable, Sequence
from contextlib import redirect_stderr, redirect_stdout

from aihw import cli

# The subcommands the book runs live (each must be standard-library only).
LIVE_COMMANDS: tuple[str, ...] = ("memory", "roofline", "serve", "plan", "scaling", "collectives", "choose")


def _presets() -> list[str]:
    from aihw.transformer.shapes import list_presets

    return list_presets()


def _chips() -> list[str]:
    from aihw.catalogue.hardware import list_chips

    return [chip.name for chip in list_chips()]


def _precisions() -> list[str]:
    from aihw.catalogue.hardware import PRECISIONS

    return list(PRECISIONS)


# The CLI's numeric argument types (aihw.cli.args), by the name argparse shows.
NUMBER_TYPES = ("number", "count", "byte size", "positive integer", "integer", "positive number")

# Suggested values for free-text options (shown as a drop-down list; any other text is still accepted).
SUGGESTIONS: dict[str, Callable[[], list[str]]] = {
    "--model": _presets, "--chip": _chips, "--precision": _precisions, "--kv-precision": _precisions,
    "--dtype": _precisions,
}


def _require_live(command: str) -> None:
    if command not in LIVE_COMMANDS:
        raise ValueError(f"{command!r} is not a live calculator; live: {', '.join(LIVE_COMMANDS)}")


def run(command: str, argv: Sequence[str]) -> dict:
    """Run ``aihw <command> <argv> --json``: ``{"ok": True, "result": ...}`` or ``{"ok": False, "error": line}``."""
    _require_live(command)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = cli.main([command, *argv, "--json"])
    if status == 0:  # cli.main turned every exception into a status and one line: nothing escapes to the page
        return {"ok": True, "result": json.loads(out.getvalue())}
    return {"ok": False, "error": err.getvalue().strip() or f"aihw {command} exited with status {status}"}


def run_json(command: str, argv_json: str) -> str:
    """:func:`run` with JSON in and out (what the page's JavaScript calls through Pyodide)."""
    try:
        argv = json.loads(argv_json) if isinstance(argv_json, str) else None
    except ValueError:  # not JSON at all
        argv = None
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or command not in LIVE_COMMANDS:
        return json.dumps({"ok": False, "error": "aihw: error: the page sent a malformed command line"})
    return json.dumps(run(command, argv), allow_nan=False)


def _subparser(command: str) -> argparse.ArgumentParser:
    parser = cli.build_parser(only=command)
    for action in parser._actions:  # argparse keeps subparsers here; there is no public accessor
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[command]
    raise ValueError(f"no subcommand {command!r}")


def form(command: str, fields: Sequence[str]) -> list[dict]:
    """The input fields of a live calculator: one dict per option (flag, label, default, kind, choices)."""
    _require_live(command)
    options = {flag: action for action in _subparser(command)._actions for flag in action.option_strings}
    spec = []
    for name in fields:
        flag = name if name.startswith("--") else f"--{name}"
        if flag not in options:
            raise ValueError(f"aihw {command} has no option {flag}; it has: {', '.join(sorted(options))}")
        action = options[flag]
        numeric = action.type in (int, float) or getattr(action.type, "__name__", "") in NUMBER_TYPES
        kind = "flag" if isinstance(action, argparse._StoreTrueAction) else "number" if numeric else "text"
        default = action.default if action.default not in (None, argparse.SUPPRESS) else ""
        nargs = action.nargs if isinstance(action.nargs, int) else 1
        spec.append({"flag": flag, "help": action.help or "", "kind": kind, "nargs": nargs,
                     "default": "" if kind == "flag" else str(default),
                     "choices": [str(c) for c in action.choices] if action.choices
                     else (SUGGESTIONS[flag]() if flag in SUGGESTIONS else [])})
    return spec
