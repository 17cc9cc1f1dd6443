"""The book's structure and the labs' set-up cells: the promises the README makes to instructors."""

import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
LABS = sorted((ROOT / "labs").glob("*.ipynb"))


def _toc_files() -> list[str]:
    return [c["file"] for part in TOC["parts"] for c in part["chapters"]]


def test_parts_in_course_order():
    captions = [part["caption"] for part in TOC["parts"]]
    expected = ["Foundations", "Parallelism", "Inference", "Optimization", "Scaling", "Reference"]
    assert [c for c in expected if c in captions] == captions, f"parts out of course order: {captions}"
    foundations = [c["file"] for c in TOC["parts"][0]["chapters"]]
    assert foundations.index("chapters/gpus_vs_tpus") < foundations.index("chapters/memory")


def test_every_chapter_and_lab_is_in_the_toc_and_exists():
    listed = set(_toc_files())
    on_disk = {f"chapters/{p.stem}" for p in (ROOT / "chapters").glob("*.md")} | {f"labs/{p.stem}" for p in LABS}
    assert on_disk == listed, f"not in _toc.yml: {on_disk - listed}; missing on disk: {listed - on_disk}"
    assert all(lab.stem in {f.split("/")[-1] for f in listed} for lab in LABS)


def test_execution_is_cached_and_errors_fail_the_build():
    assert CONFIG["execute"]["execute_notebooks"] == "cache"
    assert CONFIG["execute"]["allow_errors"] is False


def test_jupyter_book_is_pinned_to_version_1():
    requirements = (ROOT / "requirements.txt").read_text()
    assert re.search(r"^jupyter-book>=1\.0\.4\.post1,<2$", requirements, re.M)
    assert not re.search(r"^torch\b", requirements, re.M), "torch must not be a requirement (see README)"


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.name)
def test_lab_is_committed_without_outputs(lab):
    cells = json.loads(lab.read_text())["cells"]
    assert not [c for c in cells if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count"))]


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.name)
def test_lab_set_up_cell_installs_from_the_configured_repository_and_keeps_torch(lab):
    cells = [c for c in json.loads(lab.read_text())["cells"] if c["cell_type"] == "code"]
    first = "".join(cells[0]["source"])
    assert "import aihw" in first and "except ImportError" in first
    install = next(line for line in first.splitlines() if "pip install" in line)
    assert f"git+{CONFIG['repository']['url']}" in install, "the lab and _config.yml disagree on the repository"
    assert "torch" not in install.replace("aihw", "")
    pin = re.search(r"git\+\S+?@(v[^\"\s]+)\"", install)
    assert pin, f"the install line must pin a release tag (git+URL@vX.Y.Z), not the moving main: {install}"
    assert pin.group(1) == f"v{_package_version()}", "the lab installs another release than the book's package"


def _package_version() -> str:
    import aihw

    pyproject = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.MULTILINE).group(1)
    assert pyproject == aihw.__version__, "pyproject.toml and aihw.__version__ disagree"
    return aihw.__version__


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.name)
def test_lab_has_at_least_three_checked_exercises_and_assertions(lab):
    source = "".join("".join(c["source"]) for c in json.loads(lab.read_text())["cells"] if c["cell_type"] == "code")
    assert len(re.findall(r"\bcheck\(", source)) >= 3
    assert "assert " in source


TESTED_CHAPTERS = ("gpus_vs_tpus", "transformer_math", "accelerator", "formats", "memory", "data_parallel",
                   "model_parallel", "cheaper", "scaling", "inference")


@pytest.mark.parametrize("slug", TESTED_CHAPTERS)
def test_chapter_quotes_the_seed_claims_and_gives_verdicts(slug):
    text = (ROOT / "chapters" / f"{slug}.md").read_text()
    assert ":class: seed-claims" in text and "_snippets/seed_claims.md" in text
    assert ":class: seed-verdicts" in text
    assert text.index(":class: seed-claims") < text.index(":class: seed-verdicts")
    verdicts = text[text.index(":class: seed-verdicts"):]
    assert re.search(r"\*\*(confirmed|refined|refuted)", verdicts), "a verdict per claim"
    assert "*Design problem.*" in text and ":class: dropdown" in text, "a design problem with a folded solution"
