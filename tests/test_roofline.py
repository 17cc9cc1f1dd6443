import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aihw.chips import roofline as rl

pos = st.floats(min_value=1e-3, max_value=1e18, allow_nan=False, allow_infinity=False)
dims = st.integers(min_value=1, max_value=100_000)


def test_matmul_counts():
    assert rl.matmul_flops(2, 3, 4) == 48
    assert rl.matmul_bytes(2, 3, 4, "fp32") == (8 + 12 + 6) * 4
    assert rl.square_matmul_intensity(1024, "bf16") == pytest.approx(2 * 1024 / 6)


def test_ridge_and_bound_on_known_numbers():
    est = rl.estimate("x", flops=1e12, bytes_moved=1e9, peak_flops=1e15, bandwidth=1e12)
    assert est.intensity == 1000 and est.ridge_point == 1000
    small = rl.estimate("y", flops=1e9, bytes_moved=1e9, peak_flops=1e15, bandwidth=1e12)
    assert small.bound == "memory" and small.time_s == pytest.approx(1e-3)
    assert small.fraction_of_peak == pytest.approx(1e-3)


@given(pos, pos, pos)
def test_attainable_never_exceeds_either_roof(intensity, peak, bandwidth):
    reach = rl.attainable_flops(intensity, peak, bandwidth)
    assert reach <= peak * (1 + 1e-12)
    assert reach <= intensity * bandwidth * (1 + 1e-12)
    assert math.isclose(reach, min(peak, intensity * bandwidth))


@given(pos, pos, pos, pos)
def test_time_is_max_of_compute_and_memory(flops, moved, peak, bandwidth):
    est = rl.estimate("op", flops, moved, peak_flops=peak, bandwidth=bandwidth)
    assert est.time_s == pytest.approx(max(flops / peak, moved / bandwidth))
    assert (est.bound == "compute") == (flops / peak >= moved / bandwidth)
    # time * attainable == flops: the estimate is self-consistent
    assert est.time_s * est.attainable_flops == pytest.approx(flops, rel=1e-9)


@given(dims, st.sampled_from(["fp32", "bf16", "fp8"]))
def test_intensity_grows_with_square_matmul_size(n, dtype):
    assert rl.square_matmul_intensity(n + 1, dtype) > rl.square_matmul_intensity(n, dtype)


@given(st.floats(min_value=1e12, max_value=1e16), st.floats(min_value=1e10, max_value=1e13),
       st.sampled_from(["fp32", "bf16", "fp8"]))
def test_min_compute_bound_size_is_tight(peak, bandwidth, dtype):
    n = rl.min_square_matmul_for_compute_bound(peak, bandwidth, dtype)
    ridge = rl.ridge_point(peak, bandwidth)
    assert rl.square_matmul_intensity(n, dtype) >= ridge
    if n > 1:
        assert rl.square_matmul_intensity(n - 1, dtype) < ridge


def test_elementwise_is_memory_bound_on_any_chip_like_numbers():
    est = rl.estimate("add", flops=1e6, bytes_moved=rl.elementwise_bytes(10**6, "bf16"),
                      peak_flops=1e15, bandwidth=3e12)
    assert est.bound == "memory" and est.intensity == pytest.approx(1 / 6)


@pytest.mark.parametrize("call, match", [
    (lambda: rl.matmul_flops(0, 1, 1), "m must be a positive integer"),
    (lambda: rl.matmul_flops(1, -3, 1), "n must be"),
    (lambda: rl.matmul_bytes(1, 1, 1.5, "bf16"), "k must be a positive integer"),
    (lambda: rl.matmul_bytes(1, 1, 1, "fp9"), "unknown dtype 'fp9'"),
    (lambda: rl.ridge_point(0, 1), "peak_flops"),
    (lambda: rl.attainable_flops(float("nan"), 1, 1), "intensity"),
])
def test_bad_input_names_the_value(call, match):
    with pytest.raises(ValueError, match=match):
        call()
