"""`make release` (scripts/release.py) and the publishing workflow (.github/workflows/book.yml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"
sys.path.insert(0, str(ROOT / "scripts"))

import release  # noqa: E402  (scripts/release.py)

labs = release.labs  # scripts/labs.py


def _steps(job: dict) -> list[dict]:
    return job["steps"]


def _uses(job: dict) -> list[str]:
    return [s["uses"].split("@")[0] for s in _steps(job) if "uses" in s]


def _runs(job: dict) -> str:
    return "\n".join(s.get("run", "") for s in _steps(job))


def test_workflow_builds_the_book_deploys_it_to_pages_and_attaches_the_wheel_to_tag_releases():
    flow = yaml.safe_load(WORKFLOW.read_text())
    triggers = flow[True]  # YAML 1.1 reads the key `on` as true
    assert triggers["push"]["branches"] == ["main"] and triggers["push"]["tags"] == ["v*"]
    build, deploy, publish = flow["jobs"]["build"], flow["jobs"]["deploy"], flow["jobs"]["release"]
    assert "make book" in _runs(build)
    assert "scripts/release.py check-baseurl" in _runs(build) and "scripts/release.py check-site" in _runs(build)
    assert "actions/configure-pages" in _uses(build) and "actions/upload-pages-artifact" in _uses(build)
    pages = next(s for s in _steps(build) if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert pages["with"]["path"] == "_build/html"
    assert deploy["needs"] == "build" and _uses(deploy) == ["actions/deploy-pages"]
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert publish["if"] == "startsWith(github.ref, 'refs/tags/v')" and publish["permissions"] == {"contents": "write"}
    assert "dist/*.whl" in _runs(publish)
    assert flow["permissions"] == {"contents": "read"}  # each job asks for what it writes, no more


def _repo(tmp_path: Path) -> Path:
    """A git repository holding what a release reads: the version, the labs and their sources, the config."""
    repo = tmp_path / "repo"
    for name in ("pyproject.toml", "_config.yml", "scripts/labs.py", "scripts/release.py", "src/aihw/__init__.py"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, repo / name)
    shutil.copytree(ROOT / "labs", repo / "labs", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-qm", "course"], check=True)
    return repo


def _release(repo: Path) -> subprocess.CompletedProcess:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "scripts/release.py", "tag"], cwd=repo, capture_output=True, text=True,
                          timeout=120, env=env)


def test_make_release_tags_a_clean_checkout_once_and_refuses_to_move_a_tag(tmp_path):
    repo = _repo(tmp_path)
    tag = f"v{labs.package_version()}"
    first = _release(repo)
    assert first.returncode == 0, first.stderr
    assert f"git push origin {tag}" in first.stdout
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    tagged = subprocess.run(["git", "-C", str(repo), "rev-parse", f"{tag}^{{commit}}"], capture_output=True,
                            text=True).stdout
    assert tagged == head
    assert _release(repo).returncode == 0  # the same commit again: nothing to do
    (repo / "README.md").write_text("later\n")
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(repo), "add", "-A"],
                   check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(repo), "commit",
                    "-qm", "later"], check=True)
    moved = _release(repo)
    assert moved.returncode == 1 and "bump the version" in moved.stderr and moved.stderr.count("\n") == 1


def test_make_release_refuses_uncommitted_changes_and_stale_labs(tmp_path):
    repo = _repo(tmp_path)
    lab = repo / "labs" / "scaling_lab.py"
    lab.write_text(lab.read_text() + "\n# %%\nprint('new cell')\n")
    refused = _release(repo)
    assert refused.returncode == 1
    assert "uncommitted changes" in refused.stderr and "scaling_lab.ipynb is out of date" in refused.stderr


def test_baseurl_and_site_checks_name_what_to_fix(tmp_path):
    with pytest.raises(release.ReleaseError, match="set html.baseurl"):
        release.check_baseurl("https://someone.github.io/elsewhere/")
    release.check_baseurl(labs.book_url() + "/")  # a trailing slash is the same address
    with pytest.raises(release.ReleaseError, match="is missing"):
        release.check_site(tmp_path)
    wheel = tmp_path / labs.WHEEL_FOLDER / labs.wheel_name()
    wheel.parent.mkdir(parents=True)
    wheel.write_bytes(b"")
    assert release.check_site(tmp_path) == wheel
