"""Pruning: set weights to zero (unstructured, 2:4 semi-structured) or remove whole neurons (structured).

* **Unstructured** magnitude pruning (Han et al. 2015) zeroes the smallest weights anywhere, through
  ``torch.nn.utils.prune``. The tensor keeps its shape: a dense kernel multiplies the zeros like any other
  number, so it is no faster (measured in the chapter).
* **2:4 semi-structured** sparsity keeps the 2 largest of every 4 consecutive weights along the input
  dimension: the pattern NVIDIA's sparse tensor cores skip, for up to 2× matmul throughput (Mishra et al. 2021).
  The CPU has no such kernel; here it is a mask, and its speed on a GPU is a datasheet claim, not a measurement.
* **Structured** pruning removes hidden neurons (rows of one weight, columns of the next) and returns a really
  smaller *dense* model, which every kernel runs faster.

Masks stay attached (``weight = weight_orig * weight_mask``) until :func:`make_permanent`, so fine-tuning keeps
pruned weights at zero.
"""

from __future__ import annotations

import copy
from dataclasses import asdict
from pathlib import Path
from typing import Literal, get_args

import torch
from torch import nn
from torch.nn.utils import prune as torch_prune

from aihw._validate import require_choice, require_in_range
from aihw.models.digits import Digits, TrainConfig, accuracy, fit, linear_flops

Structure = Literal["unstructured", "2:4", "neurons"]
STRUCTURES: tuple[str, ...] = get_args(Structure)


def _linears(model: nn.Module) -> list[nn.Linear]:
    return [m for m in model.modules() if isinstance(m, nn.Linear)]


def _check_sparsity(sparsity: float) -> float:
    return require_in_range("sparsity", sparsity, 0, 1, high_inclusive=False)


def magnitude_prune(model: nn.Module, sparsity: float, *, scope: str = "global") -> nn.Module:
    """A copy of ``model`` with the fraction ``sparsity`` (0 ≤ s < 1) of Linear weights set to zero by magnitude.

    ``scope="global"`` ranks all weights together (layers with small weights lose more); ``"layer"`` prunes
    each layer to the same sparsity. Biases are kept. Masks stay attached (see :func:`make_permanent`).
    """
    _check_sparsity(sparsity)
    require_choice("scope", scope, ("global", "layer"))
    pruned = copy.deepcopy(model)
    params = [(m, "weight") for m in _linears(pruned)]
    if scope == "global":
        torch_prune.global_unstructured(params, pruning_method=torch_prune.L1Unstructured, amount=float(sparsity))
    else:
        for module, name in params:
            torch_prune.l1_unstructured(module, name, amount=float(sparsity))
    return pruned


def two_four_mask(weight: torch.Tensor) -> torch.Tensor:
    """A 0/1 mask keeping the 2 largest-magnitude of every 4 consecutive weights along the last axis."""
    if weight.dim() != 2 or weight.shape[1] % 4:
        raise ValueError(f"2:4 sparsity needs a 2-D weight whose input size is a multiple of 4, "
                         f"got shape {tuple(weight.shape)}")
    groups = weight.detach().abs().reshape(-1, 4)
    keep = groups.topk(2, dim=1).indices
    mask = torch.zeros_like(groups).scatter_(1, keep, 1.0)
    return mask.reshape(weight.shape)


def semi_structured_prune(model: nn.Module) -> nn.Module:
    """A copy of ``model`` with a 2:4 mask on every Linear whose input size is a multiple of 4 (50% sparse)."""
    pruned = copy.deepcopy(model)
    for module in _linears(pruned):
        if module.in_features % 4 == 0:
            torch_prune.custom_from_mask(module, "weight", two_four_mask(module.weight))
    return pruned


def make_permanent(model: nn.Module) -> nn.Module:
    """Fold attached masks into the weights (in place): plain Linears with zeros in them. Returns ``model``."""
    for module in _linears(model):
        if torch_prune.is_pruned(module):
            torch_prune.remove(module, "weight")
    return model


