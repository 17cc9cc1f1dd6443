"""One verdict per claim of the source text, in one vocabulary, in one chapter."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VOCABULARY = ("confirmed", "refined", "refuted", "not testable here")

# Each claim of the source text, by a phrase of its row, and the chapter that owns its verdict.
CLAIMS = {
    "thousands of small cores": "gpus_vs_tpus",
    "headline figures": "gpus_vs_tpus",
    "custom kernels": "accelerator",
    "register-file access": "accelerator",
    "price-to-performance": "choosing",
    "ceiling of your AI capabilities": "scaling",
    "optimizing this split": "transformer_math",
    "matrix operations": "transformer_math",
    "Optimal Precision Format": "formats",
    "INT8/FP8": "cheaper",
    "Pruning": "cheaper",
    "Distillation": "cheaper",
    "28 GB to train": "memory",
    "40 GB to train": "memory",
    "280 GB+ to train": "memory",
    "Serving VRAM": "inference",
    "after each forward pass": "data_parallel",
    "complete copy": "data_parallel",
    "usual way to scale": "data_parallel",
    "need NVLink": "model_parallel",
    "DP plus MP": "model_parallel",
    "reduces idle time": "model_parallel",
    "all compute units active": "model_parallel",
}


def verdict_rows() -> dict[str, list[tuple[str, str]]]:
    """(claim cell, verdict cell) of every row of every chapter's verdicts box."""
    rows: dict[str, list[tuple[str, str]]] = {}
    for page in sorted((ROOT / "chapters").glob("*.md")):
        text = page.read_text()
        if ":class: seed-verdicts" not in text:
            continue
        box = text[text.index(":class: seed-verdicts"):]
        box = box[:box.index("````")]
        cells = [line.split("|")[1:3] for line in box.splitlines() if line.startswith("| ")]
        rows[page.stem] = [(c.strip(), v.strip()) for c, v in cells if c.strip() != "claim"]
    return rows


def test_every_verdict_uses_the_vocabulary_once():
    for slug, rows in verdict_rows().items():
        for claim, verdict in rows:
            words = re.findall(r"\*\*([^*]+)\*\*", verdict)
            assert len(words) == 1 and words[0] in VOCABULARY, f"{slug}: {claim!r} has verdict {verdict!r}"


@pytest.mark.parametrize("phrase, owner", CLAIMS.items())
def test_each_claim_has_one_verdict_in_its_chapter(phrase, owner):
    found = [slug for slug, rows in verdict_rows().items() for claim, _ in rows if phrase.lower() in claim.lower()]
    assert found == [owner], f"{phrase!r}: verdicts in {found}, expected one in {owner}"


def test_every_verdict_row_is_a_known_claim():
    for slug, rows in verdict_rows().items():
        for claim, _ in rows:
            assert any(p.lower() in claim.lower() for p in CLAIMS), f"{slug}: {claim!r} is not in CLAIMS"
