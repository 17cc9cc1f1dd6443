"""Serve MathJax 3 from the book itself, so math renders offline and without a CDN.

The files come from the PyPI package ``django-static-mathjax`` (MathJax 3.2.2, no dependencies), installed by
requirements.txt. Only the CHTML bundle, its fonts and the TeX extensions are copied into ``_static/mathjax``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

PARTS = ("tex-chtml.js", "output/chtml/fonts/woff-v2", "input/tex/extensions", "a11y", "ui")


def _es5_dir() -> Path:
    import mathjax  # the django-static-mathjax distribution

    return Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"


def _copy(app) -> None:
    if app.builder.format != "html":
        return
    src, dest = _es5_dir(), Path(app.outdir) / "_static" / "mathjax"
    for part in PARTS:
        source = src / part
        if source.is_dir():
            shutil.copytree(source, dest / part, dirs_exist_ok=True)
        elif source.exists():
            (dest / part).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / part)


def setup(app):
    if not (_es5_dir() / "tex-chtml.js").exists():
        raise RuntimeError("MathJax files not found: pip install django-static-mathjax (see requirements.txt)")
    app.config.mathjax_path = "mathjax/tex-chtml.js"
    app.connect("builder-inited", _copy)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
