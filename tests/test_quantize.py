"""Quantization primitives: agreement with PyTorch's reference quantizers, error bounds, bad input."""

import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from aihw.cheaper.quantize import (
    DTYPES,
    PerChannel,
    PerGroup,
    PerTensor,
    QuantScheme,
    choose_qparams,
    dequantize,
    fake_quantize,
    grid,
    quantize,
    quantized_size_bytes,
    sqnr_db,
)

obs = pytest.importorskip("torch.ao.quantization.observer")


def _random_tensors(n, shape=(24, 40), seed=0):
    g = torch.Generator().manual_seed(seed)
    for _ in range(n):
        spread = float(torch.rand(1, generator=g)) * 10 + 1e-3
        yield torch.randn(shape, generator=g) * spread + float(torch.randn(1, generator=g))


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():  # torch.quantize_per_* are deprecated in torch 2.13 but still the reference
        warnings.simplefilter("ignore")
        yield


@pytest.mark.parametrize("symmetric", [True, False])
def test_int8_per_tensor_agrees_with_torch_bit_for_bit(symmetric):
    qscheme = torch.per_tensor_symmetric if symmetric else torch.per_tensor_affine
    for x in _random_tensors(200):
        observer = obs.MinMaxObserver(dtype=torch.qint8, qscheme=qscheme)
        observer(x)
        scale, zero_point = observer.calculate_qparams()
        qp = choose_qparams(x, QuantScheme("int8", PerTensor(), symmetric))
        assert torch.equal(qp.scale, scale) and torch.equal(qp.zero_point, zero_point.int())
        ref = torch.quantize_per_tensor(x, float(scale), int(zero_point), torch.qint8)
        q = quantize(x, qp)
        assert q.dtype == torch.int8 and torch.equal(q, ref.int_repr())
        assert torch.equal(dequantize(q, qp), ref.dequantize())


@pytest.mark.parametrize("axis", [0, 1])
def test_int8_per_channel_symmetric_agrees_with_torch_bit_for_bit(axis):
    for x in _random_tensors(200, seed=1):
        observer = obs.PerChannelMinMaxObserver(ch_axis=axis, dtype=torch.qint8, qscheme=torch.per_channel_symmetric)
        observer(x)
        scale, zero_point = observer.calculate_qparams()
        qp = choose_qparams(x, QuantScheme("int8", PerChannel(axis)))
        assert torch.equal(qp.scale, scale) and torch.equal(qp.zero_point, zero_point.int())
        ref = torch.quantize_per_channel(x, scale, zero_point, axis, torch.qint8)
        q = quantize(x, qp)
        assert torch.equal(q, ref.int_repr())
        assert torch.equal(dequantize(q, qp), ref.dequantize())


def test_int8_per_channel_affine_agrees_with_torch_except_rare_ties():
    """PyTorch's per-channel kernel rounds x/scale before adding the zero point (two roundings); we, like its
    per-tensor kernel, round once. They can differ by one step, only on exact ties: about 1 element in 10^6."""
    differ = total = 0
    for x in _random_tensors(300, seed=2):
        observer = obs.PerChannelMinMaxObserver(ch_axis=0, dtype=torch.qint8, qscheme=torch.per_channel_affine)
        observer(x)
        scale, zero_point = observer.calculate_qparams()
        qp = choose_qparams(x, QuantScheme("int8", PerChannel(0), symmetric=False))
        assert torch.equal(qp.scale, scale) and torch.equal(qp.zero_point, zero_point.int())
        ref = torch.quantize_per_channel(x, scale, zero_point, 0, torch.qint8).int_repr()
        diff = (quantize(x, qp).int() - ref.int()).abs()
        assert int(diff.max()) <= 1
        differ, total = differ + int((diff > 0).sum()), total + x.numel()
    assert differ / total < 1e-4


SCHEMES = st.builds(QuantScheme, st.sampled_from(["int8", "int4", "int3", "int2"]),
                    st.sampled_from([PerTensor(), PerChannel(0), PerChannel(1), PerGroup(8)]), st.booleans())
TENSORS = st.builds(lambda seed, scale, shift: torch.randn(12, 16, generator=torch.Generator().manual_seed(seed))
                    * scale + shift, st.integers(0, 2**31), st.floats(1e-3, 1e3), st.floats(-10, 10))


@settings(max_examples=150, deadline=None)
@given(TENSORS, SCHEMES)
def test_round_trip_error_is_at_most_half_a_step(x, scheme):
    qp = choose_qparams(x, scheme)
    from aihw.cheaper.quantize import _blocks

    err = _blocks((x - dequantize(quantize(x, qp), qp)).abs(), scheme.granularity)
    half_step = qp.scale[:, None] / 2
    fp32_slack = 4 * torch.finfo(torch.float32).eps * float(x.abs().max())  # rounding of x̂ itself
    assert bool((err <= half_step + fp32_slack).all())
    codes = quantize(x, qp)
    assert int(codes.min()) >= scheme.qmin and int(codes.max()) <= scheme.qmax


