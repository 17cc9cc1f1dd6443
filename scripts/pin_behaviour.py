"""Record what the command line prints over a broad set of inputs, and compare two recordings.

Before code is moved or rewritten, record today's behaviour; after, record again and compare: every difference is
either a bug the change fixed (list it with old and new values) or a regression.

    python scripts/pin_behaviour.py record before.json      # every case: exit status, stdout, stderr
    python scripts/pin_behaviour.py compare before.json after.json
    python scripts/pin_behaviour.py glue glue.json         # every glued value of the last book build

The glued values are read from the build's execution cache (``_build/.jupyter_cache``); compare two such files
the same way (measured values differ between builds; calculated ones must not). The cases run in this process through ``aihw.cli.main`` (the console script's own entry point).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import sys
from pathlib import Path

MODELS = ["gpt2-small", "gpt2-xl", "llama-2-7b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "mistral-7b",
          "mixtral-8x7b"]
CHIPS = ["t4", "l4", "a100-80gb-sxm", "h100-sxm", "h200", "b200", "mi300x", "tpu-v4", "tpu-v5e", "tpu-v5p",
         "tpu7x"]


def cases() -> list[list[str]]:
    out: list[list[str]] = [["hardware", "list"], ["hardware", "list", "--json"]]
    out += [["hardware", "show", c, "--json"] for c in CHIPS]
    for chip, dtype in itertools.product(CHIPS, ["fp32", "bf16", "fp8", "int8"]):
        out.append(["roofline", "--chip", chip, "--dtype", dtype, "--matmul", "4096", "4096", "4096", "--json"])
        out.append(["roofline", "--chip", chip, "--dtype", dtype, "--intensity", "50", "--json"])
    for model, prec in itertools.product(MODELS, ["fp32", "bf16", "int8", "int4"]):
        out.append(["memory", "--model", model, "--precision", prec, "--mode", "infer", "--batch", "8", "--json"])
        out.append(["memory", "--model", model, "--precision", prec, "--mode", "train", "--seq", "1024",
                    "--json"])
    for model, (tp, pp, dp, zero) in itertools.product(MODELS, [(2, 1, 4, 1), (8, 2, 2, 3), (1, 1, 8, 2)]):
        out.append(["memory", "--model", model, "--tp", str(tp), "--pp", str(pp), "--dp", str(dp), "--zero",
                    str(zero), "--seq", "2048", "--recompute", "selective", "--json"])
    for model, tp in itertools.product(["llama-3-70b", "llama-2-70b", "llama-3-8b"], [1, 8, 16]):
        out.append(["memory", "--model", model, "--mode", "infer", "--tp", str(tp), "--json"])
        out.append(["serve", "--model", model, "--chip", "h100-sxm", "--tp", str(tp), "--batch", "16", "--json"])
    out += [["memory", "--params", p, "--chip", c, "--json"] for p in ("7B", "70e9") for c in ("h100-sxm", "t4")]
    for model, chip, batch, prec in itertools.product(MODELS, ["h100-sxm", "a100-80gb-sxm", "tpu-v5e", "l4"],
                                                      ["1", "32"], ["bf16", "int8"]):
        out.append(["serve", "--model", model, "--chip", chip, "--batch", batch, "--precision", prec,
                    "--context", "2048", "--json"])
    for params, ranks, chip in itertools.product(["1e9", "7B", "70B"], ["2", "8"], ["h100-sxm", "a100-80gb-sxm"]):
        out.append(["collectives", "--params", params, "--ranks", ranks, "--chip", chip, "--nodes", "4", "--json"])
    out.append(["collectives", "--bytes", "512MiB", "--json"])
    for model, chip, nodes in itertools.product(["llama-2-7b", "llama-2-13b", "llama-3-70b", "gpt2-xl",
                                                  "mixtral-8x7b"], ["h100-sxm", "a100-80gb-sxm", "tpu-v5p"],
                                                 ["1", "4", "32"]):
        out.append(["plan", "--model", model, "--chip", chip, "--nodes", nodes, "--global-batch", "512",
                    "--seq", "2048", "--json"])
    out += [["scaling", "--compute", c, "--json"] for c in ("1e21", "5.76e23", "3.8e25")]
    out += [["scaling", "--params", "7B", "--tokens", "2T", "--chip", c, "--chips", "256", "--json"]
            for c in ("h100-sxm", "tpu-v5p")]
    # bad input: one line each, exit 2
    out += [["memory", "--model", "llama-9"], ["memory", "--params", "-1"], ["roofline", "--chip", "h1000"],
            ["serve", "--model", "llama-3-70b", "--tp", "3"], ["plan", "--model", "llama-2-7b", "--tp", "5"],
            ["memory", "--model", "llama-2-7b", "--precision", "bfloat16"],
            ["memory", "--model", "llama-2-7b", "--precision", "fp8"], ["scaling", "--compute", "0"],
            ["collectives", "--params", "7B", "--nodes", "0"]]
    return out


def run_case(argv: list[str]) -> dict:
    from aihw.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # --help, --version
            code = exc.code
        except Exception as exc:  # a traceback is behaviour too
            code, err = "exception", io.StringIO(f"{type(exc).__name__}: {exc}")
    return {"argv": argv, "code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def record(path: Path) -> None:
    rows = [run_case(argv) for argv in cases()]
    path.write_text(json.dumps(rows, indent=1))
    print(f"{len(rows)} cases recorded in {path}")


def record_glue(path: Path, cache: Path = Path("_build/.jupyter_cache")) -> None:
    """Every glued value (its text/plain) of every page in the book build's execution cache, by page and name."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(cache / "global.db")) as db:
        pages = db.execute("select hashkey, uri from nbcache").fetchall()
    rows = []
    for key, uri in pages:
        nb = json.loads((cache / "executed" / key / "base.ipynb").read_text())
        for cell in nb["cells"]:
            for output in cell.get("outputs", []):
                name = output.get("metadata", {}).get("scrapbook", {}).get("name")
                if name:
                    data = output.get("data", {})
                    text = next((v for k, v in data.items() if k.endswith("text/plain")), None)
                    rows.append({"argv": [Path(uri).name, name], "code": 0, "stdout": str(text), "stderr": ""})
    path.write_text(json.dumps(rows, indent=1))
    print(f"{len(rows)} glued values of {len(pages)} pages recorded in {path}")


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _diff(a: object, b: object, where: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b), key=str)
                for d in _diff(a.get(k, "<missing>"), b.get(k, "<missing>"), f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _diff(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} -> {b!r}"]


def compare(before: Path, after: Path) -> int:
    old = {json.dumps(r["argv"]): r for r in json.loads(before.read_text())}
    new = {json.dumps(r["argv"]): r for r in json.loads(after.read_text())}
    changed = 0
    for key in old.keys() & new.keys():
        a, b = old[key], new[key]
        diffs = _diff({"code": a["code"], "out": _json(a["stdout"]), "err": a["stderr"]},
                      {"code": b["code"], "out": _json(b["stdout"]), "err": b["stderr"]})
        if diffs:
            changed += 1
            print(f"== aihw {' '.join(json.loads(key))}")
            for d in diffs[:12]:
                print(f"   {d[:300]}")
            if len(diffs) > 12:
                print(f"   ... {len(diffs) - 12} more")
    for key in old.keys() - new.keys():
        print(f"only before: {key}")
    for key in new.keys() - old.keys():
        print(f"only after: {key}")
    print(f"{changed} of {len(old.keys() & new.keys())} cases differ")
    return 1 if changed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out", type=Path)
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("before", type=Path)
    cmp_.add_argument("after", type=Path)
    sub.add_parser("glue").add_argument("out", type=Path)
    args = parser.parse_args()
    if args.what == "glue":
        record_glue(args.out)
        return 0
    if args.what == "record":
        record(args.out)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
