"""The Binder environment (binder/requirements.txt + binder/postBuild) really installs, checked offline.

Binder builds it from the network; this test cannot, so it resolves the same requirements with pip against the
local package sources this machine's pip is configured with (file:// indexes and wheel folders only: nothing
leaves the machine), on top of the packages already installed here, and checks that the pinned torch resolves
to the CPU build from a local wheel. It also checks the pieces Binder needs: the CPU index, the package install.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BINDER = REPO / "binder"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _requirements() -> tuple[list[str], list[str]]:
    """(option lines, requirement lines) of binder/requirements.txt, comments dropped."""
    options, reqs = [], []
    for line in (BINDER / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            (options if line.startswith("-") else reqs).append(line)
    return options, reqs


def _local_sources() -> list[str]:
    """pip options naming this machine's local package sources (from `pip config list`), network ones dropped."""
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                         timeout=60).stdout
    indexes, links = [], []
    for line in out.splitlines():
        key, _, value = line.partition("=")
        values = value.strip().strip("'\"").split()
        if key.endswith(("index-url", "extra-index-url")):
            indexes += [v for v in values if v.startswith("file://")]
        elif key.endswith("find-links"):
            links += [v for v in values if v.startswith("file://") or Path(v).is_dir()]
    if not indexes and not links:
        return []
    args = ["--index-url", indexes[0]] if indexes else ["--no-index"]
    for url in indexes[1:]:
        args += ["--extra-index-url", url]
    for link in links:
        args += ["--find-links", link]
    return args


def test_binder_files_install_torch_cpu_and_the_package():
    options, reqs = _requirements()
    assert f"--extra-index-url {CPU_INDEX}" in options  # the CPU build, not a multi-GB CUDA wheel
    assert "torch==2.13.0" in reqs
    post = (BINDER / "postBuild").read_text()
    assert "pip install --no-deps -e ." in post and (BINDER / "postBuild").stat().st_mode & 0o111
    # every runtime dependency of the package is in the Binder requirements (postBuild installs with --no-deps)
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    needed = [*project["dependencies"], *project["optional-dependencies"]["labs"]]
    names = {r.split(">")[0].split("=")[0].split("<")[0].strip().lower() for r in reqs}
    assert {n.split(">")[0].split("=")[0].strip().lower() for n in needed} <= names


def test_binder_requirements_resolve_offline(tmp_path):
    sources = _local_sources()
    if not sources:
        pytest.skip("no local package source configured for pip (file:// index or wheel folder)")
    _, reqs = _requirements()
    req_file = tmp_path / "requirements.txt"
    req_file.write_text("\n".join(reqs) + "\n")  # the network-only CPU index line is left out
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", str(report),
                           *sources, "-r", str(req_file)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    to_install = {i["metadata"]["name"].lower() for i in json.loads(report.read_text())["install"]}
    for req in reqs:  # whatever is not installed here would be fetched: it must have resolved too
        name = req.split(">")[0].split("=")[0].strip().lower()
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            assert name in to_install, name
    # the pinned torch is a CPU build available as a local wheel for this platform
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps",
                           "--quiet", "--report", str(report), *sources, "torch==2.13.0"],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        pytest.skip(f"no local torch 2.13.0 wheel to resolve against: {proc.stderr.strip()[-300:]}")
    (torch,) = json.loads(report.read_text())["install"]
    assert torch["metadata"]["version"] == "2.13.0+cpu"
