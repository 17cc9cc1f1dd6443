"""Bit-level encoders against torch's dtypes, every code; block formats against the specs' rules."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aihw.formats import numerics as N
from aihw.formats.precision import get_format

torch = pytest.importorskip("torch")

TORCH = [("fp16", torch.float16, torch.int16), ("bf16", torch.bfloat16, torch.int16),
         ("fp8_e4m3", torch.float8_e4m3fn, torch.uint8), ("fp8_e5m2", torch.float8_e5m2, torch.uint8)]


def _torch_codes(x: np.ndarray, dtype, int_dtype, bits: int) -> np.ndarray:
    return torch.from_numpy(x.astype(np.float32)).to(dtype).view(int_dtype).numpy().astype(np.int64) & (2**bits - 1)


def _torch_values(codes: np.ndarray, dtype, bits: int) -> np.ndarray:
    raw = codes.astype(np.uint16).view(np.int16) if bits == 16 else codes.astype(np.uint8)
    with np.errstate(invalid="ignore"):  # signalling-NaN patterns
        return torch.from_numpy(raw).view(dtype).float().numpy().astype(np.float64)


@pytest.mark.parametrize("name, dtype, int_dtype", TORCH)
def test_every_code_decodes_and_reencodes_like_torch(name, dtype, int_dtype):
    bits = N.ELEMENT_FORMATS[name].bits
    codes = np.arange(2**bits)
    ref = _torch_values(codes, dtype, bits)
    mine = N.decode(codes, name)
    assert np.array_equal(np.isnan(mine), np.isnan(ref))
    finite = ~np.isnan(ref)
    assert np.array_equal(mine[finite], ref[finite])
    # every non-NaN value (both zeros, subnormals, infinities) encodes back to its own code
    assert np.array_equal(N.encode(ref[finite], name), codes[finite])
    assert np.array_equal(_torch_codes(ref[finite], dtype, int_dtype, bits), codes[finite])
    assert np.all(np.isnan(N.decode(N.encode(np.nan, name), name)))


@pytest.mark.parametrize("name, dtype, int_dtype", TORCH)
def test_rounding_of_midpoints_and_random_values_matches_torch(name, dtype, int_dtype):
    bits = N.ELEMENT_FORMATS[name].bits
    vals = N.representable_values(name)
    mids = (vals[1:] + vals[:-1]) / 2  # exact ties: ties-to-even decides
    quarter = vals[:-1] + (vals[1:] - vals[:-1]) / 4
    rng = np.random.default_rng(0)
    wide = rng.standard_normal(20000) * 10.0 ** rng.integers(-12, 8, 20000)
    edges = np.array([1e9, -1e9, 65504, 65519.99, 65520, 61440, 57344, 464, 480, 449, np.inf, -np.inf])
    for x in (mids, quarter, wide, edges):
        x32 = x.astype(np.float32).astype(np.float64)  # torch casts from float32
        assert np.array_equal(N.encode(x32, name), _torch_codes(x32, dtype, int_dtype, bits)), name


def test_fp32_and_tf32_round_trips():
    x = np.random.default_rng(1).standard_normal(1000)
    assert np.array_equal(N.round_to(x, "fp32"), x.astype(np.float32).astype(np.float64))
    tf = N.round_to(x, "tf32")  # 10 explicit mantissa bits: relative error at most 2^-11
    assert np.all(np.abs(tf - x) <= np.abs(x) * 2.0**-11)
    assert N.representable_values("tf32").size == 2 * (2**18 - 2**10) - 1


@pytest.mark.parametrize("name", [n for n in N.ELEMENT_FORMATS if n != "e8m0"])
def test_registry_rows_agree_with_the_codes(name):
    reg = get_format(name)
    assert reg.max_value == N.max_value(name)
    assert reg.min_subnormal == N.min_subnormal(name)
    assert reg.min_normal == N.min_normal(name)


def test_fp4_e2m1_values_and_int_formats():
    # OCP MX v1.0 Table: E2M1 holds 0, 0.5, 1, 1.5, 2, 3, 4, 6
    assert list(N.representable_values("e2m1")[7:]) == [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    assert N.decode(N.encode([7.5, -100.0], "e2m1"), "e2m1").tolist() == [6, -6]  # saturates by definition
    assert N.decode(N.encode([2.5, 3.5, -0.5, 127.4, 300], "int8"), "int8").tolist() == [2, 4, -0.0, 127, 127]
    assert N.encode(-1, "int4") == 0b1111
    assert N.decode(np.arange(256), "e8m0")[127] == 1.0 and math.isnan(N.decode(255, "e8m0"))


def test_e8m0_decode_matches_torch():
    ref = torch.arange(255, dtype=torch.uint8).view(torch.float8_e8m0fnu).float().numpy().astype(np.float64)
    ours = N.decode(np.arange(255), "e8m0")
    assert np.array_equal(ours[1:], ref[1:])  # code 0 is 2^-127, an fp32 subnormal: compare from code 1


def test_explain_subnormal_saturation_and_inf():
    e = N.explain(1e-8, "fp16")
    assert e.kind == "underflow to zero" and e.stored == 0 and e.above == 2.0**-24
    assert N.explain(3e-6, "fp16").kind == "subnormal"
    assert N.explain(500, "e4m3").kind == "saturated" and N.explain(500, "e4m3").stored == 448
    assert N.explain(70000, "fp16").kind == "overflow to inf"
    e = N.explain(0.1, "bf16")
    assert e.bits == "0011110111001101" and e.below < 0.1 < e.above and e.stored == e.above
    assert abs(e.abs_error) <= e.ulp / 2
    # one ulp of 1.0 in bf16 is 2^-7: an update below half of it is lost
    assert N.half_ulp_threshold(1.0, "bf16") == 2.0**-8
    assert N.round_to(1.0 + 2.0**-9, "bf16") == 1.0


@given(st.floats(min_value=-6e4, max_value=6e4, allow_nan=False))
def test_rounding_error_is_at_most_half_an_ulp(x):
    e = N.explain(x, "fp16")
    assert abs(e.abs_error) <= N._ulp(e.stored, N.element_format("fp16")) / 2 + 1e-300
    assert e.below <= x <= e.above


def test_stochastic_rounding_is_unbiased():
    rng = np.random.default_rng(0)
    x = np.full(200000, 1.0 + 2.0**-10)  # a quarter of a bf16 ulp above 1
    r = N.stochastic_round(x, "bf16", rng)
    assert set(np.unique(r)) == {1.0, 1.0 + 2.0**-7}
    assert abs(r.mean() - x[0]) < 2e-5
    assert N.round_to(x[:1], "bf16")[0] == 1.0  # nearest rounding always loses it


def test_bad_input_messages():
    with pytest.raises(ValueError, match="did you mean 'bf16'"):
        N.element_format("bf61")
    with pytest.raises(ValueError, match="outside fp16's range.*rounds them to inf"):
        N.encode(1e6, "fp16", overflow="raise")
    with pytest.raises(ValueError, match="outside fp8_e4m3's range.*saturates"):
        N.encode([1.0, 500.0], "e4m3", overflow="raise")
    with pytest.raises(ValueError, match="unknown overflow mode"):
        N.encode(1.0, "fp16", overflow="clip")
    with pytest.raises(ValueError, match="block size 32 does not divide the last dimension \\(33\\)"):
        N.block_quantize(np.ones(33), "mxfp4")
    with pytest.raises(ValueError, match="did you mean 'mxfp4'"):
        N.block_quantize(np.ones(32), "mxfp44")
    with pytest.raises(ValueError, match="no NaN"):
        N.encode(np.nan, "e2m1")
    assert N.encode(1e6, "fp16", overflow="saturate") == 0x7BFF


# ---- block-scaled formats: the specs' rules on hand-worked blocks


def test_mx_scale_is_floor_log2_amax_minus_emax():
    # OCP MX v1.0 Sec. 6.3: X = 2^(floor(log2(max|V|)) - emax_elem); emax = 8 (E4M3), 15 (E5M2), 2 (E2M1)
    assert (N.emax_elem("e4m3"), N.emax_elem("e5m2"), N.emax_elem("e2m1")) == (8, 15, 2)
    block = np.array([[6.0, 3.0, 0.4, -2.5] + [0.0] * 28])
    q = N.block_quantize(block, "mxfp4")  # amax 6: X = 2^(2-2) = 1; elements round to E2M1
    assert q.scales.tolist() == [[1.0]] and q.values[0, :4].tolist() == [6.0, 3.0, 0.5, -2.0]
    q = N.block_quantize(np.array([[1000.0] + [1.0] * 31]), "mxfp8")  # X = 2^(9-8) = 2; 1000/2 = 500 > 448
    assert q.scales.tolist() == [[2.0]] and q.values[0, 0] == 896.0 and q.saturated == 1
    q = N.block_quantize(np.array([[2.0**-130] * 32]), "mxfp8")  # scale clamps at E8M0's 2^-127
    assert q.scales[0, 0] == 2.0**-127


def test_nvfp4_two_level_scaling():
    x = np.zeros((1, 32))
    x[0, :16] = np.linspace(-6, 6, 16) * 10.0  # block amax 60
    x[0, 16:] = 0.25  # block amax 0.25
    q = N.block_quantize(x, "nvfp4")
    assert q.tensor_scale == pytest.approx(60 / (448 * 6), rel=1e-6)
    # block scale = round_e4m3(amax_b / 6 / s_t) * s_t: the first block's is exactly 10 = 448 * s_t
    assert q.scales[0, 0] == pytest.approx(10.0, rel=1e-6)
    assert np.allclose(q.values[0, 16:], 0.25, rtol=0.01)  # an e4m3 scale, not a power of two: 0.2511
    assert N.BLOCK_FORMAT_SPECS["nvfp4"].bits_per_value == 4.5
    assert N.BLOCK_FORMAT_SPECS["mxfp4"].bits_per_value == 4.25


def test_block_scaling_beats_per_tensor_on_outliers_at_4_bits():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 256)) * 0.02
    w[::7, 3] = 0.8  # outlier channel
    rows = {r["format"]: r for r in N.compare_block_formats(w)}
    assert rows["mxfp4"]["rel_rms"] < rows["per_tensor_e2m1"]["rel_rms"] / 2
    assert rows["nvfp4"]["rel_rms"] < rows["mxfp4"]["rel_rms"]
    assert rows["per_tensor_e2m1"]["zero_fraction"] > 0.5


def test_registry_and_block_formats():
    for name in ("tf32", "e2m1", "fp4", "int4", "fp8_e4m3", "bf16"):
        assert get_format(name).bits == N.element_format(name).bits
    assert N.BLOCK_FORMAT_SPECS["mxfp8"].bits_per_value == 8.25
    assert N.BLOCK_FORMAT_SPECS["nvfp4"].bits_per_value == 4.5
