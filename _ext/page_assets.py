"""Two fixes for the HTML pages (both found by tests/test_browser_book.py).

* Sphinx 7.4 adds a script registered after the builder started (sphinx-thebe's inline
  ``const THEBE_JS_URL = ...``) twice, which is a JavaScript error on every page: drop repeats.
* pydata-sphinx-theme logs "Got invalid theme mode" on a first visit unless the page context sets ``default_mode``.
"""

from __future__ import annotations


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


def setup(app):
    app.connect("config-inited", _default_mode)
    app.connect("html-page-context", _unique_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
