"""Knowledge distillation (Hinton, Vinyals, Dean 2015): a small student learns from a large teacher's soft labels.

The loss mixes the teacher's temperature-softened class probabilities with the true labels::

    L = α · T² · KL(softmax(z_t / T) ‖ softmax(z_s / T)) + (1 − α) · CE(z_s, y)

A temperature T > 1 spreads the teacher's probability over the wrong classes ("this 7 looks a bit like a 1"),
which carries more information per example than a one-hot label; the T² keeps the gradient scale of the soft term
independent of T. The control is the same student, same initialisation and schedule, trained on labels alone.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from aihw._validate import require_in_range, require_positive
from aihw.models.digits import Digits, TrainConfig, accuracy, default_cache_dir, fit, make_mlp


def _check_temperature(temperature: float) -> float:
    return require_positive("temperature", temperature)


def kd_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, targets: torch.Tensor, *,
            temperature: float = 4.0, alpha: float = 0.9) -> torch.Tensor:
    """Hinton's distillation loss (mean over the batch): α·T²·KL(teacher‖student at T) + (1−α)·cross-entropy."""
    _check_temperature(temperature)
    require_in_range("alpha", alpha, 0, 1)
    soft_teacher = F.log_softmax(teacher_logits.detach() / temperature, dim=1)
    soft_student = F.log_softmax(student_logits / temperature, dim=1)
    kl = F.kl_div(soft_student, soft_teacher, reduction="batchmean", log_target=True)
    return alpha * temperature**2 * kl + (1 - alpha) * F.cross_entropy(student_logits, targets)


@dataclass(frozen=True)
class DistillConfig:
    """The student and how it is taught. The control run uses the same fields except the teacher."""

    student_hidden: tuple[int, ...] = (64,)  # hidden widths of the student MLP
    temperature: float = 4.0  # T > 0; 1 = the teacher's ordinary probabilities
    alpha: float = 0.9  # weight of the soft (teacher) term, 0..1
    epochs: int = 30
    batch_size: int = 64
    lr: float = 3e-3
    seed: int = 0  # same initialisation for the distilled student and the control
    train_fraction: float = 1.0  # share of the training images the student sees (the teacher saw them all)

    def __post_init__(self) -> None:
        _check_temperature(self.temperature)
        require_in_range("alpha", self.alpha, 0, 1)
        require_in_range("train_fraction", self.train_fraction, 0, 1, low_inclusive=False)
        # the remaining fields are checked by TrainConfig
        self.train_config()

    def train_config(self) -> TrainConfig:
        return TrainConfig(hidden=self.student_hidden, epochs=self.epochs, batch_size=self.batch_size, lr=self.lr,
                           weight_decay=0.0, seed=self.seed)


def transfer_set(data: Digits, fraction: float) -> Digits:
    """The first ``fraction`` of the training images (the split is already shuffled); the test set unchanged."""
    require_in_range("fraction", fraction, 0, 1, low_inclusive=False)
    n = max(1, round(fraction * len(data.y_train)))
    return Digits(data.x_train[:n], data.y_train[:n], data.x_test, data.y_test)


def _fresh_student(config: DistillConfig) -> nn.Sequential:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        return make_mlp(config.student_hidden)


def distill(teacher: nn.Module, data: Digits, config: DistillConfig = DistillConfig()) -> nn.Sequential:
    """Train a fresh student of ``config.student_hidden`` on ``data`` with :func:`kd_loss` against ``teacher``."""
    teacher = teacher.eval()

    def loss(logits: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            teacher_logits = teacher(x)
        return kd_loss(logits, teacher_logits, y, temperature=config.temperature, alpha=config.alpha)

    return fit(_fresh_student(config), transfer_set(data, config.train_fraction), config.train_config(), loss_fn=loss)


def train_student_alone(data: Digits, config: DistillConfig = DistillConfig()) -> nn.Sequential:
    """The control: the same student, initialisation and schedule, trained on the labels only."""
    return fit(_fresh_student(config), transfer_set(data, config.train_fraction), config.train_config())


def distill_and_control(teacher: nn.Module, data: Digits,
                        config: DistillConfig = DistillConfig()) -> tuple[nn.Sequential, nn.Sequential]:
    """(distilled student, student trained from scratch): the pair every comparison needs."""
    return distill(teacher, data, config), train_student_alone(data, config)


def temperature_sweep(teacher: nn.Module, data: Digits, temperatures: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0),
                      config: DistillConfig = DistillConfig()) -> list[dict]:
    """Test accuracy of the distilled student at each temperature (rows: temperature, accuracy)."""
    from dataclasses import replace

    rows = []
    for t in temperatures:
        student = distill(teacher, data, replace(config, temperature=t))
        rows.append({"temperature": t, "accuracy": accuracy(student, data.x_test, data.y_test)})
    return rows


