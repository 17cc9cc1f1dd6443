"""The ``aihw`` command line: ``aihw hardware list``, ``aihw roofline ...``, ``aihw memory ...``.

Each subcommand lives in :mod:`aihw.cli.commands` as a module with ``add_parser(subparsers)`` and
``run(args) -> int``. Bad input (a ValueError or TypeError from any layer, an OSError on a path the user gave,
or an argparse usage error) prints one line, ``aihw: error: ...``, to stderr and exits with status 2; anything
else is a bug: one line, ``aihw: internal error, please report ...``, and status 1. No traceback, unless asked
for with ``aihw --debug COMMAND ...``. Echoed values are shortened and their control characters escaped.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import sys
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

import aihw.cli.commands
from aihw._validate import NonFiniteResult, TooLarge
from aihw.cli.args import HelpFormatter, shorten


class _OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus the error; the course's CLI prints just the error, on one line, with the
    program name once (``aihw: error: argument --params: ... (see aihw memory --help)``). ``--help`` shows
    every option's default."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see {self.prog} --help)")


class _UsageError(Exception):
    pass


def command_names() -> list[str]:
    """The subcommands, one per module of :mod:`aihw.cli.commands` (the module's name is the command's name)."""
    return sorted(info.name for info in pkgutil.iter_modules(aihw.cli.commands.__path__)
                  if not info.name.startswith("_"))


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole CLI, or only subcommand ``only`` (imports just its module: fast, and what the browser's
    live calculators need, since other subcommands may import numpy)."""
    parser = _OneLineParser(prog="aihw", description="Calculators and experiments of the aihw course.")
    parser.add_argument("--version", action="version", version=f"aihw {aihw.__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error (before COMMAND)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_OneLineParser)
    sub.required = True
    for name in [only] if only is not None else command_names():
        importlib.import_module(f"aihw.cli.commands.{name}").add_parser(sub)
    return parser


MESSAGE_LIMIT = 400
"""The longest error line (characters); a longer message is cut, each value in it already shortened."""

_LONG_WORD = re.compile(r"\S{81,}")
_EMPTY_VALUE = re.compile(r"^(--[A-Za-z0-9][-A-Za-z0-9]*)=--$")


def _one_line(message: str) -> str:
    """``message`` on one line, control characters escaped, every word over 80 characters shortened."""
    text = shorten(" ".join(str(message).split()), 10**9)
    text = _LONG_WORD.sub(lambda m: shorten(m.group(0)), text)
    return text if len(text) <= MESSAGE_LIMIT else f"{text[:MESSAGE_LIMIT - 20]}...(cut)"


def _command_line(words: Sequence[str]) -> str:
    return _one_line("aihw " + " ".join(shorten(w) for w in words))


def _check_words(words: Sequence[str]) -> None:
    """argparse turns ``--batch=--`` into an empty list, which no command expects: refuse it here."""
    for word in words:
        match = _EMPTY_VALUE.match(word)
        if match:
            raise _UsageError(f"argument {match.group(1)}: '--' is not a value; give a value after "
                              f"{match.group(1)}=")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit status (0 ok, 2 bad input, 1 internal error)."""
    words = list(sys.argv[1:] if argv is None else argv)
    debug = False
    while words and words[0] == "--debug":
        debug, words = True, words[1:]
    only = words[0] if words and words[0] in command_names() else None
    try:
        _check_words(words)
        args = build_parser(only).parse_args(words)
        return int(args.run(args) or 0)
    except BrokenPipeError:  # `aihw hardware list | head`
        return 0
    except KeyboardInterrupt:
        print("aihw: interrupted", file=sys.stderr)
        return 130
    except (_UsageError, ValueError, TypeError, OverflowError, OSError) as exc:
        if debug:
            traceback.print_exc()
        message = _one_line(str(exc)) or type(exc).__name__
        if isinstance(exc, OverflowError):  # a number too large for a float somewhere in the arithmetic
            message = f"a number is too large to compute with ({message})"
        if isinstance(exc, (NonFiniteResult, TooLarge, OverflowError)):
            message += f"; input: {_command_line(words)}"
        print(f"aihw: error: {message}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: one line, the traceback only with --debug
        if debug:
            traceback.print_exc()
        print(f"aihw: internal error, please report (run with --debug for the traceback): "
              f"{type(exc).__name__}: {_one_line(str(exc))}; input: {_command_line(words)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
