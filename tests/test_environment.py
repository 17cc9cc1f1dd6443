"""The labs' first output: the runtime's versions, device, GPU and its catalogue match in one block."""

from __future__ import annotations

import types

import torch

import aihw
from aihw.measure.environment import environment


def test_cpu_runtime_names_versions_and_says_no_gpu():
    env = environment("cpu")
    text = str(env)
    assert env.device == "cpu" and env.gpu_name is None and env.catalogue_chip is None
    assert f"aihw: {aihw.__version__}" in text and f"torch: {torch.__version__}" in text
    assert "none (the labs run on the CPU)" in text
    assert len(text.splitlines()) == 6  # one short block
    assert "<table" in env._repr_html_() and "aihw" in env._repr_html_()


def _fake_gpu(monkeypatch, name: str, capability: tuple[int, int]) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: name)
    props = types.SimpleNamespace(name=name, major=capability[0], minor=capability[1], total_memory=16 * 2**30)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index=0: props)


def test_a_catalogue_gpu_is_named_with_its_catalogue_chip(monkeypatch):
    _fake_gpu(monkeypatch, "Tesla T4", (7, 5))
    env = environment(torch.device("cuda", 0))
    assert env.gpu_name == "Tesla T4"
    assert env.catalogue_chip is not None and "T4" in env.catalogue_chip
    assert f"catalogue match: {env.catalogue_chip}" in str(env)


def test_an_unknown_gpu_says_measured_figures_only(monkeypatch):
    _fake_gpu(monkeypatch, "Imaginary GPU 9000", (9, 9))
    env = environment(torch.device("cuda", 0))
    assert env.catalogue_chip is None
    assert "not in the catalogue: measured figures only" in str(env)
