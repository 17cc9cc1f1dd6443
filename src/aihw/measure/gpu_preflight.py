"""Before ``make test-gpu`` runs anything: is there a GPU, and does this Python's torch see it? One line, exit code.

``make test-gpu`` uses the runtime's own torch (``PYTHON_GPU``, default ``python3``) and never installs one: a
torch wheel from PyPI may be built for a newer CUDA than the machine's driver, and would then see no GPU and
test nothing. So this check fails loudly when ``nvidia-smi`` lists a GPU that torch cannot use, and when there
is no GPU at all (a green ``make test-gpu`` must mean that GPU code ran).

    python -m aihw.measure.gpu_preflight     # exit 0: "torch 2.x (CUDA 12.x) sees 1 GPU: NVIDIA H100 ..."
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class TorchView:
    """What this Python's torch says about CUDA (``error``: why torch could not be imported)."""

    version: str = ""
    cuda_build: str | None = None  # torch.version.cuda: None for a CPU-only build
    gpus: tuple[str, ...] = ()
    error: str = ""


def nvidia_smi_gpus(run: Callable[..., subprocess.CompletedProcess] = subprocess.run) -> tuple[str, ...] | None:
    """GPU names ``nvidia-smi -L`` lists, or None when nvidia-smi is not installed or cannot talk to a driver."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return tuple(line.split(":", 1)[1].split("(UUID")[0].strip() for line in out.stdout.splitlines()
                 if line.startswith("GPU ") and ":" in line)


def torch_view() -> TorchView:
    try:
        import torch
    except Exception as error:  # an ImportError, or a broken CUDA library raising something else
        return TorchView(error=f"{type(error).__name__}: {error}")
    gpus = tuple(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())) \
        if torch.cuda.is_available() else ()
    return TorchView(torch.__version__, torch.version.cuda, gpus)


def verdict(smi: tuple[str, ...] | None, view: TorchView, python: str = sys.executable) -> tuple[int, str]:
    """(exit code, one line): 0 only when torch sees a GPU; 2 with the reason otherwise."""
    if view.error:
        return 2, f"make test-gpu: {python} cannot import torch ({view.error}); set PYTHON_GPU to the runtime's python"
    if view.gpus:
        names = ", ".join(sorted(set(view.gpus)))
        return 0, f"torch {view.version} (CUDA {view.cuda_build}) in {python} sees {len(view.gpus)} GPU(s): {names}"
    if smi:
        why = ("this torch is a CPU-only build" if view.cuda_build is None else
               f"this torch is built for CUDA {view.cuda_build}, which the installed driver may not support")
        return 2, (f"make test-gpu: nvidia-smi sees {len(smi)} GPU(s) ({smi[0]}) but torch {view.version} in "
                   f"{python} sees none: {why}; use the runtime's own torch (PYTHON_GPU=/path/to/python)")
    return 2, "make test-gpu: no NVIDIA GPU here (nvidia-smi lists none), so nothing was tested; make test is the CPU suite"


NEEDED = ("pytest", "nbval", "numpy")  # what the GPU suite imports besides torch


def missing_modules(names: tuple[str, ...] = NEEDED) -> tuple[str, ...]:
    import importlib.util

    return tuple(name for name in names if importlib.util.find_spec(name) is None)


def main() -> int:
    code, line = verdict(nvidia_smi_gpus(), torch_view())
    missing = missing_modules()
    if code == 0 and missing:
        code, line = 2, (f"make test-gpu: {sys.executable} has torch with a GPU but lacks {', '.join(missing)} "
                         "(install those into it, not a new torch)")
    print(line, file=sys.stdout if code == 0 else sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
