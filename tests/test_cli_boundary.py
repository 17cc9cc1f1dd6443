"""The command line's boundary: every escaping exception becomes one line (2 for bad input, 1 for a bug), every
numeric option goes through one parser, and echoed values are short and printable."""

from __future__ import annotations

import json

import pytest

from aihw.cli import main
from aihw.cli.args import parse_numeric, shorten

LONG = "x" * 5000


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _one_error_line(code: int, out: str, err: str, status: int = 2) -> None:
    assert code == status and out == "", (code, out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert len(err) < 500 and "\x1b" not in err, err


@pytest.mark.parametrize("argv", [
    ("scaling", "--compute", "5e-324"),
    ("serve", "--model", "llama-3-8b", "--efficiency", "1e-320"),
    ("serve", "--model", "llama-3-8b", "--batch", "9" * 301),
    ("serve", "--model", "llama-3-8b", "--batch=--"),
    ("memory", "--params=--"),
    ("memory", "--params", "0.5"),
    ("memory", "--model", "a" * 300),
    ("memory", "--model", "b" * 300 + ".toml"),
    ("hardware", "show", LONG),
    ("memory", "--model", "bad\x1b[31mname"),
    ("roofline", "--chip", "h100", "--elementwise", "1e31"),
    ("plan", "--micro-batch", "4", "--micro-batches", "3"),
], ids=lambda argv: " ".join(a if len(a) < 20 else "<long>" for a in argv))
def test_concrete_cases_give_one_short_printable_line(capsys, argv):
    code, out, err = _run(capsys, *argv)
    _one_error_line(code, out, err)
    assert err.startswith("aihw: error: ")


def test_empty_value_names_the_option(capsys):
    code, _, err = _run(capsys, "memory", "--params=--")
    assert code == 2 and "--params" in err and "'--' is not a value" in err


def test_long_values_are_shortened_in_the_message(capsys):
    _, _, err = _run(capsys, "hardware", "show", LONG)
    assert "(5003 characters)" in err and LONG not in err


def test_control_characters_are_escaped(capsys):
    _, _, err = _run(capsys, "hardware", "show", "h\x1b[2J\x07")
    assert "\\x1b" in err and "\x07" not in err


def test_conflicting_pins_are_named(capsys):
    _, _, err = _run(capsys, "plan", "--micro-batch", "4", "--micro-batches", "3")
    assert "micro_batch=4" in err and "micro_batches=3" in err


@pytest.mark.parametrize(("value", "tokens"), [("4K", 4000), ("4k", 4000), ("4096", 4096), ("4_096", 4096)])
def test_serve_accepts_the_suffixes_every_command_accepts(capsys, value, tokens):
    code, out, _ = _run(capsys, "serve", "--model", "llama-3-8b", "--context", value, "--json")
    assert code == 0 and json.loads(out)["context"] == tokens


@pytest.mark.parametrize("argv", [
    ("scaling", "--params", "1e29", "--tokens", "1e29", "--chip", "h100", "--json"),
    ("scaling", "--params", "1e29", "--tokens", "1e29", "--chip", "h100"),
    ("serve", "--model", "llama-3-8b", "--efficiency", "1e-12", "--json"),
    ("serve", "--model", "llama-3-8b", "--efficiency", "1e-12"),
])
def test_scaling_and_serve_never_print_inf(capsys, argv):
    code, out, err = _run(capsys, *argv)
    for text in (out, err):
        assert "inf" not in text.replace("info", "") and "Infinity" not in text and "NaN" not in text
    if code == 0 and "--json" in argv:
        json.loads(out, parse_constant=lambda name: pytest.fail(name))


def test_internal_errors_are_one_line_with_status_1(capsys, monkeypatch):
    from aihw.cli.commands import roofline

    def broken(args):
        raise KeyError("boom")

    monkeypatch.setattr(roofline, "run", broken)
    code, out, err = _run(capsys, "roofline", "--chip", "h100")
    _one_error_line(code, out, err, status=1)
    assert err.startswith("aihw: internal error, please report (run with --debug for the traceback)")
    code, _, err = _run(capsys, "--debug", "roofline", "--chip", "h100")
    assert code == 1 and "Traceback" in err and "KeyError" in err


def test_debug_shows_the_traceback_of_bad_input(capsys):
    code, _, err = _run(capsys, "--debug", "memory", "--params", "0")
    assert code == 2 and "Traceback" in err and err.rstrip().splitlines()[-1].startswith("aihw: error:")


@pytest.mark.parametrize(("text", "kwargs", "match"), [
    ("2.5", {"integer": True, "minimum": 1}, "whole number"),
    ("0", {"minimum": 1}, ">= 1"),
    ("1e31", {}, "at most"),
    ("9" * 400, {}, "at most"),
    ("nan", {}, "expected a count"),
    ("inf", {}, "expected a count"),
    ("7Q", {}, "expected a count"),
])
def test_the_numeric_parser_refuses(text, kwargs, match):
    with pytest.raises(ValueError, match=match):
        parse_numeric(text, **kwargs)


def test_the_numeric_parser_reads_suffixes():
    assert parse_numeric("7B", integer=True, minimum=1) == 7e9
    assert parse_numeric("16GiB", kind="bytes") == 16 * 2**30


def test_shorten():
    assert shorten("a\x1bb") == "a\\x1bb"
    assert len(shorten("y" * 1000)) <= 100


# ----- model files: regular files only, bounded, clean errors -------------------------------------------------

def _special_files(tmp_path):
    import os

    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (2 << 20))
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    return {"fifo": str(fifo), "dev-zero": "/dev/zero", "dev-urandom": "/dev/urandom", "directory": str(folder),
            "too-big": str(big), "long-name": str(tmp_path / ("n" * 300 + ".toml")), "missing": str(tmp_path / "no.toml")}


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "dev-urandom", "directory", "too-big", "long-name", "missing"])
@pytest.mark.parametrize("command", ["memory", "serve", "plan"])
def test_special_model_files_are_refused_at_once(capsys, tmp_path, kind, command):
    import signal
    import time

    path = _special_files(tmp_path)[kind]
    signal.alarm(10)  # a FIFO read would block forever
    try:
        start = time.perf_counter()
        code, out, err = _run(capsys, command, "--model", path)
    finally:
        signal.alarm(0)
    _one_error_line(code, out, err)
    assert time.perf_counter() - start < 2.0


