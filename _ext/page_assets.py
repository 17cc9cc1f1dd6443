"""Two fixes for the HTML pages (both found by tests/test_browser_book.py), and one marker.

* Sphinx 7.4 adds a script registered after the builder started (sphinx-thebe's inline
  ``const THEBE_JS_URL = ...``) twice, which is a JavaScript error on every page: drop repeats.
* pydata-sphinx-theme logs "Got invalid theme mode" on a first visit unless the page context sets ``default_mode``.
* Every executed page carries ``<meta name="aihw-execution" content="ok|failed">`` from myst-nb's execution
  record, so the browser tests fail on a page whose execution failed even when the build itself went on.
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
    return {"parallel_read_safe": True, "parallel_write_safe": True}
