"""Tests for the hardware catalogue: data sanity (units, sources, dates, dense vs sparse), interconnect
conversions, lookup, and rejection of malformed catalogue files."""

from __future__ import annotations

import datetime
import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aihw.catalogue import hardware
from aihw.catalogue.figures import UNITS, Figure
from aihw.catalogue.hardware import PRECISIONS, get_chip, list_chips, load_catalogue

CHIPS = load_catalogue()
REQUIRED = ("t4", "l4", "a100-40gb-sxm", "a100-80gb-sxm", "h100-sxm", "h100-pcie", "h200", "b200",
            "mi300x", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e")
BASE_UNITS = {"FLOP/s", "op/s", "bytes", "bytes/s", "W", "USD/hour"}
T, G = 1e12, 1e9


def all_figures(chip: hardware.Chip) -> list[tuple[str, Figure]]:
    figures = [(f"flops.{p}", f) for p, f in chip.flops.items()]
    figures += [(f"sparse_flops.{p}", f) for p, f in chip.sparse_flops.items()]
    figures += [("memory", chip.memory), ("memory_bandwidth", chip.memory_bandwidth)]
    if chip.interconnect:
        figures.append(("interconnect", chip.interconnect.bandwidth))
    if chip.power:
        figures.append(("power", chip.power))
    if chip.price:
        figures.append(("price", chip.price.figure))
    return figures


# ------------------------------------------------------------------------------------------------ data

def test_required_chips_present():
    keys = {c.key for c in CHIPS}
    assert set(REQUIRED) <= keys
    assert {c.kind for c in CHIPS} == {"gpu", "tpu"}


@pytest.mark.parametrize("chip", CHIPS, ids=lambda c: c.key)
def test_every_figure_has_unit_source_and_date(chip):
    for field, fig in all_figures(chip):
        assert fig.unit in BASE_UNITS, (chip.key, field)
        assert re.match(r"https?://\S+$", fig.source), (chip.key, field, fig.source)
        assert datetime.date.fromisoformat(fig.read) <= datetime.date.today(), (chip.key, field)
        assert fig.value > 0 and math.isfinite(fig.value)
        assert fig.quoted.split()[-1] in UNITS, (chip.key, field, fig.quoted)


@pytest.mark.parametrize("chip", CHIPS, ids=lambda c: c.key)
def test_every_chip_has_16bit_flops_memory_and_bandwidth(chip):
    assert "bf16" in chip.flops or "fp16" in chip.flops
    assert chip.memory.unit == "bytes" and chip.memory_bytes >= 16e9
    assert chip.memory_bandwidth.unit == "bytes/s" and chip.bandwidth_bytes_per_s >= 300e9
    assert all(f.unit in ("FLOP/s", "op/s") for f in chip.flops.values())
    assert chip.flops.get("int8", Figure(1, "op/s", "", "", "")).unit == "op/s"


@pytest.mark.parametrize("chip", CHIPS, ids=lambda c: c.key)
def test_sparse_figures_are_twice_dense(chip):
    for precision, sparse in chip.sparse_flops.items():
        dense = chip.flops[precision]
        assert dense.value < sparse.value
        assert sparse.value / dense.value == pytest.approx(2.0, rel=0.01), (chip.key, precision)


@pytest.mark.parametrize("chip", CHIPS, ids=lambda c: c.key)
def test_derived_dense_figures_say_so_and_keep_the_printed_sparse_one(chip):
    for precision, dense in chip.flops.items():
        if "derived" in dense.note:
            assert "sparsity" in dense.note and precision in chip.sparse_flops, (chip.key, precision)


def test_nvidia_tensor_figures_are_dense_not_marketing():
    h100 = get_chip("h100-sxm")
    assert h100.peak_flops("bf16") == pytest.approx(989.4 * T, rel=1e-3)
    assert h100.sparse_flops["bf16"].value == pytest.approx(1979 * T)
    assert h100.peak_flops("fp8") == pytest.approx(1978.9 * T, rel=1e-3)
    assert get_chip("a100-80gb-sxm").peak_flops("bf16") == pytest.approx(312 * T)
    assert get_chip("h100-pcie").peak_flops("bf16") == pytest.approx(756.5 * T)
    assert get_chip("b200").peak_flops("bf16") == pytest.approx(2.25e15)
    assert get_chip("b200").peak_flops("fp4") == pytest.approx(9e15)
    marketing = {1979 * T, 1513 * T, 624 * T, 4.5e15, 242 * T}  # "with sparsity" bf16 headlines
    for chip in CHIPS:
        if chip.architecture in {"Ampere", "Hopper", "Blackwell", "Ada Lovelace"}:
            bf16 = chip.peak_flops("bf16")
            assert all(not math.isclose(bf16, m, rel_tol=1e-3) for m in marketing), chip.key
            for precision in ("tf32", "bf16", "fp16", "fp8", "int8", "fp4"):
                if precision in chip.flops:
                    assert precision in chip.sparse_flops, (chip.key, precision)


def test_units_are_converted_to_si():
    assert get_chip("tpu v4").memory_bytes == 32 * 2**30          # the docs say GiB
    assert get_chip("h100").memory_bytes == 80 * 2**30              # NVIDIA prints "80GB"; nvidia-smi: 81559 MiB
    assert get_chip("h100").bandwidth_bytes_per_s == pytest.approx(3.35e12)
    assert get_chip("mi300x").peak_flops("int8") == pytest.approx(2614.9 * T)
    assert get_chip("tpu-v5e").price.figure.unit == "USD/hour"


# ---------------------------------------------------------------------------------------- interconnect

def test_h100_nvlink_conversions():
    nvlink = get_chip("H100 SXM").interconnect
    assert (nvlink.name, nvlink.links, nvlink.direction, nvlink.scope) == ("NVLink 4", 18, "bidirectional", "chip")
    assert nvlink.bandwidth_bytes_per_s(direction="bidirectional") == pytest.approx(900 * G)
    assert nvlink.bandwidth_bytes_per_s() == pytest.approx(450 * G)
    assert nvlink.bandwidth_bytes_per_s(scope="link") == pytest.approx(25 * G)
    assert nvlink.bandwidth_bytes_per_s(direction="bidirectional", scope="link") == pytest.approx(50 * G)


def test_link_scoped_figure_converts_to_chip():
    fabric = get_chip("mi300x").interconnect
    assert fabric.scope == "link"
    assert fabric.bandwidth_bytes_per_s(direction="bidirectional") == pytest.approx(896 * G)


def test_unknown_link_count_cannot_be_converted_per_link():
    ici = get_chip("v5p").interconnect
    assert ici.links is None
    assert ici.bandwidth_bytes_per_s() == pytest.approx(600 * G)
    with pytest.raises(ValueError, match="number of links is unknown"):
        ici.bandwidth_bytes_per_s(scope="link")
    with pytest.raises(ValueError, match="direction"):
        ici.bandwidth_bytes_per_s(direction="both")


WITH_LINKS = [c for c in CHIPS if c.interconnect and c.interconnect.links]


@settings(max_examples=50, deadline=None)
@given(chip=st.sampled_from(WITH_LINKS), direction=st.sampled_from(hardware.DIRECTIONS),
       scope=st.sampled_from(hardware.SCOPES))
def test_interconnect_conversions_are_consistent(chip, direction, scope):
    ic = chip.interconnect
    value = ic.bandwidth_bytes_per_s(direction=direction, scope=scope)
    back = value * (2 if direction == "per-direction" else 1) * (ic.links if scope == "link" else 1)
    assert back == pytest.approx(ic.bandwidth_bytes_per_s(direction="bidirectional", scope="chip"))


# ------------------------------------------------------------------------------------------------ lookup

@pytest.mark.parametrize("name, key", [
    ("h100", "h100-sxm"), ("H100 SXM", "h100-sxm"), ("nvidia_h100-sxm", "h100-sxm"), ("H100SXM5", "h100-sxm"),
    ("H100 PCIe", "h100-pcie"), ("a100", "a100-40gb-sxm"), ("A100 80GB", "a100-80gb-sxm"),
    ("Trillium", "tpu-v6e"), ("TPU v5e", "tpu-v5e"), ("ironwood", "tpu7x"), ("MI-300X", "mi300x"),
])
def test_get_chip_matches_loosely(name, key):
    assert get_chip(name).key == key


def test_get_chip_unknown_suggests_close_matches():
    with pytest.raises(ValueError) as info:
        get_chip("H1000")
    message = str(info.value)
    assert "unknown chip 'H1000'; closest: H100 SXM, H100 PCIe" in message
    assert "aihw hardware list" in message


def test_peak_flops_errors_name_the_precision_and_the_supported_list():
    with pytest.raises(ValueError, match=r"bf16.*supported: fp32, fp16, int8"):
        get_chip("t4").peak_flops("bf16")
    with pytest.raises(ValueError, match="fp12"):
        get_chip("t4").peak_flops("fp12")
    assert set(hardware.PRECISIONS) >= {p for c in CHIPS for p in c.flops}


def test_list_chips_and_names():
    assert [c.kind for c in list_chips("tpu")] == ["tpu"] * len(list_chips("tpu"))
    assert len(list_chips("gpu")) + len(list_chips("tpu")) == len(list_chips()) == len(CHIPS)
    assert [get_chip(n).name for n in hardware.chip_names()] == hardware.chip_names()
    with pytest.raises(ValueError, match="kind"):
        list_chips("npu")


def test_to_dict_is_json_and_complete():
    data = json.loads(json.dumps([c.to_dict() for c in CHIPS]))
    h100 = next(d for d in data if d["key"] == "h100-sxm")
    assert set(h100["flops"]["bf16"]) == {"value", "unit", "quoted", "source", "read", "note"}
    assert h100["interconnect"]["bandwidth"]["quoted"] == "900 GB/s"
    assert h100["price"]["provider"].startswith("AWS")


def test_default_catalogue_is_cached():
    assert load_catalogue() is load_catalogue()


_SEPARATORS = st.sampled_from(["", " ", "-", "_"])


@settings(max_examples=60, deadline=None)
@given(chip=st.sampled_from(CHIPS), sep=_SEPARATORS, upper=st.booleans())
def test_get_chip_ignores_case_and_separators(chip, sep, upper):
    for label in (chip.key, *chip.aliases):
        mangled = re.sub(r"[\s\-_]+", sep, label)
        assert get_chip(mangled.upper() if upper else mangled) is chip


# ---------------------------------------------------------------------------------------- bad catalogues

GOOD = """
[sources]
ds = "https://example.com/datasheet"

[[chip]]
key = "x1"
name = "Vendor X1"
aliases = ["x-one"]
vendor = "Vendor"
kind = "gpu"
architecture = "Test"
year = 2024
memory = { value = 32, unit = "GiB", source = "ds", read = "2026-11-29" }
memory_bandwidth = { value = 1, unit = "TB/s", source = "ds", read = "2026-11-29" }
interconnect = { name = "ICI", links = 4, value = 1600, unit = "Gbps", direction = "bidirectional", scope = "chip", source = "ds", read = "2026-11-29" }

[chip.flops]
bf16 = { value = 100, unit = "TFLOP/s", source = "ds", read = "2026-11-29", note = "derived from sparsity" }

[chip.sparse_flops]
bf16 = { value = 200, unit = "TFLOP/s", source = "ds", read = "2026-11-29" }
"""


def write(tmp_path, text):
    path = tmp_path / "hw.toml"
    path.write_text(text)
    return path


def test_good_tiny_catalogue_loads(tmp_path):
    (chip,) = load_catalogue(write(tmp_path, GOOD))
    assert chip.memory_bytes == 32 * 2**30
    assert chip.interconnect.bandwidth_bytes_per_s(direction="bidirectional") == pytest.approx(200 * G)  # bits
    assert chip.peak_flops("bf16") == 100 * T
    assert get_chip("h100").key == "h100-sxm"  # a custom file does not disturb the default catalogue


@pytest.mark.parametrize("old, new, match", [
    ('unit = "TFLOP/s", source = "ds", read = "2026-11-29", note', 'unit = "TFLOPS", source = "ds", '
     'read = "2026-11-29", note', r"flops\.bf16: unknown unit 'TFLOPS'"),
    ('value = 32, unit = "GiB", source = "ds", ', 'value = 32, unit = "GiB", ', r"memory: missing 'source'"),
    ('value = 32, unit = "GiB", source = "ds", read = "2026-11-29"', 'value = 32, unit = "GiB", source = "ds"',
     r"memory: missing 'read'"),
    ('[chip.flops]\nbf16', '[chip.flops]\nfp16', r"sparse_flops\.bf16: sparse figure without a dense"),
    ('value = 100, unit', 'value = 300, unit', r"flops\.bf16: dense peak .* exceeds the sparse peak"),
    ('read = "2026-11-29" }\nmemory_bandwidth', 'read = "29/11/2026" }\nmemory_bandwidth', "ISO date"),
    ('[chip.flops]\nbf16', '[chip.flops]\nfp12', r"flops\.fp12: unknown precision"),
    ('source = "ds", read = "2026-11-29" }\nmemory_bandwidth', 'source = "nope", read = "2026-11-29" }\n'
     'memory_bandwidth', "unknown source 'nope'"),
    ('value = 32, unit = "GiB"', 'value = 32, unit = "W"', r"memory: unit 'W' measures W, expected bytes"),
    ('direction = "bidirectional"', 'direction = "both"', "'direction' must be one of"),
    ('value = 32,', 'value = -32,', "positive number"),
    ('kind = "gpu"', 'kind = "npu"', r"kind: must be one of gpu, tpu"),
    ('year = 2024', 'year = 2024\nspeed = 3', r"unknown field\(s\) speed"),
])
def test_bad_catalogue_is_rejected(tmp_path, old, new, match):
    assert old in GOOD
    with pytest.raises(ValueError, match=match) as info:
        load_catalogue(write(tmp_path, GOOD.replace(old, new, 1)))
    assert "chip 'x1'" in str(info.value)


def test_duplicate_keys_and_invalid_toml_are_rejected(tmp_path):
    chip = GOOD.split("[[chip]]")[1].replace('aliases = ["x-one"]', "aliases = []")
    with pytest.raises(ValueError, match="already used by chip 'x1'"):
        load_catalogue(write(tmp_path, GOOD + "\n[[chip]]" + chip))
    with pytest.raises(ValueError, match="not valid TOML"):
        load_catalogue(write(tmp_path, "[[chip]\n"))
    assert PRECISIONS[-1] == "fp4"


def test_tpu7x_figures_as_google_prints_them():
    # docs.cloud.google.com/tpu/docs/tpu7x comparison table (read 2026-12-01): 'HBM bandwidth per chip (GBps)
    # 7380', 'HBM capacity per chip (GiB) 192', bidirectional ICI per chip 1200 GBps. GB and GiB as printed.
    chip = hardware.get_chip("tpu7x")
    assert chip.memory_bandwidth.quoted == "7380 GB/s" and chip.bandwidth_bytes_per_s == 7380e9
    assert chip.memory.quoted == "192 GiB" and chip.memory_bytes == 192 * 2**30
    assert chip.interconnect.bandwidth_bytes_per_s(direction="bidirectional") == 1200e9


def test_hardware_list_does_not_call_gddr_bandwidth_hbm(capsys):
    from aihw.cli import main

    assert main(["hardware", "list"]) == 0
    out = capsys.readouterr().out
    assert "HBM TB/s" not in out and "mem TB/s" in out
