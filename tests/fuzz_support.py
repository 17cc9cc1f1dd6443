"""What the fuzz suite (tests/test_fuzz_*.py) and its longer run (bench/bench_fuzz.py) share: hostile inputs, and
one checker per boundary that returns the kind of violation it saw (None: the input was handled).

The rules checked are the package's boundary rules: the command line answers every input with output or one short
printable error line (status 2 for bad input; 1, an internal error, is a violation), never a traceback, an
``inf``/``NaN`` or a raw control character; public calculators raise ValueError/TypeError (never AttributeError,
ZeroDivisionError, OverflowError, KeyError) with a message of the package's own, and return finite results; a model
file of any kind is read or refused with one ValueError, within seconds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import os
import re
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

from aihw import cli

CASE_TIMEOUT_S = 20  # one input handled within this (seconds), even on a loaded 2-core machine

HOSTILE_NUMBERS = ["", "0", "-1", "0.5", "-0.0", "1e-320", "5e-324", "1e309", "1e308", "inf", "-inf", "nan", "NaN",
                   "9" * 301, "7B", "4K", "1.5M", "2GiB", "10KB", "0x10", "1_000", " 3 ", "--", "-", "1e", "e5",
                   "\u0663", "1" * 5000, "2**64", "1/0", "True"]
HOSTILE_TEXT = ["", " ", "x" * 5000, "bad\x1b[31mname", "a\nb", "\x00", "a" * 300, "b" * 300 + ".toml",
                "/dev/zero", "/dev/urandom", "/tmp", "/nonexistent/model.toml", "../../etc/passwd", "llama", "gpt2",
                "h100", "H100 SXM", "bf16", "fp8", "--json", "-h", "\u202e\u0645", "%s%n", "{}", "[]"]
INTERNAL_TEXT = re.compile(r"unhashable type|math domain error|object has no attribute|not supported between "
                           r"instances|can't multiply sequence|unsupported operand|object is not (subscriptable|"
                           r"iterable|callable)|division by zero|int too large|invalid literal for")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")
NON_FINITE_TEXT = re.compile(r"\b(inf|-inf|nan|Infinity|NaN)\b")


class CaseTimeout(Exception):
    """One case ran past CASE_TIMEOUT_S."""


@contextlib.contextmanager
def time_limit(seconds: float = CASE_TIMEOUT_S) -> Iterator[None]:
    """Raise CaseTimeout in the main thread after ``seconds`` (SIGALRM; Unix, main thread only)."""
    def expire(signum: int, frame: object) -> None:
        raise CaseTimeout(f"over {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ----- the command line ------------------------------------------------------------------------------------------

def cli_options() -> dict[str, list[tuple[str, bool, list[str]]]]:
    """subcommand -> [(option, takes a value, its choices)] for every subcommand's options (help excluded)."""
    import argparse

    table: dict[str, list[tuple[str, bool, list[str]]]] = {}
    for name in cli.command_names():
        parser = cli.build_parser(only=name)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
        options = []
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction) or not action.option_strings:
                continue
            flag = max(action.option_strings, key=len)
            options.append((flag, action.nargs != 0, [str(c) for c in action.choices or []]))
        positionals = [a for a in sub._actions if not a.option_strings]
        for action in positionals:  # nested subcommands (hardware list/show) and positional values
            if isinstance(action, argparse._SubParsersAction):
                for inner in action.choices:
                    options.append((inner, False, []))
        table[name] = options
    return table


