"""``live-calc``: a calculator of the ``aihw`` CLI placed in a page and run in the reader's browser, offline.

    :::{live-calc} memory
    :fields: model, precision, batch, seq, zero, dp
    :values: --model llama-2-7b --zero 1 --dp 8
    :show: total_bytes GB, per_device_bytes GB
    :bars: per_device_breakdown GB
    The static figure readers see without JavaScript (a glued figure, say).
    :::

The form's fields are read from the subcommand's own argparse options (help text, defaults, choices). On the first
change the page loads Pyodide's core (CPython in WebAssembly, from the book's own ``_static/pyodide/``) and the
package's wheel (``_static/live/``, built from the working tree at build time), then calls
:func:`aihw.cli.live.run_json`, the code behind ``aihw <command> --json``. Errors appear beside the field they name,
and the last good result stays. Without JavaScript, or when loading fails, the static content stays as it is.

When the Pyodide core is missing (no npm at set-up: see ``scripts/live_assets.py``), pages keep only the static
content and the build says so once; it does not fail.
"""

from __future__ import annotations

import html
import importlib.util
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

ROOT = Path(__file__).resolve().parents[1]
STATIC = Path(__file__).resolve().parent / "live_static"
logger = logging.getLogger(__name__)
UNITS = ("GB", "GiB", "s", "ms", "us", "TFLOP/s", "GB/s", "FLOP/B", "x", "")


