"""The shared subject of the "Making models cheaper" chapter: a small MLP on scikit-learn's bundled digits.

The digits set (1,797 8×8 grey images, 10 classes) ships inside scikit-learn, so nothing is downloaded. An MLP
of a few hundred thousand parameters trains on it in seconds on two CPU cores and is cached on disk, keyed by
its whole :class:`TrainConfig`, so a changed config never reuses a stale model. This module also holds the
three measurements every method is judged by: accuracy, size in bytes and latency in seconds.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import threading
import uuid
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TypeVar

import torch
from torch import nn

from aihw._validate import require_in_range, require_positive
from aihw.runtime.tensors import tensor_bytes
from aihw.runtime.timing import time_ops

M = TypeVar("M", bound=nn.Module)

CACHE_FORMAT = 1  # bump when the saved layout or the training loop changes
IN_FEATURES, CLASSES = 64, 10


@dataclass(frozen=True)
class Digits:
    """Train and test splits: inputs scaled to [0, 1] (fp32, N×64), labels int64 (N)."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor


def load_digits(*, test_fraction: float = 0.25, seed: int = 0) -> Digits:
    """scikit-learn's bundled digits, split reproducibly (stratified) into train and test."""
    from sklearn.datasets import load_digits as _load
    from sklearn.model_selection import train_test_split

    require_in_range("test_fraction", test_fraction, 0, 1, low_inclusive=False, high_inclusive=False)
    bunch = _load()
    x_tr, x_te, y_tr, y_te = train_test_split(bunch.data / 16.0, bunch.target, test_size=test_fraction,
                                              random_state=seed, stratify=bunch.target)
    as_x = lambda a: torch.tensor(a, dtype=torch.float32)  # noqa: E731
    as_y = lambda a: torch.tensor(a, dtype=torch.int64)  # noqa: E731
    return Digits(as_x(x_tr), as_y(y_tr), as_x(x_te), as_y(y_te))


@dataclass(frozen=True)
class TrainConfig:
    """How the MLP is built and trained. Every field enters the cache key."""

    hidden: tuple[int, ...] = (256, 256)  # widths of the hidden layers (ReLU between)
    epochs: int = 30  # passes over the 1,347 training images
    batch_size: int = 64
    lr: float = 2e-3  # Adam learning rate
    weight_decay: float = 1e-4
    seed: int = 0  # initialisation and shuffling

    def __post_init__(self) -> None:
        if not isinstance(self.hidden, tuple) or not self.hidden:
            raise ValueError(f"hidden must be a non-empty tuple of layer widths, got {self.hidden!r}")
        for width in self.hidden:
            require_positive("hidden width", width, integer=True)
        require_positive("epochs", self.epochs, integer=True)
        require_positive("batch_size", self.batch_size, integer=True)
        require_positive("lr", self.lr)
        require_in_range("weight_decay", self.weight_decay, 0, 1)
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")


