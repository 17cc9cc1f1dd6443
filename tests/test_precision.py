import numpy as np
import pytest

from aihw.formats.precision import FORMATS, bytes_per_element, format_table, get_format


@pytest.mark.parametrize("name, dtype", [("fp32", np.float32), ("fp16", np.float16)])
def test_ieee_formats_match_numpy(name, dtype):
    fmt, info = get_format(name), np.finfo(dtype)
    assert fmt.max_value == float(info.max)
    assert fmt.min_normal == float(info.smallest_normal)
    assert fmt.min_subnormal == float(info.smallest_subnormal)
    assert fmt.epsilon == float(info.eps)


def test_fp8_and_bf16_match_published_limits():
    # FP8 Formats for Deep Learning (Micikevicius et al. 2022), Table 1.
    assert get_format("fp8_e4m3").max_value == 448
    assert get_format("fp8_e5m2").max_value == 57344
    assert get_format("fp8_e4m3").min_subnormal == 2.0**-9
    assert get_format("fp8_e5m2").min_subnormal == 2.0**-16
    assert get_format("bf16").max_value == pytest.approx(3.3895e38, rel=1e-4)


def test_fp8_matches_torch_when_available():
    torch = pytest.importorskip("torch")
    assert get_format("fp8_e4m3").max_value == torch.finfo(torch.float8_e4m3fn).max
    assert get_format("fp8_e5m2").max_value == torch.finfo(torch.float8_e5m2).max
    assert get_format("bf16").epsilon == torch.finfo(torch.bfloat16).eps


def test_integers_and_sizes():
    assert get_format("int8").max_value == 127
    assert get_format("int4").max_value == 7
    assert bytes_per_element("fp4") == 0.5 and bytes_per_element("tf32") == 4


def test_bf16_keeps_fp32_range_but_not_precision():
    bf16, fp32, fp16 = (get_format(n) for n in ("bf16", "fp32", "fp16"))
    assert bf16.max_value / fp32.max_value == pytest.approx(1, rel=0.01)
    assert bf16.epsilon > fp16.epsilon > fp32.epsilon
    assert fp16.max_value < 1e5 < bf16.max_value


def test_table_and_errors():
    assert len(format_table()) == len(FORMATS)
    with pytest.raises(ValueError, match="fp8_e4m3"):
        get_format("fp8e4m3")
    with pytest.raises(ValueError, match="unknown dtype 'float33'.*did you mean 'float32'"):
        bytes_per_element("float33")


def test_aliases_resolve_in_any_case():
    assert get_format("BF16") is get_format("bfloat16") is FORMATS["bf16"]
    assert get_format("fp8") is get_format("float8_e4m3fn") is FORMATS["fp8_e4m3"]
    assert bytes_per_element("float32") == 4 and bytes_per_element("FP4") == 0.5
    names = [n for f in FORMATS.values() for n in (f.name, *f.aliases)]
    assert len(names) == len(set(names)), "a name or alias names two formats"


def test_fp4_e2m1_matches_the_ocp_spec():
    # OCP Microscaling Formats (MX) v1.0, 2023, Table 2: E2M1 max 6.0, min normal 1.0, min subnormal 0.5.
    fp4 = get_format("fp4_e2m1")
    assert (fp4.max_value, fp4.min_normal, fp4.min_subnormal) == (6.0, 1.0, 0.5)


def test_every_precision_the_package_names_is_in_the_registry():
    """One vocabulary: the catalogue, the memory estimator, the measurement and quantization all resolve here."""
    from aihw.catalogue import hardware
    from aihw.memory.estimator import WEIGHT_PRECISIONS

    for name in (*hardware.PRECISIONS, *WEIGHT_PRECISIONS):
        get_format(name)
    chip_precisions = {p for chip in hardware.load_catalogue() for p in (*chip.flops, *chip.sparse_flops)}
    assert chip_precisions <= set(hardware.PRECISIONS)
    assert hardware.catalogue_precision("BFloat16") == "bf16" and hardware.catalogue_precision("fp8_e4m3") == "fp8"


def test_torch_dtype_names_are_torch_dtypes():
    torch = pytest.importorskip("torch")
    from aihw.cheaper import quantize
    from aihw.measure import roofline
    from aihw.runtime import device

    for fmt in FORMATS.values():
        if fmt.torch_dtype is not None:
            dtype = device.torch_dtype(fmt.name)
            assert dtype.itemsize == fmt.bytes, fmt.name
            if dtype.is_floating_point and fmt.storage_bits is None:  # tf32 lives in float32
                assert torch.finfo(dtype).max == fmt.max_value, fmt.name
    for name in (*roofline.DTYPES, *quantize.FP8_DTYPES):
        device.torch_dtype(name)
    with pytest.raises(ValueError, match="no dtype for int4"):
        device.torch_dtype("int4")
