"""Public calculators refuse bad values with a ValueError or TypeError naming the argument: never a silent wrong
answer, an AttributeError from deep inside, a ZeroDivisionError or an inf."""

from __future__ import annotations

import pytest

from aihw import planning as P
from aihw import scaling
from aihw._validate import NonFiniteResult, require_bool, require_instance, require_non_negative
from aihw.formats import numerics
from aihw.memory.estimator import estimate as memory_estimate
from aihw.serving import estimator as S
from aihw.transformer.shapes import get_preset

MODEL = get_preset("llama-3-8b")


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda: numerics.decode(-0.5, "fp8_e4m3"), ValueError, "codes must be integers"),
    (lambda: numerics.decode(0.5, "fp8_e4m3"), ValueError, "codes must be integers"),
    (lambda: numerics.decode(["a"], "fp8_e4m3"), ValueError, "codes must be integers"),
    (lambda: S.kv_bytes_per_token(MODEL, -2), ValueError, "bytes_per_value"),
    (lambda: S.kv_bytes_per_token("llama-3-8b", 2), TypeError, "model must be a ModelShape"),
    (lambda: P.gemm_seconds(-4096, 1, 1, peak=1e15, hbm=1e12, fraction=0.5), ValueError, "m must be >= 0"),
    (lambda: P.gemm_seconds(1, 1, 1, peak=1e15, hbm=1e12, fraction=1.5), ValueError, "fraction"),
    (lambda: P.gemm_seconds(1, 1, 1, peak=0, hbm=1e12, fraction=0.5), ValueError, "peak"),
    (lambda: P.PlanConfig(sequence_parallel="no"), TypeError, "sequence_parallel must be True or False"),
    (lambda: P.attention_backward_factor("junk"), ValueError, "attention"),
    (lambda: P.plan("llama-2-7b"), TypeError, "cfg must be a PlanConfig"),
    (lambda: memory_estimate({"model": "gpt2"}), TypeError, "config must be a MemoryConfig"),
    (lambda: S.estimate(3), TypeError, "cfg must be a ServingConfig"),
    (lambda: scaling.compute_optimal_all(5e-324), NonFiniteResult, "flops=5e-324"),
    (lambda: scaling.training_flops(1e300, 1e300), NonFiniteResult, "overflows"),
    (lambda: scaling.training_run(1e20, "h100", chips=1, mfu=1e-320), NonFiniteResult, "mfu"),
    (lambda: S.estimate(S.ServingConfig("llama-3-8b", efficiency=1e-320)), NonFiniteResult, "efficiency"),
    (lambda: S.estimate(S.ServingConfig("llama-3-8b", batch=10**301)), NonFiniteResult, "batch="),
], ids=lambda x: getattr(x, "__name__", str(x))[:30])
def test_bad_values_are_refused_naming_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_good_values_still_work():
    assert numerics.decode(3, "fp8_e4m3") == numerics.decode(3.0, "fp8_e4m3") > 0
    assert S.kv_bytes_per_token(MODEL, 2) == 2.0 * MODEL.layers * MODEL.n_kv_heads * MODEL.head_dim * 2
    assert P.attention_backward_factor("eager") == 2.0
    assert P.gemm_seconds(4096, 4096, 4096, peak=1e15, hbm=1e12, fraction=0.5) > 0


def test_the_helpers():
    import numpy as np

    assert require_bool("x", np.True_) is True
    with pytest.raises(TypeError, match="x must be True or False"):
        require_bool("x", 1)
    assert require_non_negative("y", 0) == 0
    with pytest.raises(ValueError, match="y must be"):
        require_non_negative("y", float("nan"))
    with pytest.raises(TypeError, match="z must be a int"):
        require_instance("z", "3", int)
