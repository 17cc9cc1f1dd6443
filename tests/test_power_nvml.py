"""NVML energy reads the GPU that CUDA calls ``device``, matched by UUID (NVML's index ignores CUDA_VISIBLE_DEVICES)."""

import sys
import types

import pytest
import torch

from aihw.accel import power


class FakeNVMLError(Exception):
    pass


def fake_pynvml(counters):
    """Three GPUs in NVML order; each energy read adds that GPU's step (mJ) to its counter."""
    module = types.ModuleType("pynvml")
    module.NVMLError = FakeNVMLError
    state = {"energy": dict.fromkeys(counters, 0), "init": 0, "shutdown": 0}

    def by_uuid(uuid):
        if isinstance(uuid, bytes):
            uuid = uuid.decode()
        if uuid not in counters:
            raise FakeNVMLError(f"no GPU {uuid}")
        return uuid

    def by_index(index):
        raise AssertionError("the NVML index is not the CUDA index: look the GPU up by UUID")

    def energy(handle):
        state["energy"][handle] += counters[handle]
        return state["energy"][handle]

    module.nvmlInit = lambda: state.__setitem__("init", state["init"] + 1)
    module.nvmlShutdown = lambda: state.__setitem__("shutdown", state["shutdown"] + 1)
    module.nvmlDeviceGetHandleByUUID = by_uuid
    module.nvmlDeviceGetHandleByIndex = by_index
    module.nvmlDeviceGetTotalEnergyConsumption = energy
    return module, state


@pytest.fixture
def visible_gpu_2(monkeypatch):
    """CUDA_VISIBLE_DEVICES=2: CUDA's device 0 is NVML's third GPU."""
    counters = {"GPU-aaaa": 1000, "GPU-bbbb": 2000, "GPU-cccc": 7000}
    module, state = fake_pynvml(counters)
    monkeypatch.setitem(sys.modules, "pynvml", module)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda device: types.SimpleNamespace(uuid="cccc" if device == 0 else "unknown"))
    return state


def test_energy_comes_from_the_gpu_with_cuda_devices_uuid(visible_gpu_2):
    reading = power.read_energy(lambda: None, calls=3, source="nvml", device=0)
    assert reading.reason == "" and reading.joules == pytest.approx(7.0)  # GPU-cccc's step, in joules
    assert visible_gpu_2["init"] == visible_gpu_2["shutdown"] == 1


def test_uuid_gets_nvmls_prefix_once(visible_gpu_2):
    assert power.nvml_uuid(0) == "GPU-cccc"


def test_unknown_uuid_is_a_reason_not_a_number(visible_gpu_2):
    reading = power.read_energy(lambda: None, calls=1, source="nvml", device=1)
    assert reading.joules is None and "GPU-unknown" in reading.reason


def test_torch_without_uuid_says_why(visible_gpu_2, monkeypatch):
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: types.SimpleNamespace())
    reading = power.read_energy(lambda: None, calls=1, source="nvml", device=0)
    assert reading.joules is None and "UUID" in reading.reason
