"""Device and backend choice: real answers on this machine, simulated GPUs through monkeypatch."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from aihw.runtime.device import BackendChoice, describe_device, pick_backend, pick_device

requires_no_gpu = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only answers")


def _simulate_gpus(monkeypatch: pytest.MonkeyPatch, count: int, nccl: bool = True) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(dist, "is_nccl_available", lambda: nccl)


def test_pick_device_cpu_always_works():
    assert pick_device("cpu") == torch.device("cpu")
    assert pick_device(" CPU ") == torch.device("cpu")


@requires_no_gpu
def test_pick_device_auto_falls_back_without_gpu():
    assert pick_device("auto").type in ("cpu", "mps")


@requires_no_gpu
@pytest.mark.parametrize("preference", ["cuda", "cuda:0", "cuda:3"])
def test_pick_device_gpu_request_without_gpu_names_it_and_what_exists(preference):
    with pytest.raises(ValueError, match=rf"'{preference}'.*no CUDA GPU.*available: cpu"):
        pick_device(preference)


def test_pick_device_unknown_name_lists_choices_and_close_matches():
    with pytest.raises(ValueError, match=r"'cdua'.*allowed: auto, cpu.*did you mean 'cuda'"):
        pick_device("cdua")
    with pytest.raises(ValueError, match="cuda:0"):
        pick_device("cuda:N")


def test_pick_device_simulated_gpus_checks_index(monkeypatch):
    _simulate_gpus(monkeypatch, 2)
    assert pick_device("auto") == torch.device("cuda", 0)
    assert pick_device("cuda:1") == torch.device("cuda", 1)
    with pytest.raises(ValueError, match=r"'cuda:2'.*2 CUDA GPU"):
        pick_device("cuda:2")


@requires_no_gpu
def test_pick_backend_cpu_is_gloo_with_reason():
    choice = pick_backend(2)
    assert isinstance(choice, BackendChoice)
    assert (choice.backend, choice.device_type) == ("gloo", "cpu")
    assert "gloo" in choice.reason and "no CUDA GPU" in choice.reason


@requires_no_gpu
def test_pick_backend_nccl_on_cpu_machine_raises_why():
    with pytest.raises(ValueError, match=r"nccl.*no CUDA GPU"):
        pick_backend(2, preference="nccl")


def test_pick_backend_one_gpu_two_ranks_is_gloo(monkeypatch):
    _simulate_gpus(monkeypatch, 1)
    choice = pick_backend(2)
    assert choice.backend == "gloo"
    assert choice.reason == "gloo: 2 ranks but 1 GPU; NCCL needs one GPU per rank; tensors stay on the CPU"
    with pytest.raises(ValueError, match="2 ranks but 1 GPU"):
        pick_backend(2, preference="nccl")


def test_pick_backend_gpu_per_rank_is_nccl(monkeypatch):
    _simulate_gpus(monkeypatch, 2)
    choice = pick_backend(2)
    assert (choice.backend, choice.device_type) == ("nccl", "cuda")
    assert "one GPU per rank" in choice.reason
    assert pick_backend(2, preference="gloo").backend == "gloo"


def test_pick_backend_without_nccl_build_is_gloo(monkeypatch):
    _simulate_gpus(monkeypatch, 4, nccl=False)
    assert pick_backend(2).backend == "gloo"
    assert "no NCCL support" in pick_backend(2).reason


@pytest.mark.parametrize("world_size", [0, -1, 2.5, True, "2"])
def test_pick_backend_rejects_bad_world_size(world_size):
    with pytest.raises(ValueError, match="world_size"):
        pick_backend(world_size)


def test_pick_backend_rejects_unknown_preference():
    with pytest.raises(ValueError, match=r"'ncl'.*did you mean 'nccl'"):
        pick_backend(2, preference="ncl")


def test_describe_device_reports_this_machine():
    info = describe_device("cpu")
    assert info["device"] == "cpu"
    assert info["torch_version"] == torch.__version__
    assert isinstance(info["cpu_cores"], int) and info["cpu_cores"] >= 1
    assert info["cpu_model"]
    assert info["cuda_available"] == torch.cuda.is_available()
    assert ("cuda_device_name" in info) == torch.cuda.is_available()


def test_gpu_compute_with_fewer_gpus_than_ranks_is_gloo_on_cuda_round_robin(monkeypatch):
    from aihw.runtime.device import GPU_COMPUTE_LABEL, rank_device

    _simulate_gpus(monkeypatch, 1)
    choice = pick_backend(3, gpu_compute=True)
    assert (choice.backend, choice.device_type) == ("gloo", "cuda")
    assert GPU_COMPUTE_LABEL in choice.reason and "3 ranks share 1 GPU" in choice.reason
    assert "all_reduce, broadcast, barrier only" in choice.reason
    assert [rank_device("cuda", r) for r in range(3)] == [torch.device("cuda", 0)] * 3
    _simulate_gpus(monkeypatch, 2)
    assert [rank_device("cuda", r).index for r in range(4)] == [0, 1, 0, 1]
    assert pick_backend(4, gpu_compute=True).device_type == "cuda"
    assert pick_backend(2, gpu_compute=True).backend == "nccl"  # a GPU per rank: NCCL stays
    explicit = pick_backend(2, preference="gloo", gpu_compute=True)
    assert (explicit.backend, explicit.device_type) == ("gloo", "cuda") and "requested explicitly" in explicit.reason


def test_gpu_compute_without_gpu_keeps_cpu_tensors(monkeypatch):
    from aihw.runtime.device import rank_device

    _simulate_gpus(monkeypatch, 0)
    choice = pick_backend(2, gpu_compute=True)
    assert (choice.backend, choice.device_type) == ("gloo", "cpu") and "tensors stay on the CPU" in choice.reason
    assert rank_device("cpu", 5) == torch.device("cpu")
    with pytest.raises(ValueError, match="no CUDA GPU"):
        rank_device("cuda", 0)
    with pytest.raises(ValueError, match="gpu_compute"):
        pick_backend(2, gpu_compute="yes")


def test_launch_config_passes_gpu_compute_and_validates_it():
    from aihw.parallel.launch import LaunchConfig

    assert LaunchConfig().gpu_compute is False and LaunchConfig(gpu_compute=True).gpu_compute is True
    with pytest.raises(ValueError, match="gpu_compute"):
        LaunchConfig(gpu_compute=1)


def test_nccl_algo_is_explicit_and_nccl_only():
    from aihw.parallel.launch import LaunchConfig, _nccl_env, launch

    assert _nccl_env("nccl", "default") == {} and _nccl_env("nccl", "tree") == {"NCCL_ALGO": "Tree"}
    assert _nccl_env("nccl", "ring") == {"NCCL_ALGO": "Ring"}
    with pytest.raises(ValueError, match="nccl_algo"):
        LaunchConfig(nccl_algo="butterfly")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="applies to NCCL only, but this run uses gloo"):
            launch(print, config=LaunchConfig(nccl_algo="ring"))


def test_data_parallel_run_passes_gpu_compute_to_the_launcher(monkeypatch):
    from aihw.parallel import data_parallel

    seen = {}

    def fake_launch(worker, dp_config, *, config, on_progress=None):
        seen["config"] = config
        return [{"rank": 0}]

    monkeypatch.setattr(data_parallel, "launch", fake_launch)
    _simulate_gpus(monkeypatch, 1)
    out = data_parallel.run(data_parallel.DPConfig(), world_size=2, gpu_compute=True)
    assert seen["config"].gpu_compute is True
    assert "compute on GPU, communication through gloo" in out[0]["backend_reason"]