def make_mlp(hidden: tuple[int, ...], *, in_features: int = IN_FEATURES, classes: int = CLASSES) -> nn.Sequential:
    """Linear → ReLU → … → Linear. A plain Sequential, so layers can be swapped or sliced by index."""
    widths = (in_features, *hidden)
    layers: list[nn.Module] = []
    for a, b in zip(widths[:-1], widths[1:], strict=True):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(widths[-1], classes))


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Run the block with ``threads`` intra-op threads (None: leave torch's setting), then restore it.

    Small matmuls gain nothing from a second thread, and on a busy machine two threads that wait for each
    other can be ten times slower than one, so training and the default timings use one thread.
    """
    if threads is None:
        yield
        return
    require_positive("threads", threads, integer=True)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


LossFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]  # (logits, x, y) -> loss


def fit(model: M, data: Digits, config: TrainConfig, *, loss_fn: LossFn | None = None,
        on_epoch: Callable[[int, float], None] | None = None, threads: int | None = 1) -> M:
    """Train ``model`` in place with Adam; ``loss_fn(logits, x, y)`` defaults to cross-entropy.

    Seeded from ``config.seed`` without touching the global RNG. ``on_epoch(epoch, mean_loss)`` is a hook for
    live plots. ``threads``: see :func:`torch_threads`. Returns the model in eval mode.
    """
    with torch_threads(threads):
        _fit(model, data, config, loss_fn, on_epoch)
    return model


def _fit(model, data, config, loss_fn, on_epoch) -> nn.Module:
    loss_fn = loss_fn or (lambda logits, _x, y: nn.functional.cross_entropy(logits, y))
    gen = torch.Generator().manual_seed(config.seed)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    n = len(data.y_train)
    model.train()
    for epoch in range(config.epochs):
        order, total = torch.randperm(n, generator=gen), 0.0
        for start in range(0, n, config.batch_size):
            idx = order[start:start + config.batch_size]
            xb, yb = data.x_train[idx], data.y_train[idx]
            loss = loss_fn(model(xb), xb, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        if on_epoch is not None:
            on_epoch(epoch, total / n)
    return model.eval()


def train_mlp(data: Digits, config: TrainConfig = TrainConfig()) -> nn.Sequential:
    """A freshly initialised (seeded) MLP of ``config.hidden``, trained on ``data``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = make_mlp(config.hidden)
    return fit(model, data, config)


def default_cache_dir() -> Path:
    """``~/.cache/aihw`` (pass ``cache_dir`` explicitly to use another place; no environment variable)."""
    return Path.home() / ".cache" / "aihw"


def cache_key(config: TrainConfig, *, test_fraction: float, split_seed: int) -> str:
    """A hash of everything that decides the trained weights (config, split, file format, torch version)."""
    spec = {"config": asdict(config), "test_fraction": test_fraction, "split_seed": split_seed,
            "format": CACHE_FORMAT, "torch": torch.__version__.split("+")[0]}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def trained_mlp(config: TrainConfig = TrainConfig(), *, data: Digits | None = None,
                cache_dir: str | Path | None = None, test_fraction: float = 0.25,
                split_seed: int = 0) -> tuple[nn.Sequential, Digits]:
    """The trained MLP for ``config`` and its data: loaded from the cache, or trained (seconds) and saved."""
    data = data or load_digits(test_fraction=test_fraction, seed=split_seed)
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = folder / f"digits-mlp-{cache_key(config, test_fraction=test_fraction, split_seed=split_seed)}.pt"
    model = make_mlp(config.hidden)
    state = load_weights(path)
    if state is not None:
        try:
            model.load_state_dict(state)
            return model.eval(), data
        except (RuntimeError, ValueError):
            pass  # another layout under this name: train again and overwrite it
    model = train_mlp(data, config)
    save_weights(model.state_dict(), path)
    return model, data


def _temp_path(path: Path) -> Path:
    """A temporary name beside ``path``, unique per call (process, thread and a random part)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.{uuid.uuid4().hex}.tmp")


def _write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a unique temporary file (removed on every error) and an atomic rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_path(path)
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)  # atomic: a reader never sees half a file
    finally:
        tmp.unlink(missing_ok=True)


def _digest_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def save_weights(state: Mapping[str, torch.Tensor], path: str | Path) -> bool:
    """Save ``state`` at ``path`` with its sha256 digest beside it (``<path>.sha256``); both written atomically.

    True when saved; False (with a warning) when the cache cannot be written, e.g. a directory stands at
    ``path``: the caller keeps its freshly trained model, only the cache is skipped."""
    path = Path(path)
    buffer = io.BytesIO()
    torch.save(dict(state), buffer)
    data = buffer.getvalue()
    try:
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a directory")
        _write_atomically(path, data)
        _write_atomically(_digest_path(path), hashlib.sha256(data).hexdigest().encode())
    except OSError as err:
        warnings.warn(f"cache {path} not written ({err.__class__.__name__}: {err}); the model is not cached",
                      RuntimeWarning, stacklevel=2)
        return False
    return True


def load_weights(path: str | Path) -> dict[str, torch.Tensor] | None:
    """The state dict saved at ``path`` by :func:`save_weights`, or None when it is missing, unreadable, does
    not match the digest stored beside it (flipped bytes, a truncated file) or holds non-finite weights."""
    path = Path(path)
    try:
        if not path.is_file():
            return None
        data = path.read_bytes()
        want = _digest_path(path).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if hashlib.sha256(data).hexdigest() != want:
        return None
    try:
        state = torch.load(io.BytesIO(data), weights_only=True)
    except (RuntimeError, EOFError, OSError, ValueError, pickle.UnpicklingError):
        return None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        return None
    if any(v.is_floating_point() and not bool(torch.isfinite(v).all()) for v in state.values()):
        return None
    return state


def trained_mlps(config: TrainConfig, seeds: Sequence[int], *, data: Digits | None = None,
                 cache_dir: str | Path | None = None) -> tuple[list[nn.Sequential], Digits]:
    """One trained MLP per seed (``config`` with its ``seed`` replaced), each cached like :func:`trained_mlp`.

    The base models of a multi-seed comparison: what varies between them is the initialisation and the order of
    the training batches; the train/test split stays fixed.
    """
    if len(seeds) < 2 or len(set(seeds)) != len(seeds):
        raise ValueError(f"need at least two distinct seeds for an interval, got {tuple(seeds)!r}")
    data = data or load_digits()
    models = [trained_mlp(replace(config, seed=int(s)), data=data, cache_dir=cache_dir)[0] for s in seeds]
    return models, data


def data_fingerprint(data: Digits) -> str:
    """A short hash of the four tensors of ``data`` (part of every cache key that depends on the data)."""
    digest = hashlib.sha256()
    for t in (data.x_train, data.y_train, data.x_test, data.y_test):
        digest.update(t.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def cached_json(prefix: str, spec: Mapping, compute: Callable[[], dict], *,
                cache_dir: str | Path | None = None) -> dict:
    """``compute()``'s JSON-able result, stored as ``<cache_dir>/<prefix>-<hash of spec>.json`` and read back on
    the next call with the same ``spec`` (everything that decides the result). ``cache_dir=None`` uses
    :func:`default_cache_dir`; an unreadable file is recomputed and overwritten (atomically)."""
    key = hashlib.sha256(json.dumps({**spec, "format": CACHE_FORMAT, "torch": torch.__version__.split("+")[0]},
                                    sort_keys=True).encode()).hexdigest()[:16]
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = folder / f"{prefix}-{key}.json"
    cached = _read_cached_json(path, key)
    if cached is not None:
        return cached
    result = compute()
    if not isinstance(result, dict):
        raise TypeError(f"cached_json({prefix!r}): compute() must return a dict, got {type(result).__name__}")
    body = json.dumps(result, sort_keys=True, allow_nan=False)
    envelope = {"key": key, "sha256": hashlib.sha256(body.encode()).hexdigest(), "result": result}
    try:
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a directory")
        _write_atomically(path, json.dumps(envelope, allow_nan=False).encode())
    except OSError as err:
        warnings.warn(f"cache {path} not written ({err.__class__.__name__}: {err})", RuntimeWarning, stacklevel=2)
    return result


def _read_cached_json(path: Path, key: str) -> dict | None:
    """The result stored at ``path`` if the file has the expected shape (an envelope with this key, a dict
    result and its matching digest), else None (the caller recomputes and overwrites it)."""
    try:
        if not path.is_file():
            return None
        envelope = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(envelope, dict) or set(envelope) != {"key", "sha256", "result"} or envelope["key"] != key:
        return None
    result = envelope["result"]
    if not isinstance(result, dict):
        return None
    body = json.dumps(result, sort_keys=True, allow_nan=False)
    return result if hashlib.sha256(body.encode()).hexdigest() == envelope["sha256"] else None


@torch.inference_mode()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of ``x`` classified as ``y`` (0..1)."""
    return float((model(x).argmax(dim=1) == y).float().mean())


def size_bytes(model: nn.Module) -> int:
    """Bytes of the model's serialized state_dict (what a checkpoint on disk takes; packed INT8 included)."""
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.getbuffer().nbytes


def param_bytes(model: nn.Module) -> int:
    """Bytes of the parameters and buffers alone, as stored in memory (no file overhead)."""
    return tensor_bytes([*model.parameters(), *model.buffers()])


def latencies(models: Mapping[str, nn.Module], x: torch.Tensor, *, repeats: int = 15, warmup: int = 3,
              min_sample_s: float = 2e-3, threads: int | None = 1) -> dict[str, float]:
    """Median seconds per forward pass of each model on ``x``.

    The models are timed in turn, round after round (so a slow spell on a shared machine hits all of them),
    after ``warmup`` calls each; each sample loops over enough calls to last ``min_sample_s``. ``threads``:
    torch intra-op threads while timing (1 by default: stable on a shared machine; None = torch's setting).
    """
    require_positive("repeats", repeats, integer=True)
    if not models:
        raise ValueError("latencies needs at least one model")
    ops = {name: (lambda m=model: m(x)) for name, model in models.items()}
    with torch_threads(threads), torch.inference_mode():
        timings = time_ops(ops, device=x.device, warmup=warmup, repeats=repeats, min_sample_s=min_sample_s)
    return {name: t.median for name, t in timings.items()}


def latency(model: nn.Module, x: torch.Tensor, **kwargs) -> float:
    """Median seconds per forward pass of one model (see :func:`latencies`)."""
    return latencies({"model": model}, x, **kwargs)["model"]


def scorecard(models: Mapping[str, nn.Module], data: Digits, *, families: Mapping[str, str] | None = None,
              sizes: Mapping[str, float] | None = None, batch: int = 256, repeats: int = 9,
              threads: int | None = 1) -> list[dict]:
    """Accuracy (test set), size (bytes) and latency (s per batch of ``batch`` test images) of each model.

    Latencies are measured together (:func:`latencies`). ``sizes`` overrides the serialized size, e.g. with
    the packed size of a scheme whose numerics are only simulated; ``families`` groups points in plots.
    """
    require_positive("batch", batch, integer=True)
    reps = -(-batch // len(data.x_test))
    x = data.x_test.repeat(reps, 1)[:batch]
    times = latencies(models, x, repeats=repeats, threads=threads)
    sizes, families = sizes or {}, families or {}
    return [{"name": name, "family": families.get(name, name), "accuracy": accuracy(m, data.x_test, data.y_test),
             "size_bytes": float(sizes.get(name, size_bytes(m))), "latency_s": times[name]}
            for name, m in models.items()]


def linear_flops(model: nn.Module, batch: int, *, count_zeros: bool = True) -> int:
    """FLOP of the Linear layers for ``batch`` inputs: 2·batch·in·out each (+ batch·out for the bias).

    ``count_zeros=False`` counts only non-zero weights: what a perfect sparse kernel would do.
    """
    require_positive("batch", batch, integer=True)
    total = 0
    for module in model.modules():
        if isinstance(module, nn.Linear):
            weights = module.weight.numel() if count_zeros else int((module.weight != 0).sum())
            total += 2 * batch * weights + (batch * module.out_features if module.bias is not None else 0)
    return total


__all__ = ["Digits", "TrainConfig", "load_digits", "make_mlp", "fit", "train_mlp", "trained_mlp",
           "trained_mlps", "data_fingerprint", "cached_json", "save_weights", "load_weights", "torch_threads", "default_cache_dir", "cache_key", "accuracy", "size_bytes", "param_bytes", "latencies",
           "latency", "scorecard", "linear_flops"]
