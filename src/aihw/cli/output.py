"""What every subcommand prints: strict JSON or text, never inf or NaN."""

from __future__ import annotations

import json

from aihw._validate import require_finite_result
from aihw.cli.args import shorten


def print_result(result: object, *, as_json: bool, text: str | None = None) -> None:
    """Print ``result`` as strict JSON (no NaN/Infinity), or ``text``; a result that overflowed (inf or NaN
    anywhere in it) raises NonFiniteResult instead, which the CLI reports as one line naming the input. Control
    characters in the text (a model file's name, say) are escaped, never sent raw to the terminal."""
    require_finite_result("result", result)
    if as_json:
        print(json.dumps(result, indent=2, allow_nan=False))
    else:
        print("\n".join(shorten(line, 10**6) for line in str(text).split("\n")))
