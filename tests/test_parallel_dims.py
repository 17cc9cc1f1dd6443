"""ParallelDims: one validated layout, with the whole product and what would work in every error."""

import pytest

from aihw.layout.dims import ParallelDims, divisors, stage_layers
from aihw.transformer.shapes import get_preset


def test_product_must_match_devices():
    assert ParallelDims(dp=4, tp=8, pp=2, world_size=64).devices == 64
    with pytest.raises(ValueError, match=r"dp x tp x pp x cp = 4 x 8 x 2 x 1 = 64, but there are 32 devices; "
                                         r"with tp=8, pp=2, cp=1 use dp=2"):
        ParallelDims(dp=4, tp=8, pp=2, world_size=32)


@pytest.mark.parametrize("dims, seq, match", [
    (ParallelDims(tp=3), None, "possible: 1, 2, 4, 8"),
    (ParallelDims(pp=40), None, "pp=40 stages exceed the 32 layers of llama-3-8b"),
    (ParallelDims(cp=3), 8192, "cp=3 must divide the sequence of 8192"),
    (ParallelDims(dp=2, ep=2), None, "needs a mixture-of-experts model"),
])
def test_validate_model(dims, seq, match):
    with pytest.raises(ValueError, match=match):
        dims.validate_model(get_preset("llama-3-8b"), seq=seq)


def test_expert_parallel_inside_dp_cp():
    ParallelDims(dp=4, ep=4).validate_model(get_preset("mixtral-8x7b"))
    with pytest.raises(ValueError, match="ep=3 must divide dp x cp = 4"):
        ParallelDims(dp=4, ep=3)
    with pytest.raises(ValueError, match="ep=16 must divide the 8 experts"):
        ParallelDims(dp=16, ep=16).validate_model(get_preset("mixtral-8x7b"))


def test_divisors_and_stages():
    assert divisors(36) == [1, 2, 3, 4, 6, 9, 12, 18, 36] and len(divisors(2**40)) == 41
    for layers, pp in ((70, 12), (126, 16), (40, 8), (5, 5)):
        sizes = stage_layers(layers, pp)
        assert sum(sizes) == layers and max(sizes) - min(sizes) <= 1 and sizes[0] <= sizes[len(sizes) // 2]
    assert len(stage_layers(32, 4, virtual_stages=2)) == 8