def temperature_sweep_seeds(teacher: nn.Module, data: Digits,
                            temperatures: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0),
                            config: DistillConfig = DistillConfig(), *, seeds: tuple[int, ...] = (0, 1, 2, 3, 4),
                            cache_dir: str | Path | None = None, threads: int | None = 1) -> dict:
    """:func:`temperature_sweep` over ``seeds``, with the control (the student trained alone) at each seed.

    Each seed fixes the student's initialisation and batch order for the control and for every temperature, so
    every comparison is paired; the teacher and the split stay fixed. Returns ``seeds``, ``alone`` (the
    control's test accuracy per seed), ``alone_ci`` and ``rows``: one per temperature with ``accuracies`` (per
    seed), ``ci`` (mean and 95% interval) and ``vs_alone`` (paired interval of distilled − alone). The
    accuracies are cached as JSON under ``cache_dir`` (None: ``default_cache_dir()``), keyed by the teacher's
    weights, the data, the config, the temperatures and the seeds. ``threads``: torch intra-op threads
    (:func:`aihw.models.digits.torch_threads`).
    """
    from dataclasses import asdict, replace

    from aihw.models.digits import cached_json, data_fingerprint, torch_threads
    from aihw.stats import with_intervals

    if len(seeds) < 2 or len(set(seeds)) != len(seeds):
        raise ValueError(f"need at least two distinct seeds for an interval, got {seeds!r}")
    for t in temperatures:
        _check_temperature(t)
    spec = {"teacher": _teacher_fingerprint(teacher), "data": data_fingerprint(data), "config": asdict(config),
            "temperatures": [float(t) for t in temperatures], "seeds": list(seeds)}

    def run() -> dict:
        with torch_threads(threads):
            return _run()

    def _run() -> dict:
        test = (data.x_test, data.y_test)
        alone = [accuracy(train_student_alone(data, replace(config, seed=s)), *test) for s in seeds]
        rows = [{"temperature": float(t), "accuracies": [
            accuracy(distill(teacher, data, replace(config, temperature=t, seed=s)), *test) for s in seeds]}
            for t in temperatures]
        return {"seeds": list(seeds), "alone": alone, "rows": rows}

    return with_intervals(cached_json("distill-sweep", spec, run, cache_dir=cache_dir), "alone", "vs_alone")


def _teacher_fingerprint(teacher: nn.Module) -> str:
    digest = hashlib.sha256()
    for name, tensor in sorted(teacher.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def seed_comparison(teacher: nn.Module, data: Digits, config: DistillConfig = DistillConfig(), *,
                    seeds: tuple[int, ...] = (0, 1, 2, 3, 4), cache_dir: str | Path | None = None) -> dict:
    """Distilled student vs the same student trained alone, over ``seeds`` (paired: same seed, same init).

    Returns the per-seed test accuracies ("distilled", "alone"), each one's mean and 95% interval, and the
    interval of the paired difference: distillation helps (or hurts) only when that interval excludes zero.
    Results are cached as JSON (keyed by the teacher's weights, the data, the config and the seeds), so a
    rebuilt page does not retrain; ``cache_dir=None`` uses ``aihw.models.digits.default_cache_dir()``.
    """
    from dataclasses import asdict, replace

    from aihw.stats import mean_ci95, paired_difference_ci95

    if len(seeds) < 2:
        raise ValueError(f"need at least two seeds for an interval, got {seeds!r}")
    spec = {"teacher": _teacher_fingerprint(teacher), "config": asdict(config), "seeds": list(seeds),
            "n_train": len(data.y_train), "n_test": len(data.y_test), "torch": torch.__version__.split("+")[0]}
    key = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
    folder = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = folder / f"distill-seeds-{key}.json"
    runs = None
    if path.exists():
        try:
            runs = json.loads(path.read_text())
        except (OSError, ValueError):
            runs = None
    if runs is None:
        runs = {"distilled": [], "alone": []}
        for seed in seeds:
            cfg = replace(config, seed=seed)
            student, alone = distill_and_control(teacher, data, cfg)
            runs["distilled"].append(accuracy(student, data.x_test, data.y_test))
            runs["alone"].append(accuracy(alone, data.x_test, data.y_test))
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(runs))
        os.replace(tmp, path)
    return {**runs, "distilled_ci": mean_ci95(runs["distilled"]), "alone_ci": mean_ci95(runs["alone"]),
            "difference": paired_difference_ci95(runs["distilled"], runs["alone"])}


__all__ = ["kd_loss", "DistillConfig", "distill", "train_student_alone", "distill_and_control", "transfer_set",
           "temperature_sweep", "temperature_sweep_seeds", "seed_comparison"]