def test_control_characters_in_a_model_name_are_escaped_in_text(capsys, tmp_path):
    model = tmp_path / "m.toml"
    model.write_text('name = "evil\\u001b[2Jname"\nhidden = 64\nlayers = 2\nheads = 4\nvocab = 100\nmax_seq = 64\n')
    code, out, err = _run(capsys, "serve", "--model", str(model), "--context", "64")
    assert code == 0, err
    assert "\x1b" not in out and "\\x1b" in out


def test_live_calculator_reports_every_failure_inline(monkeypatch):
    from aihw.cli import live
    from aihw.cli.commands import roofline

    def broken(args):
        raise RuntimeError("bug")

    monkeypatch.setattr(roofline, "run", broken)
    reply = json.loads(live.run_json("roofline", json.dumps(["--chip", "h100"])))
    assert reply["ok"] is False and "internal error" in reply["error"]
    for bad in ("not json", "{}", "[1]"):
        assert json.loads(live.run_json("roofline", bad))["ok"] is False
    reply = json.loads(live.run_json("memory", json.dumps(["--model", "/dev/urandom"])))
    assert reply["ok"] is False and "regular file" in reply["error"]


def test_the_planner_search_is_bounded(tmp_path, monkeypatch):
    from aihw.planning import planner as P

    monkeypatch.setattr(P, "MAX_SEARCH_LAYOUTS", 10_000)  # this search sizes ~33,000 layouts

    model = tmp_path / "wide.toml"
    model.write_text("hidden = 1441440\nlayers = 5040\nheads = 10080\nvocab = 32000\nmax_seq = 4096\n")
    cfg = P.PlanConfig(model=str(model), cluster=P.Cluster(chips_per_node=8, nodes=5040), global_batch=161280,
                       micro_batch=None)
    with pytest.raises(ValueError, match="more than the bound"):
        P.plan(cfg)
