"""The GPU a student's runtime reports is matched to its catalogue entry by name and compute capability."""

from types import SimpleNamespace

import pytest
import torch

from aihw.catalogue.detect import RULES, match_device
from aihw.catalogue.hardware import get_chip
from aihw.runtime import device


@pytest.mark.parametrize("name, capability, chip", [
    ("Tesla T4", (7, 5), "NVIDIA T4"),
    ("NVIDIA L4", (8, 9), "NVIDIA L4"),
    ("NVIDIA A100-SXM4-40GB", (8, 0), "NVIDIA A100 40GB SXM"),
    ("NVIDIA A100-SXM4-80GB", (8, 0), "NVIDIA A100 80GB SXM"),
    ("NVIDIA H100 80GB HBM3", (9, 0), "NVIDIA H100 SXM"),
    ("NVIDIA H100 PCIe", (9, 0), "NVIDIA H100 PCIe"),
    ("NVIDIA H200", (9, 0), "NVIDIA H200"),
    ("NVIDIA B200", (10, 0), "NVIDIA B200"),
    ("AMD Instinct MI300X", None, "AMD Instinct MI300X"),
])
def test_reported_names_match_catalogue_chips(name, capability, chip):
    found = match_device(name, capability)
    assert found.chip is not None and found.chip.name == chip, found.note


@pytest.mark.parametrize("name, capability", [
    ("NVIDIA GeForce RTX 4090", (8, 9)),
    ("NVIDIA L40S", (8, 9)),
    ("NVIDIA A100 80GB PCIe", (8, 0)),  # a PCIe A100 is not the catalogue's SXM part
    ("NVIDIA H100 NVL", (9, 0)),
    ("NVIDIA H100 80GB HBM3", (8, 0)),  # name and capability disagree
])
def test_unknown_or_inconsistent_gpus_get_a_clear_note(name, capability):
    found = match_device(name, capability)
    assert found.chip is None
    assert "not in the catalogue" in found.note or "treated as not" in found.note


def test_every_rule_names_a_catalogue_gpu_and_bad_names_are_refused():
    for rule in RULES:
        assert get_chip(rule.chip).kind == "gpu"
    with pytest.raises(ValueError, match="non-empty"):
        match_device("  ")


def test_detect_chip_reads_torch_device_properties(monkeypatch):
    props = SimpleNamespace(name="NVIDIA H100 80GB HBM3", major=9, minor=0, total_memory=80 * 2**30)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props)
    found = device.detect_chip(torch.device("cuda", 0))
    assert found.chip is not None and found.chip.name == "NVIDIA H100 SXM"
    cpu = device.detect_chip(torch.device("cpu"))
    assert cpu.chip is None and "not a GPU" in cpu.note


def test_lab_measurement_is_small_on_a_cpu_and_full_size_on_a_gpu(monkeypatch):
    from aihw.measure import roofline

    cpu = roofline.lab_config("cpu")
    assert cpu.dtypes == ("fp32",) and max(cpu.matmul_sizes) <= 512
    props = SimpleNamespace(name="Tesla T4", major=7, minor=5, total_memory=16 * 2**30, L2_cache_size=4 * 2**20)
    monkeypatch.setattr(roofline, "pick_device", lambda preference: torch.device("cuda", 0))
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props)
    gpu = roofline.lab_config("cuda")
    assert set(gpu.dtypes) == {"fp32", "tf32", "fp16", "bf16", "fp8"} and max(gpu.matmul_sizes) == 8192
    assert gpu.copy_mib[0] * 2**20 >= 4 * props.L2_cache_size
