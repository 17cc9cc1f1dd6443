"""The labs' worked solutions (hidden behind aihw.exercises.reveal) agree with the calculators the checks use.

Each worked solution is an independent derivation by hand formula; the expected value is what the lab's check
compares a learner's answer with. This replaces the labs' former "solutions" cells, which printed the answer key.
"""

import numpy as np
import pytest
import torch

from aihw.catalogue import hardware
from aihw.chips import roofline, systolic
from aihw.comm import collectives as cc
from aihw.exercises import check, reveal
from aihw.layout import schedules
from aihw.memory.estimator import GB, MemoryConfig, estimate, estimate_memory
from aihw.memory.fit import devices_needed
from aihw.transformer.shapes import get_preset
from aihw.widgets import (
    accelerator_lab,
    cheaper_lab,
    data_parallel_lab,
    gpus_vs_tpus_lab,
    memory_lab,
    model_parallel_lab,
    scaling_lab,
)


def _expected():
    h100 = hardware.get_chip("H100 SXM")
    e7 = estimate_memory("llama-2-7b", precision="bf16", optimizer="adamw")
    zero1 = estimate(MemoryConfig(params=7e9, precision="bf16", optimizer="adamw", dp=8, zero=1)).per_device
    from aihw.accel import fusion
    from aihw.catalogue import compare
    from aihw.parallel import tensor_parallel

    return {
        accelerator_lab: {1: 100 * compare.tensor_core_share("H100 SXM")["share"],
                          2: 100 * systolic.utilisation_sweep([1024], size=128, double_buffered=True)[0]["utilisation"],
                          3: fusion.UNFUSED_PASSES * 4 * 2**20 / 1e6},
        gpus_vs_tpus_lab: {1: roofline.ridge_point(h100.peak_flops("bf16"), h100.bandwidth_bytes_per_s),
                           2: roofline.estimate_matmul("TPU v5e", 1, 8192, 8192, "bf16").time_s * 1e6,
                           3: systolic.predicted_cycles(4, 3, 3, size=3, dataflow="weight-stationary")},
        memory_lab: {1: sum(e7.total[k] for k in ("weights", "gradients", "optimizer", "master_weights")) / GB,
                     2: estimate_memory("llama-2-70b", mode="infer", batch=8, seq=4096).total["kv_cache"] / GB,
                     3: devices_needed(MemoryConfig(model=get_preset("llama-2-70b"), batch=1, seq=4096, recompute="full"),
                                       h100.memory_bytes, zero=3)},
        data_parallel_lab: {1: cc.all_reduce_time(1e8, 8, link=cc.link_from_chip("H100 SXM", alpha_s=5e-6)) * 1e3,
                            2: cc.bus_bandwidth(cc.algorithm_bandwidth(2**30, 12e-3), 16) / 1e9,
                            3: (zero1["optimizer"] + zero1["master_weights"]) / 1e9,
                            4: cc.all_reduce_terms(4, "ring")[1] * 64 * 2**20},
        model_parallel_lab: {1: schedules.bubble_fraction(8, 24), 2: schedules.peak_in_flight("1f1b", 8, 24, 0),
                             3: tensor_parallel.tp_comm_per_layer(batch=1, seq=4096, hidden=5120, tp=8,
                                                                  bytes_per_value=2)["bytes_per_step"],
                             4: schedules.simulate("1f1b", 4, 8).bubble
                             / schedules.simulate("interleaved", 4, 8, v=2).bubble},
    }


def test_worked_solutions_agree_with_the_calculators():
    for module, expected in _expected().items():
        assert set(module.WORKED) == set(expected), module.__name__
        for n, value in expected.items():
            derived, text = module.WORKED[n]()
            assert check(derived, value, rel_tol=1e-3).ok, (module.__name__, n, derived, value)
            assert text and "Solution" in str(reveal(module.SOLUTIONS, n))


def test_cheaper_worked_solutions():
    from aihw.cheaper.quantize import PerGroup, QuantScheme, choose_qparams
    from aihw.cheaper.quantize import quantized_size_bytes as packed_bytes
    from aihw.models import digits

    assert cheaper_lab.WORKED[1]()[0] == packed_bytes((256, 64), QuantScheme("int4", PerGroup(32)))
    assert cheaper_lab.WORKED[2]()[0] == pytest.approx(
        float(choose_qparams(torch.tensor([-2.55, 1.0]), QuantScheme("int8")).scale), rel=1e-6)
    assert cheaper_lab.WORKED[3]()[0] == digits.linear_flops(digits.make_mlp((64, 64)), 1)


def test_systolic_solution_counts_the_trace():
    assert gpus_vs_tpus_lab.WORKED[3]()[0] == systolic.trace(np.ones((4, 3)), np.ones((3, 3)), size=3).cycles


def test_scaling_solutions_exist():
    assert set(scaling_lab.SOLUTIONS) == {1, 2, 3}


def test_planning_worked_solutions():
    from aihw.comm import roofline as comm_roofline
    from aihw.parallel import context_parallel
    from aihw.widgets import planning_lab

    expected = {1: comm_roofline.critical_intensity("H100 SXM", "InfiniBand NDR"),
                2: context_parallel.ring_bytes(context_parallel.RingConfig(), 4),
                3: comm_roofline.tp_condition("llama-3-70b", 8, "H100 SXM", "InfiniBand NDR").ratio}
    assert set(planning_lab.WORKED) == set(expected)
    for n, value in expected.items():
        derived, text = planning_lab.WORKED[n]()
        assert check(derived, value, rel_tol=1e-3).ok, (n, derived, value)
        assert text and "Solution" in str(reveal(planning_lab.SOLUTIONS, n))


def test_categorical_answers_come_from_the_package_with_a_worked_solution():
    """Each lab's categorical answers (CHOICES) are what its check compares with, and each has a worked solution."""
    from aihw.exercises import expected

    answers = {accelerator_lab: {4: "memory"}, cheaper_lab: {4: "neurons"},
               data_parallel_lab: {5: "during backward"}, model_parallel_lab: {5: "tensor"}, scaling_lab: {3: "artefact"}}
    for module, by_number in answers.items():
        assert set(module.CHOICES) == set(by_number), module.__name__
        for n, answer in by_number.items():
            assert expected(module.CHOICES, n) == answer
            assert answer in str(reveal(module.SOLUTIONS, n))
    with pytest.raises(ValueError, match="no exercise 9"):
        expected(cheaper_lab.CHOICES, 9)