@settings(max_examples=100, deadline=None)
@given(TENSORS, st.sampled_from(["int8", "int4"]), st.booleans())
def test_per_channel_never_worse_than_per_tensor(x, dtype, symmetric):
    """Every channel's step is at most the per-tensor step, so its worst-case error bound is never worse."""
    per_tensor = choose_qparams(x, QuantScheme(dtype, PerTensor(), symmetric))
    per_channel = choose_qparams(x, QuantScheme(dtype, PerChannel(0), symmetric))
    assert bool((per_channel.scale <= per_tensor.scale * (1 + 1e-6)).all())
    err = (x - fake_quantize(x, QuantScheme(dtype, PerChannel(0), symmetric))).abs()
    fp32_slack = 4 * torch.finfo(torch.float32).eps * float(x.abs().max())
    assert float(err.max()) <= float(per_tensor.scale) / 2 + fp32_slack


def test_per_channel_beats_per_tensor_when_rows_differ_in_scale():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(64, 64, generator=g) * torch.logspace(-2, 1, 64)[:, None]
    assert sqnr_db(x, fake_quantize(x, QuantScheme("int8", PerChannel(0)))) > \
        sqnr_db(x, fake_quantize(x, QuantScheme("int8"))) + 10


@settings(max_examples=100, deadline=None)
@given(TENSORS, st.sampled_from(["fp8_e4m3", "fp8_e5m2"]), st.sampled_from([PerTensor(), PerChannel(0)]))
def test_fp8_round_trip_relative_error(x, dtype, granularity):
    scheme = QuantScheme(dtype, granularity)
    qp = choose_qparams(x, scheme)
    q = quantize(x, qp)
    assert q.dtype == {"fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2}[dtype]
    x_hat = dequantize(q, qp)
    mantissa = {"fp8_e4m3": 3, "fp8_e5m2": 2}[dtype]
    finfo = torch.finfo(q.dtype)
    from aihw.cheaper.quantize import _blocks, _unblocks

    scale = _unblocks(_blocks(torch.ones_like(x), granularity) * qp.scale[:, None], tuple(x.shape), granularity)
    bound = torch.maximum(x.abs() * 2.0 ** -(mantissa + 1), scale * finfo.smallest_normal * 2.0 ** -(mantissa + 1))
    assert bool(((x - x_hat).abs() <= bound * (1 + 1e-5)).all())
    assert float(x.abs().max()) == pytest.approx(float(x_hat.abs().max()), rel=2.0 ** -(mantissa + 1))


def test_more_bits_less_error():
    x = torch.randn(128, 128, generator=torch.Generator().manual_seed(4))
    sqnr = {d: sqnr_db(x, fake_quantize(x, QuantScheme(d, PerChannel(0)))) for d in ("int2", "int3", "int4", "int8")}
    assert sqnr["int2"] < sqnr["int3"] < sqnr["int4"] < sqnr["int8"]
    assert 20 < sqnr["int8"] - sqnr["int4"] < 28  # about 6 dB per bit


def test_sizes_and_grid():
    assert quantized_size_bytes((256, 64), QuantScheme("int8")) == 256 * 64 + 4
    assert quantized_size_bytes((256, 64), QuantScheme("int4", PerGroup(32))) == 256 * 32 + (256 * 2) * 4
    assert quantized_size_bytes((10, 8), QuantScheme("int8", PerChannel(0), symmetric=False)) == 80 + 10 * 8
    x = torch.randn(8, 8)
    assert len(grid(choose_qparams(x, QuantScheme("int4")))) == 16
    levels = grid(choose_qparams(x, QuantScheme("fp8_e4m3")))
    assert float(levels.max()) == pytest.approx(float(x.abs().max()), rel=1e-6)
    assert sqnr_db(x, x) == float("inf")


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="unknown dtype 'int5'.*allowed.*int8"):
        QuantScheme("int5")
    with pytest.raises(ValueError, match="did you mean.*'fp8_e4m3'"):
        QuantScheme("fp8_e4m2")
    with pytest.raises(ValueError, match="only symmetric"):
        QuantScheme("fp8_e5m2", symmetric=False)
    with pytest.raises(ValueError, match="group size"):
        PerGroup(0)
    with pytest.raises(ValueError, match="granularity"):
        QuantScheme("int8", "per-tensor")
    with pytest.raises(ValueError, match="PerGroup size 32 must divide"):
        choose_qparams(torch.randn(4, 10), QuantScheme("int4", PerGroup(32)))
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        choose_qparams(torch.randn(4, 10), QuantScheme("int8", PerChannel(2)))
    with pytest.raises(ValueError, match="empty"):
        choose_qparams(torch.empty(0), QuantScheme())
    qp = choose_qparams(torch.randn(4, 8), QuantScheme())
    with pytest.raises(ValueError, match="does not match"):
        quantize(torch.randn(4, 4), qp)
    assert set(DTYPES) >= {"int8", "int4", "fp8_e4m3", "fp8_e5m2"}


def test_all_zero_tensor_is_exact():
    for dtype in DTYPES:
        x = torch.zeros(3, 4)
        assert torch.equal(fake_quantize(x, QuantScheme(dtype)), x)