def check_cli(argv: list[str]) -> str | None:
    """Run ``aihw argv`` in this process; the kind of violation, or None."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with time_limit(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli.main(argv)
    except CaseTimeout:
        return "cli: hang"
    except SystemExit as exc:  # --help and argparse's own exits
        status = exc.code if isinstance(exc.code, int) else 2
    except BaseException:
        return "cli: exception escaped main"
    stdout, stderr = out.getvalue(), err.getvalue()
    if "Traceback" in stderr or "Traceback" in stdout:
        return "cli: traceback"
    if status == 1:
        return "cli: internal error"
    if status not in (0, 2):
        return f"cli: exit status {status}"
    if CONTROL.search(stdout) or CONTROL.search(stderr):
        return "cli: raw control character"
    if status == 2:
        if stdout.strip() and "usage:" not in stderr:
            return "cli: output and an error"
        lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith(("usage:", " "))]
        if len(lines) != 1:
            return "cli: error not one line"
        if len(lines[0]) > 500:
            return "cli: error line too long"
        return None
    if "--json" in argv and "-h" not in argv and "--help" not in argv and stdout.strip():
        try:
            json.loads(stdout, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
        except ValueError:
            return "cli: --json not strict JSON"
    elif NON_FINITE_TEXT.search(stdout) and "--help" not in argv and "-h" not in argv:
        return "cli: inf or nan in the text"
    return None


# ----- the Python API --------------------------------------------------------------------------------------------

BAD_VALUES: list[object] = [None, "junk", "", [], [1], {}, -1, -2.5, 0, 0.5, -0.5, float("nan"), float("inf"),
                            -float("inf"), 10**400, 1e-320, True, object(), b"x", (1, 2), "1"]


def _finite(value: object) -> bool:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, int):
        return True
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return all(_finite(getattr(value, f.name)) for f in dataclasses.fields(value)
                   if isinstance(getattr(value, f.name), (int, float, dict, list, tuple)))
    try:
        import numpy as np

        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            return bool(np.isfinite(value).all())
    except ImportError:
        pass
    return True


def api_targets() -> list[tuple[str, Callable[..., object], dict[str, object]]]:
    """(name, function, good keyword arguments) for the public calculators the fuzz replaces one argument of."""
    from aihw import planning as P
    from aihw import scaling
    from aihw.chips import roofline
    from aihw.formats import numerics
    from aihw.memory import estimator as M
    from aihw.serving import estimator as S
    from aihw.transformer.shapes import get_preset, resolve_model

    model = get_preset("llama-3-8b")

    def memory(**kw: object) -> object:
        return M.estimate(M.MemoryConfig(**kw))

    def serving(**kw: object) -> object:
        return S.estimate(S.ServingConfig(**kw))

    def plan_config(**kw: object) -> object:
        return P.PlanConfig(**kw)

    return [
        ("numerics.decode", lambda codes, fmt: numerics.decode(codes, fmt), {"codes": 3, "fmt": "fp8_e4m3"}),
        ("numerics.encode", lambda values, fmt: numerics.encode(values, fmt), {"values": 1.5, "fmt": "fp8_e4m3"}),
        ("numerics.max_value", numerics.max_value, {"fmt": "fp8_e5m2"}),
        ("serving.kv_bytes_per_token", S.kv_bytes_per_token, {"model": model, "bytes_per_value": 2}),
        ("serving.weights_bytes", S.weights_bytes, {"model": model, "precision": "bf16"}),
        ("serving.estimate", serving, {"model": "llama-3-8b", "batch": 8, "context": 4096}),
        ("memory.estimate", memory, {"model": "gpt2-small", "batch": 8, "seq": 1024}),
        ("planner.gemm_seconds", P.gemm_seconds,
         {"m": 4096, "n": 4096, "k": 4096, "peak": 1e15, "hbm": 3e12, "fraction": 0.7}),
        ("planner.attention_backward_factor", P.attention_backward_factor, {"attention": "eager"}),
        ("planner.PlanConfig", plan_config, {"model": "llama-2-7b", "global_batch": 64}),
        ("roofline.attainable_flops", roofline.attainable_flops,
         {"intensity": 100.0, "peak_flops": 1e15, "bandwidth": 3e12}),
        ("roofline.ridge_point", roofline.ridge_point, {"peak_flops": 1e15, "bandwidth": 3e12}),
        ("roofline.matmul_bytes", roofline.matmul_bytes, {"m": 64, "n": 64, "k": 64, "dtype": "bf16"}),
        ("scaling.training_flops", scaling.training_flops, {"params": 7e9, "tokens": 1e12}),
        ("scaling.compute_optimal_all", lambda flops: scaling.compute_optimal_all(flops), {"flops": 1e23}),
        ("shapes.resolve_model", resolve_model, {"name_or_path": "llama-3-8b"}),
    ]


def check_api(function: Callable[..., object], kwargs: dict[str, object]) -> str | None:
    """Call ``function(**kwargs)``; the kind of violation, or None (handled: a result, or a clean refusal)."""
    try:
        with time_limit():
            result = function(**kwargs)
    except CaseTimeout:
        return "api: hang"
    except (ValueError, TypeError) as exc:
        if INTERNAL_TEXT.search(str(exc)):
            return "api: Python-internal message"
        return None
    except Exception as exc:
        return f"api: {type(exc).__name__} leaked"
    if not _finite(result):
        return "api: inf or NaN returned"
    return None


# ----- model files -----------------------------------------------------------------------------------------------

def special_model_paths(folder: Path) -> list[str]:
    """Model files of every kind under ``folder``: FIFO, devices, a directory, a symlink loop, a big file, binary
    garbage, an over-long name, a NUL in the name, an unreadable file."""
    fifo = folder / "pipe.toml"
    if not fifo.exists():
        os.mkfifo(fifo)
    (folder / "dir.toml").mkdir(exist_ok=True)
    loop = folder / "loop.toml"
    if not loop.is_symlink():
        loop.symlink_to(loop)
    big = folder / "big.toml"
    if not big.exists():
        with open(big, "wb") as handle:
            handle.truncate(3 << 20)  # 3 MiB of NULs, over the 1 MiB limit
    (folder / "binary.toml").write_bytes(bytes(range(256)) * 4)
    (folder / "empty.toml").write_text("")
    unreadable = folder / "unreadable.toml"
    unreadable.write_text("hidden = 1\n")
    unreadable.chmod(0)
    return [str(fifo), "/dev/zero", "/dev/urandom", "/dev/null", str(folder / "dir.toml"), str(loop), str(big),
            str(folder / "binary.toml"), str(folder / "empty.toml"), str(unreadable), str(folder / ("n" * 300)),
            str(folder / ("m" * 300 + ".toml")), str(folder / "nul\x00.toml"), str(folder / "missing.toml")]


def check_model_file(path: str) -> str | None:
    """Load ``path`` as a model file; the kind of violation, or None (loaded, or one ValueError)."""
    from aihw.transformer.shapes import load_model_file

    try:
        with time_limit(10):
            load_model_file(path)
    except CaseTimeout:
        return "model file: hang"
    except ValueError as exc:
        text = str(exc)
        if "\n" in text or CONTROL.search(text.replace("\n", " ")) or len(text) > 2000:
            return "model file: message not one short printable line"
        return None
    except MemoryError:
        return "model file: MemoryError"
    except Exception as exc:
        return f"model file: {type(exc).__name__} leaked"
    return None


# ----- caches ----------------------------------------------------------------------------------------------------

def corrupt(data: bytes, position: int, mode: str, junk: bytes = b"") -> bytes:
    """``data`` damaged one way: "flip" a byte, "truncate", "append" junk, "replace" a span by junk, "empty"."""
    at = position % max(1, len(data))
    if mode == "flip":
        return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:] if data else b"\xff"
    if mode == "truncate":
        return data[:at]
    if mode == "append":
        return data + (junk or b"\x00")
    if mode == "replace":
        return data[:at] + junk + data[at + len(junk):]
    return b""


def check_weights(folder: Path, position: int, mode: str, junk: bytes = b"", target: str = "weights") -> str | None:
    """Save a small state, damage the weights file (or its digest), load it: the loader must return None (retrain)
    or exactly what was saved, never raise, never hand back different numbers."""
    import torch

    from aihw.models.digits import load_weights, save_weights

    torch.manual_seed(0)
    state = {"w": torch.randn(4, 4), "b": torch.zeros(4)}
    path = folder / "m.pt"
    for leftover in folder.glob("m.pt*"):
        leftover.unlink()
    if not save_weights(state, path):
        return "cache: weights not saved"
    damaged = path if target == "weights" else next(folder.glob("m.pt.sha256"))
    damaged.write_bytes(corrupt(damaged.read_bytes(), position, mode, junk))
    try:
        with time_limit():
            loaded = load_weights(path)
    except CaseTimeout:
        return "cache: hang"
    except Exception as exc:
        return f"cache: {type(exc).__name__} from damaged weights"
    if loaded is None:
        return None
    if set(loaded) != set(state) or not all(torch.equal(loaded[k], state[k]) for k in state):
        return "cache: damaged weights loaded"
    return None


def check_cached_json(folder: Path, content: bytes) -> str | None:
    """Write ``content`` over a cached JSON result; ``cached_json`` must recompute (or return the true result)."""
    from aihw.models.digits import cached_json

    for leftover in folder.glob("t-*"):
        leftover.unlink()
    calls = []

    def compute() -> dict:
        calls.append(1)
        return {"value": 3, "list": [1.5, 2]}

    try:
        with time_limit():
            cached_json("t", {"a": 1}, compute, cache_dir=folder)
            (cached,) = folder.glob("t-*.json")
            cached.write_bytes(content)
            result = cached_json("t", {"a": 1}, compute, cache_dir=folder)
    except CaseTimeout:
        return "cache: hang"
    except Exception as exc:
        return f"cache: {type(exc).__name__} from a damaged JSON cache"
    if result != {"value": 3, "list": [1.5, 2]}:
        return "cache: damaged JSON returned"
    if [p.name for p in folder.iterdir() if p.name.startswith("t-") and not p.name.endswith(".json")]:
        return "cache: temporary file left behind"
    return None


def shorten_case(case: object, limit: int = 120) -> str:
    """A case as one printable line of at most about ``limit`` characters (for reports)."""
    text = ascii(case)
    return text if len(text) <= limit else f"{text[:limit - 20]}...({len(text)} characters)"