def sparsity(model: nn.Module) -> float:
    """Fraction of Linear weights that are exactly zero (0..1)."""
    total = zeros = 0
    for module in _linears(model):
        total += module.weight.numel()
        zeros += int((module.weight == 0).sum())
    return zeros / total if total else 0.0


def _neuron_scores(layer: nn.Linear, following: nn.Linear) -> torch.Tensor:
    """Importance of each hidden neuron: L2 norm of its incoming row times that of its outgoing column."""
    incoming = torch.cat([layer.weight, layer.bias[:, None]], dim=1) if layer.bias is not None else layer.weight
    return incoming.detach().norm(dim=1) * following.weight.detach().norm(dim=0)


def prune_neurons(model: nn.Sequential, sparsity: float) -> nn.Sequential:
    """A smaller dense copy of an MLP (Linear/activation Sequential) with the fraction ``sparsity`` of each
    hidden layer's neurons removed, the least important first (at least one neuron is kept per layer)."""
    _check_sparsity(sparsity)
    if not isinstance(model, nn.Sequential):
        raise ValueError(f"prune_neurons needs an nn.Sequential MLP, got {type(model).__name__}")
    if any(torch_prune.is_pruned(m) for m in _linears(model)):
        raise ValueError("call make_permanent() on a masked model before removing neurons")
    layers = list(copy.deepcopy(model))
    positions = [i for i, m in enumerate(layers) if isinstance(m, nn.Linear)]
    for here, nxt in zip(positions[:-1], positions[1:], strict=True):
        layer, following = layers[here], layers[nxt]
        assert isinstance(layer, nn.Linear) and isinstance(following, nn.Linear)
        keep_n = max(1, round(layer.out_features * (1 - sparsity)))
        keep = _neuron_scores(layer, following).topk(keep_n).indices.sort().values
        layers[here] = _slice_linear(layer, rows=keep)
        layers[nxt] = _slice_linear(following, cols=keep)
    return nn.Sequential(*layers).eval()


def _slice_linear(linear: nn.Linear, *, rows: torch.Tensor | None = None,
                  cols: torch.Tensor | None = None) -> nn.Linear:
    w = linear.weight.detach()
    b = None if linear.bias is None else linear.bias.detach()
    if rows is not None:
        w, b = w[rows], None if b is None else b[rows]
    if cols is not None:
        w = w[:, cols]
    new = nn.Linear(w.shape[1], w.shape[0], bias=b is not None)
    with torch.no_grad():
        new.weight.copy_(w)
        if b is not None:
            new.bias.copy_(b)
    return new


def prune(model: nn.Sequential, sparsity: float, *, structure: str = "unstructured") -> nn.Module:
    """Dispatch on ``structure``: "unstructured" (global magnitude), "2:4" (``sparsity`` must be 0.5) or
    "neurons" (structured). Masks stay attached so the result can be fine-tuned."""
    require_choice("structure", structure, STRUCTURES)
    _check_sparsity(sparsity)
    if structure == "unstructured":
        return magnitude_prune(model, sparsity)
    if structure == "2:4":
        if sparsity != 0.5:
            raise ValueError(f"2:4 sparsity is always 0.5 (2 of every 4 weights), got sparsity={sparsity}")
        return semi_structured_prune(model)
    return prune_neurons(model, sparsity)


def fine_tune(model: nn.Module, data, *, epochs: int = 5, lr: float = 1e-3, seed: int = 0) -> nn.Module:
    """Train a pruned model a few more epochs on ``data`` (an :class:`aihw.models.digits.Digits`); attached masks keep
    pruned weights at zero. Returns the model with masks folded in."""
    fit(model, data, TrainConfig(hidden=(1,), epochs=epochs, lr=lr, weight_decay=0.0, seed=seed))
    return make_permanent(model)


