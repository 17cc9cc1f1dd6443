"""The ``aihw`` command line: ``aihw hardware list``, ``aihw roofline ...``, ``aihw memory ...``.

Each subcommand lives in :mod:`aihw.commands` as a module with ``add_parser(subparsers)`` and
``run(args) -> int``. Bad input (a ValueError from any layer, or an argparse usage error) prints one line,
``aihw: error: ...``, to stderr and exits with status 2: no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

import aihw.commands
from aihw._validate import NonFiniteResult, TooLarge
from aihw.commands._args import HelpFormatter


class _OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus the error; the course's CLI prints just the error, on one line, with the
    program name once (``aihw: error: argument --params: ... (see aihw memory --help)``). ``--help`` shows
    every option's default."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        raise _UsageError(f"{message} (see {self.prog} --help)")


class _UsageError(Exception):
    pass


def command_names() -> list[str]:
    """The subcommands, one per module of :mod:`aihw.commands` (the module's name is the command's name)."""
    return sorted(info.name for info in pkgutil.iter_modules(aihw.commands.__path__)
                  if not info.name.startswith("_"))


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole CLI, or only subcommand ``only`` (imports just its module: fast, and what the browser's
    live calculators need, since other subcommands may import numpy)."""
    parser = _OneLineParser(prog="aihw", description="Calculators and experiments of the aihw course.")
    parser.add_argument("--version", action="version", version=f"aihw {aihw.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_OneLineParser)
    sub.required = True
    for name in [only] if only is not None else command_names():
        importlib.import_module(f"aihw.commands.{name}").add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status."""
    words = list(sys.argv[1:] if argv is None else argv)
    only = words[0] if words and words[0] in command_names() else None
    try:
        args = build_parser(only).parse_args(words)
        return int(args.run(args) or 0)
    except (_UsageError, ValueError, OverflowError) as exc:
        message = " ".join(str(exc).split())  # always one line
        if isinstance(exc, OverflowError):  # a number too large for a float somewhere in the arithmetic
            message = f"a number is too large to compute with ({message})"
        if isinstance(exc, (NonFiniteResult, TooLarge, OverflowError)):
            message += f"; input: aihw {' '.join(words)}"
        print(f"aihw: error: {message}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `aihw hardware list | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
