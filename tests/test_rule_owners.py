"""Each rule has one owner: precision names, bytes per value, KV-cache bytes, the TP/KV-head rule and collective
time are worked out once, and the memory estimator, the serving model and the planner agree because they call
the same functions."""

import pytest

from aihw.comm import collectives as cc
from aihw.formats.precision import activation_bytes_per_value, resolve_precision
from aihw.layout.dims import ParallelDims, kv_heads_per_device, tp_fits_kv_heads
from aihw.memory import MemoryConfig, kv_cache_bytes
from aihw.memory import estimate as memory_estimate
from aihw.planning import Cluster, PlanConfig
from aihw.serving import ServingConfig, kv_bytes_per_token
from aihw.serving import estimate as serving_estimate
from aihw.transformer.shapes import resolve_model


@pytest.mark.parametrize("alias, name", [("bfloat16", "bf16"), ("BF16", "bf16"), ("fp8", "fp8_e4m3"),
                                         ("float32", "fp32"), ("e5m2", "fp8_e5m2")])
def test_every_config_resolves_a_precision_alias_to_the_registry_name(alias, name):
    assert resolve_precision(alias) == name
    assert MemoryConfig(model="llama-3-8b", precision=alias, mode="infer").precision == name
    assert ServingConfig("llama-3-8b", precision=alias).precision == name
    assert MemoryConfig(model="llama-3-8b", kv_precision=alias, mode="infer").kv_precision == name


def test_the_planner_resolves_aliases_and_refuses_storage_only_formats():
    cluster = Cluster("H100 SXM", nodes=1)
    assert PlanConfig("llama-3-8b", cluster, global_batch=64, precision="bfloat16").precision == "bf16"
    with pytest.raises(ValueError, match="precision 'int8' is not offered here; allowed: fp32, tf32, bf16, fp16"):
        PlanConfig("llama-3-8b", cluster, global_batch=64, precision="int8")


def test_an_unknown_precision_names_the_value_and_the_allowed_names():
    with pytest.raises(ValueError, match=r"unknown precision 'bf61'; allowed: fp32, .*did you mean"):
        resolve_precision("bf61")
    with pytest.raises(TypeError, match="precision must be a name"):
        resolve_precision(16)


@pytest.mark.parametrize("precision, expected", [("fp32", 4), ("tf32", 4), ("bf16", 2), ("fp8_e4m3", 2), ("int4", 2)])
def test_activation_bytes_follow_the_weight_precision(precision, expected):
    assert activation_bytes_per_value(precision) == expected
    assert MemoryConfig(model="llama-3-8b", precision=precision, mode="infer").activation_bytes_per_value == expected
    assert ServingConfig("llama-3-8b", precision=precision).kv_bytes_per_value == expected


@pytest.mark.parametrize("kv, tp, per_device", [(8, 1, 8), (8, 2, 4), (8, 8, 1), (8, 16, 1), (8, 64, 1), (1, 4, 1)])
def test_kv_heads_per_device_splits_then_replicates(kv, tp, per_device):
    assert tp_fits_kv_heads(kv, tp)
    assert kv_heads_per_device(kv, tp) == per_device


def test_kv_heads_that_do_not_share_a_factor_are_refused():
    assert not tp_fits_kv_heads(8, 3)
    with pytest.raises(ValueError, match="tp=3 and kv_heads=8 must divide one another"):
        kv_heads_per_device(8, 3)
    with pytest.raises(ValueError, match="tp=3"):
        ParallelDims(tp=3).validate_model(resolve_model("llama-3-70b"))


@pytest.mark.parametrize("tp", [1, 2, 8, 16])
def test_memory_and_serving_hold_the_same_kv_cache_per_device(tp):
    """Llama-3-70B (8 KV heads) at tp up to 16: at 16 each head sits on two chips, in both calculators."""
    memory = memory_estimate(MemoryConfig(model="llama-3-70b", mode="infer", tp=tp, batch=4, seq=4096))
    served = serving_estimate(ServingConfig("llama-3-70b", chip="H100 SXM", tp=tp, batch=4, context=4096))
    kv_memory = memory.to_dict()["per_device_breakdown"]["kv_cache"]
    assert served.per_device_bytes - served.weights_bytes / tp == pytest.approx(kv_memory, rel=1e-12)
    m = resolve_model("llama-3-70b")
    assert kv_memory == kv_cache_bytes(m, tokens=4096, batch=4, bytes_per_value=2, tp=tp)
    assert kv_bytes_per_token(m, 2, tp=tp) * 4096 * 4 == kv_memory


def test_serving_tp_16_stores_twice_the_kv_cache_of_tp_8_in_all():
    """Replication: per device the cache stops shrinking at one KV head, so 16 chips hold it twice over."""
    m = resolve_model("llama-3-70b")
    at_8, at_16 = (kv_cache_bytes(m, tokens=1024, batch=1, bytes_per_value=2, tp=tp) for tp in (8, 16))
    assert at_8 == at_16 and 16 * at_16 == 2 * 8 * at_8 / 1


def test_serving_all_reduce_time_is_the_collective_model_with_two_latencies():
    cfg = ServingConfig("llama-3-70b", chip="H100 SXM", tp=8, batch=16, context=2048)
    est = serving_estimate(cfg)
    link = cc.LinkModel(5e-6, cfg.chip_spec.interconnect.bandwidth_bytes_per_s(direction="per-direction",
                                                                                scope="chip"))
    one = cc.all_reduce_time(16 * 8192 * 2, 8, link=link, latency_steps=2)
    assert est.decode_comm_seconds == pytest.approx(2 * 80 * one, rel=1e-12)
    assert one == pytest.approx(2 * 5e-6 + 2 * 7 / 8 * 16 * 8192 * 2 / link.bandwidth_bytes_per_s, rel=1e-12)


def test_all_to_all_time_splits_local_and_remote_shares():
    intra, inter = cc.LinkModel(1e-6, 400e9), cc.LinkModel(1e-5, 50e9)
    t = cc.all_to_all_time(1e9, 16, per_node=8, intra=intra, inter=inter)
    assert t == pytest.approx(15 * 1e-5 + 7 / 16 * 1e9 / 400e9 + 8 / 16 * 1e9 / 50e9, rel=1e-12)
    with pytest.raises(ValueError, match="per_node=32 must not exceed world_size=16"):
        cc.all_to_all_time(1e9, 16, per_node=32, intra=intra, inter=inter)
