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
    expected = ["Foundations", "Parallelism", "Inference", "Optimization", "Scaling", "Capstone", "Reference"]
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
def test_lab_set_up_cell_installs_this_version_from_the_book_then_the_repository_and_keeps_torch(lab):
    cells = [c for c in json.loads(lab.read_text())["cells"] if c["cell_type"] == "code"]
    first = "".join(cells[0]["source"])
    assert "import aihw" in first and "except ImportError" in first
    version = _package_version()
    book = CONFIG["html"]["baseurl"].rstrip("/")
    assert f'BOOK = "{book}"' in first, "the lab and _config.yml (html.baseurl) disagree on the book's address"
    assert f"{{BOOK}}/_static/wheels/aihw-{version}-py3-none-any.whl" in first, "not the wheel of this version"
    assert f"git+{CONFIG['repository']['url']}@v{version}" in first, "the fallback is not this release's tag"
    # the runtime's own builds are pinned (a constraints file), so the install never replaces them
    assert '("torch", "numpy", "matplotlib", "ipywidgets")' in first and '"-c", keep.name' in first
    assert "\nfrom aihw.measure.environment import environment\n\ndisplay(environment())" in first


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
                   "model_parallel", "cheaper", "scaling", "inference", "choosing")


@pytest.mark.parametrize("slug", TESTED_CHAPTERS)
def test_chapter_quotes_the_seed_claims_and_gives_verdicts(slug):
    text = (ROOT / "chapters" / f"{slug}.md").read_text()
    assert ":class: seed-claims" in text and "_snippets/seed_claims.md" in text
    assert ":class: seed-verdicts" in text
    assert text.index(":class: seed-claims") < text.index(":class: seed-verdicts")
    verdicts = text[text.index(":class: seed-verdicts"):]
    assert re.search(r"\*\*(confirmed|refined|refuted)", verdicts), "a verdict per claim"
    assert "*Design problem.*" in text and ":class: dropdown" in text, "a design problem with a folded solution"


def test_bibliography_has_no_duplicates():
    """One entry per work: no two keys with the same title, arXiv id or DOI (duplicates print twice)."""
    text = (ROOT / "references.bib").read_text()
    entries = re.findall(r"@\w+\{([^,]+),(.*?)\n\}", text, re.S)
    assert entries
    seen: dict[str, str] = {}
    for key, body in entries:
        for field in ("title", "eprint", "doi"):
            found = re.search(rf"^\s*{field}\s*=\s*[{{\"](.+?)[}}\"],?\s*$", body, re.M | re.I)
            if found:
                value = field + ":" + re.sub(r"[^a-z0-9]", "", found.group(1).lower())
                assert value not in seen, f"{key} duplicates {seen[value]} ({field})"
                seen[value] = key
    cited = set(re.findall(r"\{cite[^}]*\}`([^`]+)`", "".join(p.read_text() for p in (ROOT / "chapters").glob("*.md"))))
    keys = {k.strip() for k, _ in entries}
    missing = {c.strip() for group in cited for c in group.split(",")} - keys
    assert not missing, f"cited but not in references.bib: {sorted(missing)}"


def test_lab_headings_are_not_numbered_by_hand():
    """The book numbers the labs' sections (2.1, 2.2 ...): a heading "## 1. Predict" would be numbered twice."""
    for lab in LABS:
        for cell in json.loads(lab.read_text())["cells"]:
            if cell["cell_type"] == "markdown":
                for line in "".join(cell["source"]).splitlines():
                    assert not re.match(r"#{2,}\s+\d+\.\s", line), f"{lab.name}: {line}"


def test_no_placeholder_launch_urls():
    launch = CONFIG["launch_buttons"]
    for key in ("jupyterhub_url", "binderhub_url", "colab_url"):
        url = launch.get(key) or ""
        assert "example" not in url and "placeholder" not in url.lower(), f"{key}: {url}"
    assert (ROOT / "binder" / "requirements.txt").is_file()
    assert CONFIG["logo"] and (ROOT / CONFIG["logo"]).is_file()
    assert (ROOT / CONFIG["html"]["favicon"]).is_file()


def test_landing_page_map_follows_the_toc():
    import importlib.util

    spec = importlib.util.spec_from_file_location("book_map", ROOT / "_ext" / "book_map.py")
    book_map = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(book_map)
    rows = book_map.book_map(ROOT)
    assert [r["chapter"] for r in rows] == [f for f in _toc_files() if f.startswith("chapters/")]
    for r in rows:
        if r["part"] != "Reference":
            assert r["chapter_min"] >= 5 and r["chapter_min"] % 5 == 0, r
        if r["lab"]:
            assert r["lab"] in _toc_files() and r["lab_min"] >= 5
    intro = (ROOT / "intro.md").read_text()
    assert "```{book-map}" in intro and "## Prerequisites" in intro and "## What you will be able to do" in intro


def test_reading_time_counts_words_figures_and_tables(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("book_map", ROOT / "_ext" / "book_map.py")
    book_map = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(book_map)
    words = " ".join(["word"] * 1500)
    page = tmp_path / "page.md"
    page.write_text("---\ntitle: x\n---\n" + words + "\n\n| a | b |\n|---|:--:|\n| 1 | 2 |\n\n"
                    "```{code-cell} ipython3\nplots.plot_sweep(rows)\n```\n\n"
                    "```{code-cell} ipython3\nx = 1  # no figure\n```\n")
    # the table's four cells are words too; the code cells are not
    assert book_map.reading_counts(page) == {"words": 1504, "figures": 1, "tables": 1}
    assert book_map.reading_minutes(page) == 15  # 1504 / 150 + 2, rounded up to 5


CHAPTERS = sorted((ROOT / "chapters").glob("*.md"))
CODE_CELL = re.compile(r"```\{code-cell\}[^\n]*\n(.*?)```", re.S)


def _code_cells(path: Path) -> list[tuple[dict, str]]:
    """(options, code) of each code cell of a MyST chapter (YAML block or :key: lines)."""
    cells = []
    for match in CODE_CELL.finditer(path.read_text()):
        body = match.group(1)
        if body.startswith("---\n"):
            head, _, code = body[4:].partition("\n---\n")
            cells.append((yaml.safe_load(head) or {}, code))
        else:
            lines = body.split("\n")
            opts = {}
            while lines and lines[0].startswith(":"):
                key, _, value = lines.pop(0)[1:].partition(":")
                opts[key] = value.strip()
            cells.append((opts, "\n".join(lines)))
    return cells


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.name)
def test_every_figure_and_table_is_numbered_captioned_and_described(chapter):
    names = []
    for opts, code in _code_cells(chapter):
        if "plt.show()" in code:
            figure = (opts.get("mystnb") or {}).get("figure") or {}
            image = (opts.get("mystnb") or {}).get("image") or {}
            assert figure.get("caption") and figure.get("name", "").startswith("fig-"), code[:200]
            assert len(image.get("alt", "")) > 30, f"alt text missing: {code[:200]}"
            assert "markdown_table(" not in code, "a figure cell's table would share the figure's name"
            names.append(figure["name"])
        if "markdown_table(" in code and "import" not in code.split("markdown_table(")[0].splitlines()[-1]:
            assert code.count("caption=") >= code.count("markdown_table("), code[:200]
    assert len(names) == len(set(names))
    assert "setup_book()" in chapter.read_text() or not names, "the chapter must apply the book's figure style"
    for _, code in _code_cells(chapter):  # a figure or table call edited by hand must still be Python
        if not any(line.lstrip().startswith(("%", "!")) for line in code.splitlines()):
            compile(code, str(chapter), "exec")
