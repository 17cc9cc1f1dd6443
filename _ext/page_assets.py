"""Two fixes for the HTML pages (both found by tests/test_browser_book.py), one marker, and table captions.

* Sphinx 7.4 adds a script registered after the builder started (sphinx-thebe's inline
  ``const THEBE_JS_URL = ...``) twice, which is a JavaScript error on every page: drop repeats.
* pydata-sphinx-theme logs "Got invalid theme mode" on a first visit unless the page context sets ``default_mode``.
* Every executed page carries ``<meta name="aihw-execution" content="ok|failed">`` from myst-nb's execution
  record, so the browser tests fail on a page whose execution failed even when the build itself went on.
* Images without alt text (a notebook figure whose cell gives none) take it from the SVG's own ``<title>``,
  which :func:`aihw.plots.style.setup_book` writes into every figure it displays (:func:`alt_from_svg`).
* Tables (:func:`wrap_tables`): only the table scrolls, sideways on a phone and, past
  :data:`LONG_TABLE_ROWS` rows, downwards within a box of its own with its header row kept in view; the
  caption is taken out of the scrolling box and set above it, so it stays whole and visible.
"""

from __future__ import annotations

import re

LONG_TABLE_ROWS = 14  # body rows past which a table scrolls in a box of its own (its header row sticks)
_TABLE = re.compile(r'<div class="pst-scrollable-table-container">\s*<table(?P<attrs>[^>]*)>(?P<inner>.*?)</table>\s*</div>',
                    re.S)
_CAPTION = re.compile(r"<caption>(?P<text>.*?)</caption>\s*", re.S)
_ID = re.compile(r'\bid="(?P<id>[^"]+)"')


def wrap_tables(body: str) -> str:
    """Every theme-wrapped table of ``body`` with its caption above the scrolling box (see the module docstring)."""
    count = 0

    def wrap(match: re.Match) -> str:
        nonlocal count
        count += 1
        attrs, inner = match["attrs"], match["inner"]
        found = _ID.search(attrs)
        ident = (found["id"] if found else f"aihw-table-{count}") + "-caption"
        caption = _CAPTION.search(inner)
        rows = len(re.findall(r"<tr\b", inner.split("</thead>", 1)[-1]))
        classes = "pst-scrollable-table-container aihw-table-scroll" + (" aihw-table-long" if rows > LONG_TABLE_ROWS
                                                                       else "")
        if caption is None:
            return (f'<div class="aihw-table"><div class="{classes}" tabindex="0" role="region" '
                    f'aria-label="table"><table{attrs}>{inner}</table></div></div>')
        inner = inner[:caption.start()] + inner[caption.end():]
        return (f'<div class="aihw-table"><div class="aihw-table-caption" id="{ident}">{caption["text"]}</div>'
                f'<div class="{classes}" tabindex="0" role="region" aria-labelledby="{ident}">'
                f'<table{attrs} aria-labelledby="{ident}">{inner}</table></div></div>')

    return _TABLE.sub(wrap, body)


_SVG_TITLE = re.compile(r"<svg\b[^>]*>\s*<title>(?P<title>.*?)</title>", re.S)


def alt_from_svg(text: str) -> str | None:
    """The ``<title>`` directly inside an SVG's root element, unescaped (None without one)."""
    import html

    found = _SVG_TITLE.search(text[:20000])
    return html.unescape(found["title"]).strip() or None if found else None


def _image_alt(app, doctree, docname) -> None:
    from pathlib import Path

    from docutils import nodes

    for node in doctree.findall(nodes.image):
        if node.get("alt") or not str(node.get("uri", "")).endswith(".svg"):
            continue
        uri = str(node["uri"])
        for candidate in (Path(uri), Path(app.srcdir) / uri, Path(app.env.relfn2path(uri, docname)[1])):
            try:
                alt = alt_from_svg(candidate.read_text(encoding="utf-8", errors="replace"))
            except OSError:
                continue
            if alt:
                node["alt"] = alt
            break


def _tables(app, pagename, templatename, context, doctree) -> None:
    if "body" in context:
        context["body"] = wrap_tables(context["body"])


def _default_mode(app, config) -> None:
    config.html_context.setdefault("default_mode", "auto")


def _unique_scripts(app, pagename, templatename, context, doctree) -> None:
    seen, unique = set(), []
    for js in context.get("script_files", []):
        key = (getattr(js, "filename", None) or "", tuple(sorted(getattr(js, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    context["script_files"] = unique


def execution_state(exec_data) -> str | None:
    """"ok" or "failed" from myst-nb's execution record of a page; None for a page that was not executed."""
    if not exec_data:
        return None
    return "ok" if exec_data.get("succeeded") else "failed"


def _execution_marker(app, pagename, templatename, context, doctree) -> None:
    metadata = getattr(app.env, "nb_metadata", {}) or {}
    state = execution_state(metadata.get(pagename, {}).get("exec_data"))
    if state is not None:
        context["metatags"] = context.get("metatags", "") + f'\n<meta name="aihw-execution" content="{state}">'


def setup(app):
    app.connect("config-inited", _default_mode)
    app.connect("html-page-context", _unique_scripts, priority=900)
    app.connect("html-page-context", _execution_marker)
    app.connect("html-page-context", _tables)
    app.connect("doctree-resolved", _image_alt)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
