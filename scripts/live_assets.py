"""Fetch the pinned Pyodide core (through npm) that the book's live calculators run in.

    python scripts/live_assets.py fetch   # into .cache/pyodide-<version>/ unless already there
    python scripts/live_assets.py path    # print the folder (exit 1 if the assets are missing)

Pyodide's core is the CPython interpreter compiled to WebAssembly plus the standard library (no numpy): the
analytic calculators of ``aihw`` need nothing more. The version and the npm tarball's sha512 are pinned here;
a tarball with another checksum is refused. Without npm the book still builds, without the live calculators
(the build says so); in CI (CI set to a true value) a missing npm is an error.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VERSION = "0.29.3"
INTEGRITY = "sha512-22UBuhOJawj7vKUnS7/F3xK+515LJdjiMAHoCfuS6/PbHiOrSQVnYwDe+2sbVwiOZ3sMMexdXICew6NqOMQGgA=="
FILES = ("pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
TARGET = ROOT / ".cache" / f"pyodide-{VERSION}"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def present() -> bool:
    return all((TARGET / name).is_file() for name in FILES)


def _integrity(path: Path) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def fetch() -> int:
    if present():
        print(f"Pyodide {VERSION} core already in {TARGET.relative_to(ROOT)}")
        return 0
    npm = shutil.which("npm")
    if npm is None:
        message = "npm not found: the book's live calculators will be left out (install Node.js/npm to get them)"
        print(message, file=sys.stderr)
        return 1 if in_ci() else 0
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([npm, "pack", f"pyodide@{VERSION}", "--silent"], cwd=tmp, check=True,
                       stdout=subprocess.DEVNULL)
        tarball = Path(tmp) / f"pyodide-{VERSION}.tgz"
        got = _integrity(tarball)
        if got != INTEGRITY:
            print(f"refusing pyodide-{VERSION}.tgz: checksum {got} differs from the pinned {INTEGRITY}",
                  file=sys.stderr)
            return 1
        TARGET.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tarball) as archive:
            for name in FILES:
                member = archive.extractfile(f"package/{name}")
                if member is None:
                    print(f"pyodide-{VERSION}.tgz has no {name}", file=sys.stderr)
                    return 1
                (TARGET / name).write_bytes(member.read())
    print(f"Pyodide {VERSION} core fetched into {TARGET.relative_to(ROOT)} (checksum verified)")
    return 0


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "fetch":
        sys.exit(fetch())
    if command == "path":
        print(TARGET)
        sys.exit(0 if present() else 1)
    sys.exit("usage: python scripts/live_assets.py fetch|path")
