"""Distillation: Hinton's loss, the teacher/student runs and the control."""

import pytest
import torch
from torch.nn import functional as F

from aihw.cheaper import distill
from aihw.models import digits


@pytest.fixture(scope="module")
def setup():
    data = digits.load_digits()
    return digits.train_mlp(data, digits.TrainConfig(hidden=(64,), epochs=8)), data


def test_kd_loss_matches_the_formula():
    g = torch.Generator().manual_seed(0)
    s, t, y = torch.randn(8, 10, generator=g), torch.randn(8, 10, generator=g), torch.randint(0, 10, (8,), generator=g)
    T, alpha = 3.0, 0.7
    p_t = F.softmax(t / T, dim=1)
    kl = (p_t * (p_t.log() - F.log_softmax(s / T, dim=1))).sum(dim=1).mean()
    expected = alpha * T**2 * kl + (1 - alpha) * F.cross_entropy(s, y)
    assert torch.allclose(distill.kd_loss(s, t, y, temperature=T, alpha=alpha), expected, atol=1e-6)
    assert torch.allclose(distill.kd_loss(s, t, y, alpha=0.0), F.cross_entropy(s, y))
    assert float(distill.kd_loss(s, s, y, alpha=1.0)) == pytest.approx(0.0, abs=1e-6)


def test_soft_gradient_scale_barely_depends_on_temperature():
    """The T² factor keeps the soft term's gradient comparable across temperatures (Hinton et al., sec. 2)."""
    g = torch.Generator().manual_seed(1)
    s0, t = torch.randn(64, 10, generator=g) * 0.3, torch.randn(64, 10, generator=g) * 0.3
    norms = []
    for T in (4.0, 8.0):
        s = s0.clone().requires_grad_()
        distill.kd_loss(s, t, torch.zeros(64, dtype=torch.long), temperature=T, alpha=1.0).backward()
        norms.append(float(s.grad.norm()))
    # high-T limit of the gradient: T²·(z_s − z_t)/(N·T²) = (z_s − z_t)/N, the same at every T
    assert norms[1] / norms[0] == pytest.approx(1.0, rel=0.1)


def test_distill_and_control_share_architecture_and_init(setup):
    teacher, data = setup
    config = distill.DistillConfig(student_hidden=(16,), epochs=10)
    student, alone = distill.distill_and_control(teacher, data, config)
    assert [p.shape for p in student.parameters()] == [p.shape for p in alone.parameters()]
    again = distill.train_student_alone(data, config)
    assert all(torch.equal(a, b) for a, b in zip(alone.parameters(), again.parameters(), strict=True))
    assert not torch.equal(student[0].weight, alone[0].weight)
    assert digits.accuracy(student, data.x_test, data.y_test) > 0.8


def test_transfer_set_and_sweep(setup):
    teacher, data = setup
    small = distill.transfer_set(data, 0.1)
    assert len(small.y_train) == round(0.1 * len(data.y_train)) and small.x_test is data.x_test
    rows = distill.temperature_sweep(teacher, data, (1.0, 4.0), distill.DistillConfig(student_hidden=(8,), epochs=2))
    assert [r["temperature"] for r in rows] == [1.0, 4.0] and all(0 <= r["accuracy"] <= 1 for r in rows)


@pytest.mark.parametrize("kwargs, match", [({"temperature": 0}, "temperature"), ({"temperature": -1.0}, "temperature"),
                                           ({"alpha": 1.5}, "alpha"), ({"train_fraction": 0.0}, "train_fraction"),
                                           ({"student_hidden": ()}, "hidden")])
def test_bad_config(kwargs, match):
    with pytest.raises(ValueError, match=match):
        distill.DistillConfig(**kwargs)


def test_bad_loss_arguments():
    z = torch.zeros(2, 10)
    with pytest.raises(ValueError, match="temperature"):
        distill.kd_loss(z, z, torch.zeros(2, dtype=torch.long), temperature=0.0)


def test_seed_comparison_is_paired_cached_and_gives_intervals(tmp_path):
    from aihw.cheaper import distill
    from aihw.models import digits as dg

    data = dg.load_digits()
    teacher = dg.train_mlp(data, dg.TrainConfig(hidden=(32,), epochs=3))
    cfg = distill.DistillConfig(student_hidden=(8,), epochs=2)
    first = distill.seed_comparison(teacher, data, cfg, seeds=(0, 1), cache_dir=tmp_path)
    assert len(first["distilled"]) == len(first["alone"]) == 2
    diffs = [a - b for a, b in zip(first["distilled"], first["alone"], strict=True)]
    assert first["difference"].mean == pytest.approx(sum(diffs) / 2)
    assert first["difference"].low <= first["difference"].mean <= first["difference"].high
    assert len(list(tmp_path.glob("distill-seeds-*.json"))) == 1
    again = distill.seed_comparison(teacher, data, cfg, seeds=(0, 1), cache_dir=tmp_path)
    assert again["distilled"] == first["distilled"]  # read from the cache, same numbers
    with pytest.raises(ValueError, match="two seeds"):
        distill.seed_comparison(teacher, data, cfg, seeds=(0,), cache_dir=tmp_path)


def test_temperature_sweep_seeds_is_paired_cached_and_gives_intervals(tmp_path, monkeypatch):
    from dataclasses import replace

    from aihw.stats import mean_ci95, paired_difference_ci95

    data = digits.load_digits()
    teacher = digits.train_mlp(data, digits.TrainConfig(hidden=(32,), epochs=3))
    cfg = distill.DistillConfig(student_hidden=(8,), epochs=2)
    result = distill.temperature_sweep_seeds(teacher, data, (1.0, 4.0), cfg, seeds=(0, 1, 2), cache_dir=tmp_path)
    assert [r["temperature"] for r in result["rows"]] == [1.0, 4.0]
    # the control at each seed is the student trained alone with that seed
    assert result["alone"] == [digits.accuracy(distill.train_student_alone(data, replace(cfg, seed=s)),
                                               data.x_test, data.y_test) for s in (0, 1, 2)]
    assert len(set(result["alone"])) > 1  # the seeds really differ
    t4 = result["rows"][1]
    assert t4["accuracies"][2] == digits.accuracy(distill.distill(teacher, data, replace(cfg, temperature=4.0, seed=2)),
                                                  data.x_test, data.y_test)
    for row in result["rows"]:
        assert row["ci"] == mean_ci95(row["accuracies"])
        assert row["vs_alone"] == paired_difference_ci95(row["accuracies"], result["alone"])
    assert result["alone_ci"] == mean_ci95(result["alone"])
    assert len(list(tmp_path.glob("distill-sweep-*.json"))) == 1

    def no_training(*_a, **_k):
        raise AssertionError("the second call must read the cache")

    monkeypatch.setattr(distill, "distill", no_training)
    monkeypatch.setattr(distill, "train_student_alone", no_training)
    again = distill.temperature_sweep_seeds(teacher, data, (1.0, 4.0), cfg, seeds=(0, 1, 2), cache_dir=tmp_path)
    assert again["alone"] == result["alone"] and again["rows"][1]["accuracies"] == t4["accuracies"]
    with pytest.raises(ValueError, match="two distinct seeds"):
        distill.temperature_sweep_seeds(teacher, data, (1.0,), cfg, seeds=(0, 0), cache_dir=tmp_path)
