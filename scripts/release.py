"""Release the course: tag the commit whose book and labs belong together, and check what the publishing needs.

    python scripts/release.py tag                    # make release: checks, then the annotated tag v<version>
    python scripts/release.py check-baseurl URL      # html.baseurl in _config.yml is URL (the Pages address)
    python scripts/release.py check-site _build/html # the built book holds the wheel the labs' set-up cell installs

``tag`` refuses, with one line, a working tree with uncommitted changes, labs out of step with their sources, a
``pyproject.toml`` version that differs from ``aihw.__version__``, and a tag ``v<version>`` that already names
another commit (bump the version). Pushing the tag (``git push origin v<version>``) runs
``.github/workflows/book.yml``: the book is built and published, and the wheel attached to the tag's release.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import labs  # noqa: E402  (scripts/labs.py: the set-up cell, the version, the wheel's name)


class ReleaseError(Exception):
    """A reason not to release, said in one line."""


def _git(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise ReleaseError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def problems(root: Path = ROOT) -> list[str]:
    """Why this checkout cannot be released now, one line each (empty: it can)."""
    found = []
    if _git("status", "--porcelain", "--untracked-files=no", cwd=root):
        found.append("the working tree has uncommitted changes: commit them first")
    pyproject = re.search(r'^version = "([^"]+)"', (root / "pyproject.toml").read_text(), re.MULTILINE)
    if not pyproject or pyproject.group(1) != labs.package_version():
        found.append(f"pyproject.toml's version and aihw.__version__ ({labs.package_version()}) differ")
    found += labs.check()
    return found


def tag(root: Path = ROOT) -> str:
    """Create the annotated tag ``v<version>`` on HEAD (nothing to do when it is there already); return it."""
    found = problems(root)
    if found:
        raise ReleaseError("; ".join(found))
    name, head = labs.release_tag(), _git("rev-parse", "HEAD", cwd=root)
    existing = subprocess.run(["git", "rev-parse", "-q", "--verify", f"refs/tags/{name}^{{commit}}"], cwd=root,
                              capture_output=True, text=True).stdout.strip()
    if existing and existing != head:
        raise ReleaseError(f"tag {name} already names commit {existing[:12]}: bump the version in pyproject.toml "
                           "and src/aihw/__init__.py, run `make labs`, commit, then release again")
    if not existing:
        _git("tag", "-a", name, "-m", f"aihw {labs.package_version()}: the book and its labs", cwd=root)
    return name


def check_baseurl(url: str) -> None:
    """``html.baseurl`` must be where the book is published, or the labs would install from elsewhere."""
    configured = labs.book_url()
    if configured != url.rstrip("/"):
        raise ReleaseError(f"html.baseurl in _config.yml is {configured!r} but the book is published at {url!r}: "
                           "set html.baseurl to it and run `make labs`")


def check_site(site: Path) -> Path:
    """The wheel the labs' set-up cell installs is in the built book."""
    wheel = site / labs.WHEEL_FOLDER / labs.wheel_name()
    if not wheel.is_file():
        raise ReleaseError(f"{wheel} is missing: the book build publishes it (_ext/lab_wheel.py)")
    return wheel


def main(argv: list[str]) -> int:
    usage = "usage: python scripts/release.py tag | check-baseurl URL | check-site DIR"
    try:
        if argv == ["tag"]:
            name = tag()
            print(f"tagged {name}; publish it with: git push origin {name}")
        elif len(argv) == 2 and argv[0] == "check-baseurl":
            check_baseurl(argv[1])
            print(f"html.baseurl is {argv[1]}")
        elif len(argv) == 2 and argv[0] == "check-site":
            print(f"the book holds {check_site(Path(argv[1]))}")
        else:
            print(usage, file=sys.stderr)
            return 2
    except ReleaseError as error:
        print(f"release: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