def _assets():
    spec = importlib.util.spec_from_file_location("live_assets", ROOT / "scripts" / "live_assets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _wheel_name() -> str:
    import aihw

    return f"aihw-{aihw.__version__}-py3-none-any.whl"


def _pairs(text: str, option: str) -> list[list[str]]:
    """``"total_bytes GB, config.params"`` -> ``[["total_bytes", "GB"], ["config.params", ""]]``."""
    out = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        path, _, unit = item.partition(" ")
        unit = unit.strip()
        if unit not in UNITS:
            raise ValueError(f"live-calc :{option}: unit {unit!r} of {path!r} is not one of {', '.join(UNITS)}")
        out.append([path, unit])
    return out


def _field_html(field: dict, value: list[str] | bool | None, list_id: str) -> str:
    flag = html.escape(field["flag"])
    label = f'<span class="aihw-live-flag">{flag}</span>'
    title = html.escape(field["help"], quote=True)
    if field["kind"] == "flag":
        checked = " checked" if value else ""
        control = f'<input type="checkbox" data-flag="{flag}"{checked}>'
    else:
        values = value if isinstance(value, list) else [field["default"]] * field["nargs"]
        kind = "number" if field["kind"] == "number" and not field["choices"] else "text"
        datalist = f' list="{list_id}"' if field["choices"] else ""
        control = "".join(f'<input type="{"text" if kind == "text" else "text"}" inputmode='
                          f'"{"decimal" if kind == "number" else "text"}" data-flag="{flag}" '
                          f'value="{html.escape(str(v), quote=True)}"{datalist} size="{12 if kind == "text" else 7}">'
                          for v in values)
        if field["choices"]:
            control += f'<datalist id="{list_id}">' + "".join(
                f'<option value="{html.escape(c, quote=True)}">' for c in field["choices"]) + "</datalist>"
    return (f'<label class="aihw-live-field" data-flag="{flag}" data-kind="{field["kind"]}" title="{title}">'
            f'{label}{control}<span class="aihw-live-error" role="alert"></span></label>')


class LiveCalc(SphinxDirective):
    required_arguments = 1
    has_content = True
    option_spec = {"fields": directives.unchanged_required, "values": directives.unchanged,
                   "show": directives.unchanged_required, "bars": directives.unchanged,
                   "caption": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        from aihw.cli import live

        command = self.arguments[0]
        fallback = nodes.container(classes=["aihw-live-fallback"])
        self.state.nested_parse(self.content, self.content_offset, fallback)
        if not self.env.config.aihw_live_enabled:
            return [fallback]
        fields = live.form(command, [f.strip() for f in self.options["fields"].split(",") if f.strip()])
        values: dict[str, list[str] | bool] = {}
        tokens = shlex.split(self.options.get("values", ""))
        known = {f["flag"]: f for f in fields}
        i = 0
        while i < len(tokens):
            flag = tokens[i]
            if flag not in known:
                raise self.error(f"live-calc :values: {flag} is not one of the :fields: ({', '.join(known)})")
            n = 0 if known[flag]["kind"] == "flag" else known[flag]["nargs"]
            values[flag] = True if n == 0 else tokens[i + 1:i + 1 + n]
            i += 1 + n
        serial = self.env.new_serialno("live-calc")
        ids = f"aihw-live-{self.env.docname.replace('/', '-')}-{serial}"
        body = "".join(_field_html(f, values.get(f["flag"]), f"{ids}-{k}") for k, f in enumerate(fields))
        data = {"command": command, "wheel": _wheel_name(), "show": _pairs(self.options["show"], "show"),
                "bars": _pairs(self.options.get("bars", ""), "bars")}
        caption = html.escape(self.options.get("caption", f"aihw {command}, live"))
        panel = (
            f'<div class="aihw-live" id="{ids}" data-config="{html.escape(json.dumps(data), quote=True)}" '
            f'data-state="idle" hidden>'
            f'<div class="aihw-live-caption">{caption} '
            f'<span class="aihw-live-cli"><code>aihw {html.escape(command)} … --json</code></span></div>'
            f'<form class="aihw-live-form" onsubmit="return false">{body}'
            f'<button type="button" class="aihw-live-run">Compute</button></form>'
            f'<div class="aihw-live-status" aria-live="polite">Change a value (or press Compute) to run the '
            f"course's own Python in your browser: the first run loads about 12 MB, once.</div>"
            f'<table class="aihw-live-result"></table><div class="aihw-live-bars"></div></div>')
        self.env.metadata[self.env.docname]["aihw_live"] = True
        return [nodes.raw("", panel, format="html"), fallback]


def _config_inited(app, config) -> None:
    assets = _assets()
    config.aihw_live_enabled = assets.present()
    if not assets.present():
        logger.info(f"live calculators left out: the Pyodide {assets.VERSION} core is not in "
                    f"{assets.TARGET} (run `python scripts/live_assets.py fetch`, which needs npm)")
    config.html_static_path.append(str(STATIC))


def _page_context(app, pagename, templatename, context, doctree) -> None:
    if app.config.aihw_live_enabled and app.env.metadata.get(pagename, {}).get("aihw_live"):
        app.add_js_file("live_calc.js", defer="defer")
        app.add_css_file("live_calc.css")


def build_wheel(out_dir: Path) -> Path:
    """A pure-Python wheel of ``aihw`` from the working tree (built in a temporary copy, so no build/ here)."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "aihw"
        copy.mkdir()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(ROOT / name, copy / name)
        shutil.copytree(ROOT / "src" / "aihw", copy / "src" / "aihw",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                        "-q", "-w", str(out_dir), str(copy)], check=True, capture_output=True)
    return out_dir / _wheel_name()


def _build_finished(app, exception) -> None:
    if exception is not None or app.builder.format != "html" or not app.config.aihw_live_enabled:
        return
    assets = _assets()
    static = Path(app.outdir) / "_static"
    (static / "pyodide").mkdir(parents=True, exist_ok=True)
    for name in assets.FILES:
        shutil.copy2(assets.TARGET / name, static / "pyodide" / name)
    (static / "live").mkdir(exist_ok=True)
    for old in (static / "live").glob("aihw-*.whl"):
        old.unlink()
    wheel = build_wheel(static / "live")
    logger.info(f"live calculators: Pyodide {assets.VERSION} core and {wheel.name} copied into _static/")


def setup(app):
    app.add_config_value("aihw_live_enabled", False, "env")
    app.add_directive("live-calc", LiveCalc)
    app.connect("config-inited", _config_inited)
    app.connect("html-page-context", _page_context)
    app.connect("build-finished", _build_finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
