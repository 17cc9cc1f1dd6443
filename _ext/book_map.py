"""The ``{book-map}`` directive: the map of the book (parts -> chapters -> labs) generated from ``_toc.yml`` at
build time, so a chapter added to the table of contents appears on the landing page without editing it.

Times are computed, not guessed: a chapter's reading time is its prose words at 150 words a minute (technical
prose with equations is read more slowly than the 200-250 of plain text; code cells excluded), plus a minute for
each figure and each table (a code cell that draws, a markdown table, a list-table); a lab's working time is 3
minutes per code cell (run, read the output, change a control). Both are rounded up to 5 minutes.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import yaml
from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx import addnodes

WORDS_PER_MINUTE = 150
MINUTES_PER_FIGURE_OR_TABLE = 1
MINUTES_PER_LAB_CELL = 3
UNTIMED_PARTS = {"Reference"}  # glossary and bibliography: looked up, not read through
CODE_CELL = re.compile(r"```\{code-cell\}.*?```", re.S)
FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
DRAWS = re.compile(r"\bplot_\w+\(|\bplt\.|\.plot\(|\bdiagram")  # a code cell that shows a figure
TABLE_RULE = re.compile(r"^\|[\s:|-]+\|\s*$", re.M)  # the |---|---| line under a markdown table's header


def _round5(minutes: float) -> int:
    return max(5, 5 * math.ceil(minutes / 5))


def reading_counts(path: Path) -> dict[str, int]:
    """Prose words (code cells and front matter left out), figures and tables of a MyST chapter."""
    text = FRONT_MATTER.sub("", path.read_text(encoding="utf-8"))
    figures = sum(bool(DRAWS.search(cell)) for cell in CODE_CELL.findall(text))
    prose = CODE_CELL.sub("", text)
    tables = len(TABLE_RULE.findall(prose)) + prose.count("{list-table}")
    return {"words": len(re.findall(r"[A-Za-z0-9][\w'’-]*", prose)), "figures": figures, "tables": tables}


def reading_minutes(path: Path) -> int:
    """Prose words at 150 words a minute plus a minute per figure and per table, rounded up to 5 minutes."""
    counts = reading_counts(path)
    return _round5(counts["words"] / WORDS_PER_MINUTE
                   + MINUTES_PER_FIGURE_OR_TABLE * (counts["figures"] + counts["tables"]))


def lab_minutes(path: Path) -> int:
    """3 minutes per code cell of a lab notebook."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return _round5(MINUTES_PER_LAB_CELL * sum(c["cell_type"] == "code" for c in cells))


def book_map(root: Path) -> list[dict]:
    """[{part, chapter, chapter_min, lab, lab_min}] in the order of ``_toc.yml`` (chapters with a slug's lab)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    rows = []
    for part in toc.get("parts", []):
        files = [c["file"] for c in part.get("chapters", [])]
        for file in files:
            if not file.startswith("chapters/"):
                continue
            slug = file.split("/", 1)[1]
            lab = f"labs/{slug}_lab"
            chapter_path = root / f"{file}.md"
            timed = part.get("caption") not in UNTIMED_PARTS
            row = {"part": part.get("caption", ""), "chapter": file,
                   "chapter_min": reading_minutes(chapter_path) if chapter_path.exists() and timed else None,
                   "lab": lab if lab in files and (root / f"{lab}.ipynb").exists() else None, "lab_min": None}
            if row["lab"]:
                row["lab_min"] = lab_minutes(root / f"{lab}.ipynb")
            rows.append(row)
    return rows


def _doc_link(docname: str) -> nodes.Node:
    ref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget=f"/{docname}", refexplicit=False,
                                refwarn=True)
    ref += nodes.inline("", docname)
    return ref


def _entry(*children: nodes.Node | str) -> nodes.entry:
    para = nodes.paragraph()
    for child in children:
        para += nodes.Text(child) if isinstance(child, str) else child
    entry = nodes.entry()
    entry += para
    return entry


class BookMap(Directive):
    has_content = False

    def run(self):
        env = self.state.document.settings.env
        rows = book_map(Path(env.srcdir))
        for row in rows:
            env.note_dependency(str(Path(env.srcdir) / f"{row['chapter']}.md"))
        env.note_dependency(str(Path(env.srcdir) / "_toc.yml"))
        table = nodes.table(classes=["book-map"])
        title = nodes.title(text="Map of the book: parts, chapters and labs, with the time each takes")
        table += title
        group = nodes.tgroup(cols=4)
        table += group
        for width in (14, 40, 36, 10):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        header = nodes.row()
        for text in ("part", "chapter (reading time)", "lab (working time)", "total"):
            header += _entry(text)
        head += header
        group += head
        body = nodes.tbody()
        last_part = None
        for row in rows:
            tr = nodes.row()
            tr += _entry(row["part"] if row["part"] != last_part else "")
            last_part = row["part"]
            timing = f" ({row['chapter_min']} min)" if row["chapter_min"] else ""
            tr += _entry(_doc_link(row["chapter"]), timing)
            tr += _entry(_doc_link(row["lab"]), f" ({row['lab_min']} min)") if row["lab"] else _entry("–")
            minutes = (row["chapter_min"] or 0) + (row["lab_min"] or 0)
            tr += _entry(f"{minutes} min" if minutes else "–")
            body += tr
        total = sum((r["chapter_min"] or 0) + (r["lab_min"] or 0) for r in rows)
        tr = nodes.row()
        tr += _entry("")
        tr += _entry(f"{sum(1 for r in rows if r['chapter_min'])} chapters")
        tr += _entry(f"{sum(1 for r in rows if r['lab'])} labs")
        tr += _entry(f"about {total / 60:.0f} h")
        body += tr
        group += body
        table["ids"].append("tbl-book-map")
        return [table]


def setup(app):
    app.add_directive("book-map", BookMap)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
