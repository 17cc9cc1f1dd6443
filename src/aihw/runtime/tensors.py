"""Bytes held by tensors: one counter for elements, one for distinct storages, one for what autograd saves.

The pipeline (:mod:`aihw.parallel.pipeline`), the memory measurements (:mod:`aihw.measure.memory`), the
parallel runs and the model-size tables all count bytes here.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


def tensor_bytes(tensors: torch.Tensor | Iterable[torch.Tensor | None]) -> int:
    """Bytes of the elements of one tensor or of several (numel x element size; None is skipped).

    A distributed tensor (DTensor) counts this rank's shard only. Views are counted as often as they are given:
    see :func:`storage_bytes` for the memory really held.
    """
    if isinstance(tensors, torch.Tensor):
        tensors = (tensors,)
    total = 0
    for t in tensors:
        if t is None:
            continue
        local = t.to_local() if hasattr(t, "to_local") else t
        total += local.numel() * local.element_size()
    return total


def grad_of(param: torch.Tensor) -> torch.Tensor:
    """``param.grad``, which a backward pass has filled (AssertionError if it has not)."""
    assert param.grad is not None, "a parameter got no gradient: was backward run?"
    return param.grad


def storage_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """Bytes of the distinct storages behind ``tensors`` (a view or a repeat costs nothing extra)."""
    seen: dict[tuple, int] = {}
    for t in tensors:
        st = t.untyped_storage()
        seen[(t.device, st.data_ptr())] = st.nbytes()
    return sum(seen.values())



class SavedTensorCounter:
    """Context manager counting the bytes autograd saves for backward, each storage once."""

    def __init__(self, model: torch.nn.Module) -> None:
        self._exclude = {(t.device, t.untyped_storage().data_ptr())
                         for t in (*model.parameters(), *model.buffers())}
        self.storages: dict[tuple, int] = {}
        self.saves = 0  # number of pack calls (a tensor saved twice counts twice here, once in bytes)

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        self.saves += 1
        key = (t.device, t.untyped_storage().data_ptr())
        if key not in self._exclude:
            self.storages[key] = t.untyped_storage().nbytes()
        return t

    def __enter__(self) -> SavedTensorCounter:
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._hooks.__exit__(*exc)

    @property
    def bytes(self) -> int:
        return sum(self.storages.values())
