"""make test-gpu's first step: it cannot go green without a GPU that this Python's torch sees."""

import subprocess

from aihw.measure.gpu_preflight import TorchView, nvidia_smi_gpus, verdict

SMI_OUT = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1111)\n"
           "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-2222)\n")


def test_gpu_seen_by_nvidia_smi_but_not_by_torch_fails_with_one_line():
    code, line = verdict(("NVIDIA H100 80GB HBM3",), TorchView("2.9.0", "13.0", ()), python="/venv/bin/python")
    assert code == 2 and "\n" not in line
    assert "nvidia-smi sees 1 GPU(s)" in line and "CUDA 13.0" in line and "PYTHON_GPU" in line


def test_cpu_only_torch_is_named():
    code, line = verdict(("Tesla T4",), TorchView("2.9.0+cpu", None, ()))
    assert code == 2 and "CPU-only build" in line


def test_no_gpu_at_all_is_not_a_pass():
    assert verdict(None, TorchView("2.9.0", None, ()))[0] == 2
    assert verdict((), TorchView("2.9.0", "12.8", ()))[0] == 2


def test_torch_that_cannot_be_imported_is_reported():
    code, line = verdict(None, TorchView(error="ImportError: libcudart.so.13"))
    assert code == 2 and "libcudart" in line


def test_torch_seeing_the_gpus_passes_and_names_them():
    code, line = verdict(("NVIDIA H100 80GB HBM3",) * 2, TorchView("2.9.0", "12.8", ("NVIDIA H100 80GB HBM3",) * 2))
    assert code == 0 and "sees 2 GPU(s): NVIDIA H100 80GB HBM3" in line


def test_nvidia_smi_listing_is_parsed(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/nvidia-smi")
    fake = lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=SMI_OUT, stderr="")  # noqa: E731
    assert nvidia_smi_gpus(run=fake) == ("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3")
    failing = lambda *a, **k: subprocess.CompletedProcess(a, 9, stdout="", stderr="driver mismatch")  # noqa: E731
    assert nvidia_smi_gpus(run=failing) is None


def test_makefile_uses_the_runtime_python_and_runs_the_preflight_first():
    text = open("Makefile", encoding="utf-8").read()
    block = text[text.index("\ntest-gpu:"):].split("\n\n")[0]
    assert "setup" not in block.splitlines()[1]  # no fresh venv with PyPI's torch
    assert "PYTHON_GPU ?= python3" in text and "GPU_RUN = PYTHONPATH=$(CURDIR)/src $(PYTHON_GPU)" in text
    assert "$(GPU_RUN)" in block and "pip install" not in block and "$(BIN)" not in block
    assert block.index("gpu_preflight") < block.index("pytest")


def test_missing_test_tools_are_listed():
    from aihw.measure.gpu_preflight import missing_modules

    assert missing_modules(("pytest", "no_such_module_xyz")) == ("no_such_module_xyz",)
