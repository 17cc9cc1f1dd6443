"""Live calculators: standard library only, and the very code behind ``aihw <command> --json``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from aihw import cli
from aihw.cli import live


def _cli_json(argv: list[str]) -> dict:
    proc = subprocess.run([sys.executable, "-m", "aihw.cli", *argv, "--json"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("command", live.LIVE_COMMANDS)
def test_live_commands_import_only_the_standard_library(command):
    """What Pyodide's core has: no numpy, no torch, no matplotlib (they are blocked in the child)."""
    code = ("import sys\n"
            "for m in ('numpy', 'torch', 'matplotlib', 'ipywidgets'): sys.modules[m] = None\n"
            "import aihw.cli.live\n"
            f"spec = aihw.cli.live.form({command!r}, [])\n"
            f"aihw.cli.build_parser(only={command!r})\n"
            "import importlib; importlib.import_module('aihw.cli.commands.' + " + repr(command) + ")\n"
            "print('ok')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


@pytest.mark.parametrize("command, argv", [
    ("memory", ["--model", "llama-2-70b", "--zero", "3", "--dp", "64", "--recompute", "full", "--chip", "h100"]),
    ("memory", ["--params", "7e9", "--mode", "infer", "--batch", "8", "--seq", "4096"]),
    ("roofline", ["--chip", "v5e", "--dtype", "bf16", "--matmul", "1", "8192", "8192"]),
])
def test_live_run_equals_the_cli_json(command, argv):
    got = live.run(command, argv)
    assert got["ok"], got
    assert got["result"] == _cli_json([command, *argv])
    assert json.loads(live.run_json(command, json.dumps(argv))) == got


def test_bad_input_is_the_cli_one_line_message():
    got = live.run("memory", ["--model", "llama-9"])
    proc = subprocess.run([sys.executable, "-m", "aihw.cli", "memory", "--model", "llama-9", "--json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert got == {"ok": False, "error": proc.stderr.strip()}
    assert "\n" not in got["error"] and got["error"].startswith("aihw: error:")
    assert json.loads(live.run_json("memory", '"--model x"'))["error"].startswith("aihw: error:")


def test_only_live_commands_run_and_forms_come_from_argparse():
    with pytest.raises(ValueError, match="not a live calculator"):
        live.run("hardware", ["list"])
    spec = {f["flag"]: f for f in live.form("memory", ["model", "batch", "dropout"])}
    assert spec["--batch"]["kind"] == "number" and spec["--batch"]["default"] == "1"
    assert spec["--dropout"]["kind"] == "flag"
    assert "llama-2-7b" in spec["--model"]["choices"]
    assert live.form("roofline", ["matmul"])[0]["nargs"] == 3
    with pytest.raises(ValueError, match="has no option --width"):
        live.form("memory", ["width"])


def test_cli_loads_only_the_subcommand_it_runs():
    assert set(live.LIVE_COMMANDS) <= set(cli.command_names())
    parser = cli.build_parser(only="memory")
    assert parser.parse_args(["memory", "--params", "1e9"]).command == "memory"
