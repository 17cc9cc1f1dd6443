"""What this runtime is, in one short block: the first output of every lab.

In a classroom each student's notebook runs somewhere else (a Colab GPU, a laptop CPU, a lab machine). The block
names the versions of ``aihw`` and torch, the device the labs will use, and on a GPU its name and the catalogue
chip it matched (whose datasheet the predictions use), so an instructor sees at a glance what each student has.
"""

from __future__ import annotations

import html
import platform
from dataclasses import dataclass

import torch

import aihw
from aihw.runtime.device import detect_chip, pick_device


@dataclass(frozen=True, repr=False)
class Environment:
    """The facts of one runtime; shows as a small table in a notebook and as a few lines in a terminal."""

    aihw_version: str
    torch_version: str
    python_version: str
    device: str
    gpu_name: str | None
    catalogue_chip: str | None
    catalogue_note: str

    def rows(self) -> list[tuple[str, str]]:
        gpu = self.gpu_name or "none (the labs run on the CPU)"
        chip = self.catalogue_chip or ("not in the catalogue: measured figures only" if self.gpu_name else "–")
        return [("aihw", self.aihw_version), ("torch", self.torch_version), ("Python", self.python_version),
                ("device", self.device), ("GPU", gpu), ("catalogue match", chip)]

    def __str__(self) -> str:
        return "\n".join(f"{name:>15}: {value}" for name, value in self.rows())

    __repr__ = __str__  # the plain-text view of a notebook shows the block too

    def _repr_html_(self) -> str:
        cells = "".join(f"<tr><th style='text-align:right;padding-right:8px'>{html.escape(k)}</th>"
                        f"<td style='text-align:left'>{html.escape(v)}</td></tr>" for k, v in self.rows())
        return (f'<div style="border-left:4px solid #555;padding:4px 8px;margin:4px 0">'
                f'<table style="margin:0">{cells}</table></div>')


def environment(device: str | torch.device = "auto") -> Environment:
    """Describe this runtime; ``device`` as for :func:`aihw.runtime.device.pick_device` ("auto" picks a GPU first)."""
    resolved = device if isinstance(device, torch.device) else pick_device(device)
    gpu_name = None
    if resolved.type == "cuda":
        gpu_name = torch.cuda.get_device_name(resolved.index if resolved.index is not None else 0)
    detection = detect_chip(resolved)
    return Environment(aihw_version=aihw.__version__, torch_version=torch.__version__,
                       python_version=platform.python_version(), device=str(resolved), gpu_name=gpu_name,
                       catalogue_chip=detection.chip.name if detection.chip else None,
                       catalogue_note=detection.note)
