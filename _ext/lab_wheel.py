"""Publish the package wheel beside the book, so the labs' set-up cell can install the version the book was built with.

Every HTML build writes ``_static/wheels/aihw-<version>-py3-none-any.whl`` (built from the working tree, as the
live calculators' wheel is). Published, the book serves it at ``<html.baseurl>/_static/wheels/…``, the first
address the set-up cell of every lab tries (``scripts/labs.py``); the book and the package it installs cannot
then come from different commits.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)
FOLDER = ("_static", "wheels")


def _build_finished(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    from live_calc import build_wheel  # the same wheel builder as the live calculators (_ext/live_calc.py)

    out = Path(app.outdir).joinpath(*FOLDER)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("aihw-*.whl"):
        old.unlink()
    wheel = build_wheel(out)
    logger.info(f"labs: {wheel.name} published in {'/'.join(FOLDER)}/ for the labs' set-up cell")


def setup(app):
    app.connect("build-finished", _build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
