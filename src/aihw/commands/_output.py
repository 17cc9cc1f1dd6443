"""What every subcommand prints: strict JSON or text, never inf or NaN."""

from __future__ import annotations

import json

from aihw._validate import require_finite_result


def print_result(result: object, *, as_json: bool, text: str | None = None) -> None:
    """Print ``result`` as strict JSON (no NaN/Infinity), or ``text``; a result that overflowed (inf or NaN
    anywhere in it) raises NonFiniteResult instead, which the CLI reports as one line naming the input."""
    require_finite_result("result", result)
    print(json.dumps(result, indent=2, allow_nan=False) if as_json else text)