def sparsity_sweep(model: nn.Sequential, data, *, levels: tuple[float, ...] = (0.5, 0.7, 0.8, 0.9, 0.95),
                   structures: tuple[str, ...] = ("unstructured", "neurons"), fine_tune_epochs: int = 5,
                   seed: int = 0) -> list[dict]:
    """Test accuracy after pruning ``model`` to each level with each structure, without and with fine-tuning
    (``seed``: the fine-tuning's batch order).

    Rows: structure, sparsity (asked), measured_sparsity (zero weights, or removed neurons), fine_tuned, accuracy,
    flops (dense FLOP per image), params.
    """
    rows = []
    for structure in structures:
        for level in levels:
            for tuned in (False, True) if fine_tune_epochs else (False,):
                pruned = prune(model, level, structure=structure)
                pruned = (fine_tune(pruned, data, epochs=fine_tune_epochs, seed=seed) if tuned
                          else make_permanent(pruned))
                measured = (sparsity(pruned) if structure != "neurons"
                            else 1 - _hidden_width(pruned) / _hidden_width(model))
                rows.append({"structure": structure, "sparsity": level, "measured_sparsity": measured,
                             "fine_tuned": tuned, "accuracy": accuracy(pruned, data.x_test, data.y_test),
                             "flops": linear_flops(pruned, 1), "params": sum(p.numel() for p in pruned.parameters())})
    return rows


def sparsity_sweep_seeds(config: TrainConfig, data: Digits, *, seeds: tuple[int, ...] = (0, 1, 2, 3, 4),
                         levels: tuple[float, ...] = (0.5, 0.7, 0.8, 0.9, 0.95),
                         structures: tuple[str, ...] = ("unstructured", "neurons"), fine_tune_epochs: int = 5,
                         cache_dir: str | Path | None = None) -> dict:
    """:func:`sparsity_sweep` repeated over ``seeds``: one base model trained per seed (``config`` with that seed,
    cached by :func:`aihw.models.digits.trained_mlps`), pruned, and fine-tuned with the same seed.

    Returns ``seeds``, ``dense`` (the unpruned models' test accuracies, one per seed) and ``rows``: one per
    (structure, sparsity, fine_tuned) with ``accuracies`` (per seed, in the order of ``seeds``), ``ci`` (their
    mean and 95% interval) and ``vs_dense`` (the paired interval of pruned − unpruned, seed by seed). Compare two
    rows with :func:`aihw.stats.paired_difference_ci95` on their ``accuracies``: they share the base models. The
    accuracies are cached as JSON under ``cache_dir`` (None: ``default_cache_dir()``), keyed by everything that
    decides them.
    """
    from aihw.models.digits import cached_json, data_fingerprint, trained_mlps
    from aihw.stats import with_intervals

    for structure in structures:
        require_choice("structure", structure, STRUCTURES)
    for level in levels:
        _check_sparsity(level)
    spec = {"config": asdict(config), "seeds": list(seeds), "levels": list(levels), "structures": list(structures),
            "fine_tune_epochs": fine_tune_epochs, "data": data_fingerprint(data)}

    def run() -> dict:
        models, _ = trained_mlps(config, seeds, data=data, cache_dir=cache_dir)
        per_seed = [sparsity_sweep(m, data, levels=levels, structures=structures, fine_tune_epochs=fine_tune_epochs,
                                   seed=int(s)) for m, s in zip(models, seeds, strict=True)]
        rows = [{k: r[k] for k in ("structure", "sparsity", "fine_tuned", "flops", "params")}
                | {"accuracies": [sweep[i]["accuracy"] for sweep in per_seed],
                   "measured_sparsity": [sweep[i]["measured_sparsity"] for sweep in per_seed]}
                for i, r in enumerate(per_seed[0])]
        return {"seeds": list(seeds), "dense": [accuracy(m, data.x_test, data.y_test) for m in models], "rows": rows}

    return with_intervals(cached_json("prune-seeds", spec, run, cache_dir=cache_dir), "dense", "vs_dense")


def _hidden_width(model: nn.Module) -> int:
    return sum(m.out_features for m in _linears(model)[:-1])


__all__ = ["STRUCTURES", "magnitude_prune", "two_four_mask", "semi_structured_prune", "make_permanent",
           "sparsity", "prune_neurons", "prune", "fine_tune", "sparsity_sweep",
           "sparsity_sweep_seeds"]
