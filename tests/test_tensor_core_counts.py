"""Tensor-core access model: where each generation reads its operands; plus the catalogue's tensor-core share."""

import pytest

from aihw.catalogue import compare, hardware
from aihw.chips import simt


def test_register_file_traffic_falls_by_generation():
    per_mac = {g: simt.tensor_core_matmul_counts(512, 512, 512, generation=g).per_mac()
               for g in simt.TENSOR_CORE_GENERATIONS}
    rf = {g: p["register_file_reads"] + p["register_file_writes"] for g, p in per_mac.items()}
    cuda = simt.simt_matmul_counts(512, 512, 512).per_mac()
    assert rf["ampere"] > rf["hopper"] > rf["blackwell"]
    assert cuda["register_file_reads"] > 10 * per_mac["ampere"]["register_file_reads"]
    # Ampere: A (16x16), B (16x8) and C (16x8) fragments per 2048 MACs, plus the ldmatrix copies
    assert per_mac["ampere"]["register_file_reads"] == pytest.approx((256 + 128 + 128) / 2048 + 1 / 512)
    assert per_mac["hopper"]["register_file_reads"] == pytest.approx(1 / 16 + 1 / 512)   # accumulator, K=16
    assert per_mac["blackwell"]["tensor_memory_accesses"] == pytest.approx(2 / 16 + 1 / 512)
    assert per_mac["hopper"]["tensor_memory_accesses"] == 0


def test_same_offchip_traffic_as_simt_with_same_tile():
    tc = simt.tensor_core_matmul_counts(300, 200, 100, generation="hopper", tile=64)
    cuda = simt.simt_matmul_counts(300, 200, 100, tile=64)
    assert tc.offchip_reads == cuda.offchip_reads and tc.macs == cuda.macs == 300 * 200 * 100


@pytest.mark.parametrize("kwargs, match", [({"generation": "volta"}, "generation"), ({"tile": 0}, "tile"),
                                           ({"warp_tile": 48}, "warp_tile must divide")])
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        simt.tensor_core_matmul_counts(64, 64, 64, **kwargs)


def test_tensor_core_share_h100():
    share = compare.tensor_core_share("H100 SXM")
    assert share["share"] == pytest.approx(989.4 / (989.4 + 67))
    with pytest.raises(ValueError, match="TPU"):
        compare.tensor_core_share("TPU v5e")


def test_anatomy_consistent_with_peak():
    """Dense fp16 peak / (SMs x FLOP per clock per SM) must be a plausible boost clock (1-2.5 GHz)."""
    for chip in hardware.list_chips("gpu"):
        if "dense_fp16_flop_per_clock_per_sm" in chip.anatomy:
            clock = chip.peak_flops("fp16") / (chip.anatomy_value("sm_count")
                                               * chip.anatomy_value("dense_fp16_flop_per_clock_per_sm"))
            assert 1e9 < clock < 2.5e9, chip.name
    for chip in hardware.list_chips("tpu"):
        if "mxu_size" in chip.anatomy:
            macs = (chip.anatomy_value("tensorcores_per_chip") * chip.anatomy_value("mxus_per_tensorcore")
                    * chip.anatomy_value("mxu_size") ** 2)
            assert 0.7e9 < chip.peak_flops("bf16") / (2 * macs) < 2.5e9, chip.name
    with pytest.raises(ValueError, match="no 'sm_count'"):
        hardware.get_chip("TPU v5e").anatomy_value("sm_count")
