"""The alpha-beta model: each algorithm's terms, bus bandwidth, the fit, catalogue links and networks."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aihw.catalogue.networks import get_network, load_networks, parse_networks
from aihw.comm import collectives as cc

LINK = cc.LinkModel(alpha_s=5e-6, bandwidth_bytes_per_s=100e9, name="test")
worlds = st.integers(min_value=2, max_value=4096)
sizes = st.floats(min_value=1.0, max_value=1e12)


def test_known_values_of_each_algorithm():
    n, p = 1e9, 8
    assert cc.all_reduce_time(n, p, link=LINK, algorithm="ring") == pytest.approx(14 * 5e-6 + 2 * 7 / 8 * n / 100e9)
    assert cc.all_reduce_time(n, p, link=LINK, algorithm="naive") == pytest.approx(14 * (5e-6 + n / 100e9))
    assert cc.all_reduce_time(n, p, link=LINK, algorithm="tree") == pytest.approx(6 * (5e-6 + n / 100e9))
    assert cc.all_reduce_time(n, p, link=LINK, algorithm="recursive-doubling") == pytest.approx(3 * (5e-6 + n / 100e9))
    assert cc.all_reduce_terms(6, "recursive-doubling") == (4.0, 4.0)  # 2 + 2 extra steps for the two extra ranks
    assert cc.all_reduce_terms(1, "ring") == (0.0, 0.0)
    assert cc.reduce_scatter_time(n, p, link=LINK) == pytest.approx(7 * (5e-6 + n / 8 / 100e9))
    assert cc.all_gather_time(n, p, link=LINK) == cc.reduce_scatter_time(n, p, link=LINK)
    assert cc.send_recv_time(n, link=LINK) == pytest.approx(5e-6 + 0.01)


@given(n=sizes, p=worlds)
def test_ring_moves_the_fewest_bytes_and_is_the_two_halves(n, p):
    _, ring = cc.all_reduce_terms(p, "ring")
    assert ring == pytest.approx(2 * (p - 1) / p)
    for other in ("naive", "tree", "recursive-doubling"):
        assert cc.all_reduce_terms(p, other)[1] >= ring - 1e-12
    halves = cc.reduce_scatter_time(n, p, link=LINK) + cc.all_gather_time(n, p, link=LINK)
    assert cc.all_reduce_time(n, p, link=LINK) == pytest.approx(halves)


@given(n=sizes, p=worlds)
def test_bus_bandwidth_of_an_ideal_ring_is_the_link_bandwidth(n, p):
    link = cc.LinkModel(0.0, 37e9)
    t = cc.all_reduce_time(n, p, link=link)
    assert cc.bus_bandwidth(cc.algorithm_bandwidth(n, t), p) == pytest.approx(37e9)


@given(p=worlds)
def test_recursive_doubling_has_the_fewest_latency_steps(p):
    steps = {a: cc.all_reduce_terms(p, a)[0] for a in cc.ALGORITHMS}
    assert steps["recursive-doubling"] == min(steps.values())
    assert steps["recursive-doubling"] <= math.log2(p) + 2


def test_bus_bandwidth_factors_follow_nccl_tests():
    assert cc.bus_bandwidth(10.0, 4) == pytest.approx(15.0)
    assert cc.bus_bandwidth(10.0, 4, "all_gather") == pytest.approx(7.5)
    assert cc.bus_bandwidth(10.0, 4, "reduce_scatter") == pytest.approx(7.5)
    assert cc.bus_bandwidth(10.0, 4, "broadcast") == 10.0


@settings(max_examples=30, deadline=None)
@given(alpha=st.floats(1e-6, 1e-3), bw=st.floats(1e8, 1e11), p=st.integers(2, 16),
       algorithm=st.sampled_from(cc.ALGORITHMS))
def test_fit_recovers_alpha_and_bandwidth_from_model_times(alpha, bw, p, algorithm):
    truth = cc.LinkModel(alpha, bw)
    n = np.logspace(3, 8, 12)
    t = [cc.all_reduce_time(x, p, link=truth, algorithm=algorithm) for x in n]
    link, r2 = cc.fit_alpha_beta(n, t, p, algorithm)
    assert link.alpha_s == pytest.approx(alpha, rel=1e-6)
    assert link.bandwidth_bytes_per_s == pytest.approx(bw, rel=1e-6)
    assert r2 == pytest.approx(1.0)


def test_fit_with_noise_and_negative_intercept():
    rng = np.random.default_rng(0)
    n = np.logspace(3, 7.8, 9)
    t = np.array([cc.all_reduce_time(x, 4, link=LINK) for x in n]) * rng.uniform(0.9, 1.1, n.size)
    link, r2 = cc.fit_alpha_beta(n, t, 4)
    assert r2 > 0.95 and link.bandwidth_bytes_per_s == pytest.approx(100e9, rel=0.15)
    link, _ = cc.fit_alpha_beta([1e3, 1e6], [1e-9, 1e-5], 2)  # line through the origin would need alpha < 0
    assert link.alpha_s == 0.0


@pytest.mark.parametrize(("call", "pattern"), [
    (lambda: cc.all_reduce_time(0, 4, link=LINK), r"n_bytes \(message size\) must be a positive"),
    (lambda: cc.all_reduce_time(-5, 4, link=LINK), r"got -5"),
    (lambda: cc.all_reduce_time(1e6, 0, link=LINK), r"world_size must be a positive integer"),
    (lambda: cc.all_reduce_time(1e6, 4, link=LINK, algorithm="rign"), r"unknown algorithm 'rign'.*did you mean 'ring'"),
    (lambda: cc.bus_bandwidth(1.0, 2, "allreduce"), r"unknown collective 'allreduce'.*'all_reduce'"),
    (lambda: cc.LinkModel(-1e-6, 1e9), r"alpha_s must be a finite number >= 0"),
    (lambda: cc.LinkModel(1e-6, 0), r"bandwidth_bytes_per_s must be a positive"),
    (lambda: cc.fit_alpha_beta([1e3, 1e3], [1.0, 2.0], 2), r"two different message sizes"),
    (lambda: cc.fit_alpha_beta([1e3, 1e6], [1.0, 2.0], 1), r"world_size=1"),
    (lambda: cc.fit_alpha_beta([1e3, 1e6], [2.0, 1.0], 2), r"do not grow"),
])
def test_bad_input_is_named(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


def test_links_from_the_catalogues():
    assert cc.link_from_chip("H100 SXM").bandwidth_bytes_per_s == pytest.approx(450e9)  # 900 GB/s bidirectional
    assert cc.link_from_chip("TPU v5e").bandwidth_bytes_per_s == pytest.approx(200e9)
    assert cc.network_link("ndr").bandwidth_bytes_per_s == pytest.approx(50e9)  # 400 Gb/s = 50 GB/s
    assert cc.network_link("InfiniBand HDR").bandwidth_bytes_per_s == pytest.approx(25e9)
    with pytest.raises(ValueError, match="unknown network 'infiniband xdr'"):
        cc.network_link("infiniband xdr")


def test_every_network_is_sourced_and_dated():
    nets = load_networks()
    assert {n.key for n in nets} >= {"ib-ndr", "ib-hdr", "eth-100g", "eth-400g"}
    for net in nets:
        assert net.bandwidth.source.startswith("https://") and len(net.bandwidth.read) == 10
    assert get_network("100GbE").bandwidth_bytes_per_s == pytest.approx(12.5e9)
    bad = {"sources": {}, "network": [{"key": "x", "name": "X", "bandwidth": {
        "value": 1, "unit": "Gbps", "direction": "bidirectional", "scope": "port", "source": "https://a", "read": "2026-01-01"}}]}
    with pytest.raises(ValueError, match="per-direction"):
        parse_networks(bad)


def test_cluster_extrapolation_orders_the_layouts():
    grads = 7e9 * 2  # a 7B model's bf16 gradients
    est = {e.label.split(",")[-1].strip(): e for e in cc.cluster_estimates(grads, nodes=2)}
    one_node, hier, flat = est["one node"], est["hierarchical"], est["flat ring"]
    assert one_node.time_s == pytest.approx(14 * 5e-6 + 2 * 7 / 8 * grads / 450e9, rel=1e-9)
    assert one_node.time_s < hier.time_s < flat.time_s  # the network is the bottleneck; hierarchy hides most of it
    assert flat.time_s == pytest.approx(30 * 10e-6 + 2 * 15 / 16 * grads / 50e9, rel=1e-9)


def test_analytic_modules_do_not_load_torch():
    code = ("import sys, aihw.comm.collectives as c, aihw.catalogue.networks; c.cluster_estimates(1e9); "
            "sys.exit(1 if {'torch', 'matplotlib', 'ipywidgets'} & set(sys.modules) else 0)")
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0


def test_cli_prints_predictions_and_names_bad_input(capsys):
    from aihw.cli import main

    assert main(["collectives", "--params", "7e9", "--nodes", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_bytes"] == 14e9 and out["all_reduce_s"]["ring"] == pytest.approx(
        cc.all_reduce_time(14e9, 8, link=cc.link_from_chip("H100 SXM")))
    assert main(["collectives", "--bytes", "-1"]) == 2
    assert "--bytes" in capsys.readouterr().err


def test_low_r2_fits_are_flagged():
    from aihw.comm import collectives as cc

    assert cc.fit_flag(0.99) == ""
    assert "low R²" in cc.fit_flag(0.5) and "0.50" in cc.fit_flag(0.5)
