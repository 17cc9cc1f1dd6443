import numpy as np
import pytest

from aihw.precision import FORMATS, bytes_per_element, format_table, get_format


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
    with pytest.raises(ValueError, match="unknown dtype 'float32'"):
        bytes_per_element("float32")
