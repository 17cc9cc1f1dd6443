"""Colab opens only .ipynb files: drop its launch button from pages written as MyST markdown.

The chapters are MyST markdown notebooks; Binder and JupyterHub open them as notebooks through jupytext, Colab
cannot. The labs are .ipynb and keep all three buttons. Runs after sphinx-book-theme adds the buttons
(its priority is 501).
"""

from __future__ import annotations

from pathlib import Path


def _drop_colab(app, pagename, templatename, context, doctree) -> None:
    source = context.get("page_source_suffix") or Path(app.env.doc2path(pagename, False)).suffix
    if source == ".ipynb":
        return
    for group in context.get("header_buttons", []):
        if group.get("label") == "launch-buttons":
            group["buttons"] = [b for b in group["buttons"] if b.get("text") != "Colab"]


def setup(app):
    app.connect("html-page-context", _drop_colab, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
