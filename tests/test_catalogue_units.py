"""Memory and cache sizes carry the vendor's real unit: NVIDIA's "80GB" HBM is 80 GiB, L2 sizes are binary."""

import pytest

from aihw.catalogue.hardware import get_chip, load_catalogue

GiB, MiB = 2**30, 2**20

# What the device itself reports (nvidia-smi totals, CUDA deviceQuery), quoted in the catalogue's notes and
# sources: a capacity read as decimal GB would be smaller than what the driver shows, so the unit is binary.
REPORTED_BYTES = {
    "a100-40gb-sxm": 40960 * MiB,   # nvidia-smi total
    "a100-80gb-sxm": 85_198_045_184,  # CUDA deviceQuery "Total amount of global memory" (usable)
    "h100-sxm": 81559 * MiB,        # nvidia-smi total
}


@pytest.mark.parametrize(("key", "gib"), [("t4", 16), ("l4", 24), ("a100-40gb-sxm", 40), ("a100-80gb-sxm", 80),
                                          ("h100-sxm", 80), ("h100-pcie", 80), ("h200", 141), ("b200", 180),
                                          ("mi300x", 192), ("tpu-v4", 32), ("tpu-v5p", 95), ("tpu-v6e", 32)])
def test_memory_is_binary_where_the_hardware_is(key, gib):
    chip = get_chip(key)
    assert chip.memory_bytes == gib * GiB
    assert chip.memory.note  # each says what the vendor prints and why the unit is binary


@pytest.mark.parametrize("key", sorted(REPORTED_BYTES))
def test_catalogue_memory_is_at_least_what_the_driver_reports(key):
    # the driver keeps a little for itself, so the device's own report is a lower bound and close to it
    assert REPORTED_BYTES[key] <= get_chip(key).memory_bytes < 1.08 * REPORTED_BYTES[key]
    assert REPORTED_BYTES[key] > get_chip(key).memory.value / GiB * 1e9  # a decimal reading would be too small


def test_vendor_label_is_kept_beside_the_binary_value():
    h100 = get_chip("h100-sxm")
    assert h100.memory.quoted == "80 GB" and h100.memory_bytes == 85_899_345_920


@pytest.mark.parametrize(("key", "mib"), [("a100-40gb-sxm", 40), ("a100-80gb-sxm", 40), ("h100-sxm", 50)])
def test_l2_cache_sizes_are_binary(key, mib):
    assert get_chip(key).anatomy["l2_cache"].value == mib * MiB


def test_every_memory_and_cache_figure_is_sourced_and_dated():
    for chip in load_catalogue():
        figures = [chip.memory] + [f for name, f in chip.anatomy.items() if name in ("l2_cache",
                                                                                        "shared_memory_per_sm")]
        for figure in figures:
            assert figure.unit == "bytes" and figure.source and figure.read, chip.key
