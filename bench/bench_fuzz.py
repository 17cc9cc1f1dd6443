"""A longer fuzz than the test suite's (tests/test_fuzz_*.py): the command line, the public calculators, model files
and the caches, with the same checkers (tests/fuzz_support.py), for a time budget per boundary.

Prints the number of cases and of violations by kind for each boundary, and one example input per kind; exits 0
either way (a bench reports, it does not gate). ``python bench/bench_fuzz.py [SECONDS_PER_BOUNDARY] [SEED]``
(default 60 s, seed 0); the same seed and budget on the same machine give about the same cases.
"""

from __future__ import annotations

import collections
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import fuzz_support as F  # noqa: E402  (tests/ is not a package)


def _number(rng: random.Random) -> str:
    kind = rng.randrange(5)
    if kind == 0:
        return repr(rng.choice([0.0, -0.0, 5e-324, 1e-320, 1e308, 1e309, float("inf"), float("nan")]) *
                    rng.choice([1, -1]))
    if kind == 1:
        return str(rng.randint(-10**rng.randint(1, 400), 10**rng.randint(1, 400)))
    if kind == 2:
        return f"{rng.uniform(-1e6, 1e6):.{rng.randint(0, 6)}g}{rng.choice(['', 'K', 'M', 'B', 'T', 'GiB', 'KB'])}"
    if kind == 3:
        return "".join(rng.choice("0123456789.eE+-_x ") for _ in range(rng.randint(0, 12)))
    return rng.choice(F.HOSTILE_NUMBERS)


def _text(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return rng.choice(F.HOSTILE_TEXT)
    return "".join(chr(rng.choice([rng.randint(0, 0x7f), rng.randint(0x80, 0x2fff)])) for _ in range(rng.randint(0, 20)))


def cli_cases(rng: random.Random):
    options = F.cli_options()
    commands = sorted(options)
    while True:
        command = rng.choice(commands)
        argv = [command]
        for _ in range(rng.randint(0, 5)):
            flag, takes_value, choices = rng.choice(options[command])
            if not takes_value:
                argv.append(flag)
                continue
            value = rng.choice(choices) if choices and rng.random() < 0.4 else (
                _number(rng) if rng.random() < 0.6 else _text(rng))
            argv += [f"{flag}={value}"] if rng.random() < 0.3 else [flag, value]
        if rng.random() < 0.5:
            argv.append("--json")
        yield argv, lambda argv=argv: F.check_cli(argv)


def api_cases(rng: random.Random):
    targets = F.api_targets()
    while True:
        name, function, good = rng.choice(targets)
        argument = rng.choice(sorted(good))
        if rng.random() < 0.5:
            bad = rng.choice(F.BAD_VALUES)
        else:
            text = _number(rng)
            try:
                bad = float(text) if any(c in text for c in ".eEn") else int(text)
            except ValueError:
                bad = text
        kwargs = {**good, argument: bad}
        yield (name, argument, repr(bad)[:40]), lambda f=function, kw=kwargs: F.check_api(f, kw)


def file_cases(rng: random.Random, folder: Path):
    specials = F.special_model_paths(folder)
    fields = ["hidden", "layers", "heads", "vocab", "max_seq", "kv_heads", "experts", "top_k", "name", "junk"]
    while True:
        if rng.random() < 0.2:
            path = rng.choice(specials)
        else:
            lines = [f"{rng.choice(fields)} = {rng.choice([_number(rng), repr(_text(rng)), 'true', '[1]'])}"
                     for _ in range(rng.randint(0, 8))]
            data = "\n".join(lines).encode("utf-8", "surrogatepass")
            if rng.random() < 0.2:
                data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
            path = str(folder / "random.toml")
            Path(path).write_bytes(data)
        yield path[-60:], lambda p=path: F.check_model_file(p)


def cache_cases(rng: random.Random, folder: Path):
    while True:
        if rng.random() < 0.5:
            mode = rng.choice(["flip", "truncate", "append", "replace", "empty"])
            position, junk = rng.randrange(10**6), bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
            target = rng.choice(["weights", "digest"])
            yield (mode, position, target), lambda a=(position, mode, junk, target): F.check_weights(folder, *a)
        else:
            content = rng.choice([b"", b"[]", b"{}", b"null", b'{"key": "x"}', b'{"result": {"value": 4}}',
                                  bytes(rng.randrange(256) for _ in range(rng.randint(1, 60)))])
            yield content[:40], lambda c=content: F.check_cached_json(folder, c)


def run(name: str, cases, seconds: float) -> tuple[int, collections.Counter, dict]:
    counts: collections.Counter = collections.Counter()
    examples: dict = {}
    total, end = 0, time.monotonic() + seconds
    for case, check in cases:
        if time.monotonic() > end:
            break
        total += 1
        kind = check()
        if kind:
            counts[kind] += 1
            examples.setdefault(kind, case)
    return total, counts, examples


def main(argv: list[str]) -> int:
    seconds = float(argv[0]) if argv else 60.0
    rng = random.Random(int(argv[1]) if len(argv) > 1 else 0)
    with tempfile.TemporaryDirectory() as files, tempfile.TemporaryDirectory() as caches:
        boundaries = [("command line", cli_cases(rng)), ("Python API", api_cases(rng)),
                      ("model files", file_cases(rng, Path(files))), ("caches", cache_cases(rng, Path(caches)))]
        grand = [0, 0]
        print(f"{'boundary':<14} {'cases':>8} {'violations':>11}  kinds")
        for name, cases in boundaries:
            total, counts, examples = run(name, cases, seconds)
            grand[0] += total
            grand[1] += sum(counts.values())
            kinds = ", ".join(f"{k}: {n}" for k, n in counts.most_common()) or "none"
            print(f"{name:<14} {total:>8} {sum(counts.values()):>11}  {kinds}")
            for kind, case in examples.items():
                print(f"{'':<14} e.g. {kind}: {F.shorten_case(case)}")
        print(f"{'total':<14} {grand[0]:>8} {grand[1]:>11}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
