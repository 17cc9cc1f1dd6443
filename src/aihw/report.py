"""Small formatting helpers: tables as Markdown (for book pages) and plain text (for the CLI)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

Formatter = Callable[[object], str] | str


def _cell(value: object, fmt: Formatter | None) -> str:
    if value is None:
        return "–"
    if fmt is None:
        return str(value)
    return fmt(value) if callable(fmt) else format(value, fmt)


def markdown_table(rows: Sequence[Mapping[str, object]], columns: Mapping[str, str],
                   formats: Mapping[str, Formatter] | None = None, *, caption: str | None = None,
                   name: str | None = None) -> str:
    """Render ``rows`` as a Markdown table; ``columns`` maps row keys to header text.

    With ``caption`` the table is wrapped in a MyST ``{table}`` directive: numbered in the book ("Table 2.3"),
    captioned, and referable as ``name`` (e.g. ``tbl-memory-zero``) with ``{numref}``.
    """
    formats = formats or {}
    header = "| " + " | ".join(columns.values()) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    body = ["| " + " | ".join(_cell(r.get(k), formats.get(k)) for k in columns) + " |" for r in rows]
    table = "\n".join([header, rule, *body])
    if caption is None:
        return table
    options = f":name: {name}\n" if name else ""
    return f"::::{{table}} {' '.join(caption.split())}\n{options}\n{table}\n::::"
