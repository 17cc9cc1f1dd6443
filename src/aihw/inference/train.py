"""A small draft and a larger target model, trained offline in seconds on the book's own text (byte level).

The corpus (``data/corpus.txt``, about 60 kB) is the prose of the course's chapters, regenerated at dev time by
``scripts/make_inference_corpus.py`` and shipped inside the package, so a wheel trains the same models offline.
Trained weights are cached under ``~/.cache/aihw`` keyed by a hash of everything that decides them, as
:mod:`aihw.models.digits` does, so the second run of a lab loads them in milliseconds.

The two models share the vocabulary (bytes) and the training text but not the size, so speculative
decoding's acceptance is neither trivial (identical models) nor hopeless (an untrained draft). With a budget of
seconds on two cores neither learns much beyond frequent letters and words (about 4 bits per byte, see
:func:`bits_per_byte`); the larger target is not guaranteed to be the better predictor at this budget.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path

import torch

from aihw._validate import require_positive
from aihw.inference.model import GenConfig, GenGPT
from aihw.models.digits import default_cache_dir, load_weights, save_weights, torch_threads

CACHE_FORMAT = 1


def load_corpus() -> torch.Tensor:
    """The shipped corpus as a 1-D tensor of byte values (int64)."""
    data = resources.files("aihw.inference").joinpath("data", "corpus.txt").read_bytes()
    return torch.tensor(list(data), dtype=torch.long)


def encode(text: str) -> torch.Tensor:
    """Text to byte ids (1, n); characters outside ASCII become '?'."""
    return torch.tensor([list(text.encode("ascii", "replace"))], dtype=torch.long)


def decode(ids: torch.Tensor | list[int]) -> str:
    values = ids.flatten().tolist() if isinstance(ids, torch.Tensor) else ids
    return bytes(int(v) for v in values).decode("ascii", "replace")


@dataclass(frozen=True)
class TrainSpec:
    """A model shape and how long to train it (AdamW, random windows of the corpus)."""

    model: GenConfig = field(default_factory=GenConfig)
    steps: int = 300
    batch: int = 32
    lr: float = 3e-3
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("steps", "batch"):
            require_positive(name, getattr(self, name), integer=True)
        require_positive("lr", self.lr)


DRAFT = TrainSpec(GenConfig(width=32, depth=1, heads=2, seq_len=96), steps=200, batch=16)
TARGET = TrainSpec(GenConfig(width=64, depth=3, heads=4, kv_heads=2, seq_len=96), steps=250, batch=16)


def train(spec: TrainSpec, *, threads: int | None = 2) -> tuple[GenGPT, list[float]]:
    """Train a GenGPT on the corpus; returns the model (eval mode) and the loss per step."""
    data = load_corpus()
    seq = spec.model.seq_len
    g = torch.Generator().manual_seed(spec.seed)
    with torch_threads(threads), torch.random.fork_rng(devices=[]), torch.enable_grad():
        torch.manual_seed(spec.seed)
        model = GenGPT(spec.model)
        opt = torch.optim.AdamW(model.parameters(), lr=spec.lr, weight_decay=0.0)
        losses = []
        for _ in range(spec.steps):
            start = torch.randint(0, len(data) - seq - 1, (spec.batch,), generator=g)
            x = torch.stack([data[s:s + seq] for s in start.tolist()])
            y = torch.stack([data[s + 1:s + seq + 1] for s in start.tolist()])
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return model.eval(), losses


def cache_key(spec: TrainSpec) -> str:
    corpus = hashlib.sha256(resources.files("aihw.inference").joinpath("data", "corpus.txt").read_bytes())
    info = {"spec": asdict(spec), "format": CACHE_FORMAT, "torch": torch.__version__.split("+")[0],
            "corpus": corpus.hexdigest()[:16]}
    return hashlib.sha256(json.dumps(info, sort_keys=True, default=str).encode()).hexdigest()[:16]


def trained(spec: TrainSpec, *, cache_dir: str | Path | None = None) -> GenGPT:
    """The model ``spec`` describes: loaded from the cache, or trained (seconds) and saved atomically."""
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = folder / f"gengpt-{cache_key(spec)}.pt"
    state = load_weights(path)  # None if missing, corrupted (digest mismatch) or non-finite
    if state is not None:
        model = GenGPT(spec.model)
        try:
            model.load_state_dict(state)
            return model.eval()
        except (RuntimeError, ValueError):
            pass  # another layout under this name: train again and overwrite it
    model, _ = train(spec)
    save_weights(model.state_dict(), path)
    return model


@torch.no_grad()
def bits_per_byte(model: GenGPT, *, windows: int = 16, seed: int = 1) -> float:
    """Cross-entropy on random corpus windows, in bits per byte (lower is better; 8 = knows nothing)."""
    data = load_corpus()
    seq = model.cfg.seq_len
    g = torch.Generator().manual_seed(seed)
    start = torch.randint(0, len(data) - seq - 1, (windows,), generator=g).tolist()
    x = torch.stack([data[s:s + seq] for s in start])
    y = torch.stack([data[s + 1:s + seq + 1] for s in start])
    logits = model(x)
    nats = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    return float(nats) / float(torch.log(torch.tensor(2.0)))
