"""Regenerate src/aihw/inference/data/corpus.txt from the book's chapters (run at dev time, commit the result).

The corpus the inference chapter trains its draft and target models on: the prose of chapters/*.md (front
matter, code cells, directives' option lines and glue roles removed), ASCII only, so a wheel carries it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "aihw" / "inference" / "data" / "corpus.txt"
MAX_BYTES = 200_000


def prose(text: str) -> str:
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)  # front matter
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # code cells and directives
    text = re.sub(r"\{[a-z-]+\}`([^`]*)`", r"\1", text)  # {glue}`x`, {cite}`x` -> x
    text = re.sub(r"\$[^$]*\$", "", text)  # inline maths
    text = text.encode("ascii", "ignore").decode()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith((":", "(", "|"))]
    return "\n".join(lines)


def main() -> int:
    parts = [prose(p.read_text(encoding="utf-8")) for p in sorted((ROOT / "chapters").glob("*.md"))
             if p.stem not in ("bibliography", "glossary")]
    corpus = "\n".join(parts)[:MAX_BYTES]
    OUT.write_text(corpus + "\n", encoding="ascii")
    print(f"wrote {len(corpus):,} bytes to {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
