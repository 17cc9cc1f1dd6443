import pytest
from hypothesis import given
from hypothesis import strategies as st

from aihw import scaling


def test_six_nd():
    assert scaling.training_flops(1e9, 2e10) == 1.2e20
    # FLOPs per token of a given shape (both attention matmuls) are aihw.transformer.flops' job: see tests/test_flops.py


@pytest.mark.parametrize("params, flops, tokens", scaling.HOFFMANN_TABLE3)
def test_approach1_reproduces_hoffmann_table3(params, flops, tokens):
    # Every row of Hoffmann et al. 2022, Table 3: the fitted frontier gives the printed model size within 2%,
    # and the token count the row's own budget implies (C / 6N) within 2%; the printed token counts are rounded
    # (67B: "1.5 Trillion" for 5.76e23 / (6 x 67e9) = 1.43T), so against them within 7%.
    a = scaling.compute_optimal(flops, "hoffmann-approach1")
    assert a.params == pytest.approx(params, rel=0.02)
    assert a.tokens == pytest.approx(flops / (6 * params), rel=0.02)
    assert a.tokens == pytest.approx(tokens, rel=0.07)


def test_table3_is_the_papers():
    # Spot values as printed in the paper (arXiv:2203.15556, Table 3).
    assert scaling.HOFFMANN_TABLE3[3] == (67e9, 5.76e23, 1.5e12)
    assert scaling.HOFFMANN_TABLE3[-1] == (10e12, 1.30e28, 216.2e12)
    assert scaling.HOFFMANN_APPROACH1.exponent == pytest.approx(0.50, abs=0.005)  # their Table 2: a = 0.50


def test_epoch_refit_constants_and_allocation():
    fit = scaling.EPOCH_APPROACH3
    assert (fit.E, fit.A, fit.B, fit.alpha, fit.beta) == (1.82, 482.01, 2085.43, 0.3478, 0.3658)
    # The refit agrees with approach 1 (Besiroglu et al. 2024's conclusion): ~70B params, ~20 tokens/param at
    # Chinchilla's budget; the rounded published constants put the optimum at ~32B and ~93 tokens/param.
    a = scaling.compute_optimal(5.76e23, "epoch-approach3")
    assert 60e9 < a.params < 80e9 and 15 < a.tokens_per_param < 25
    biased = scaling.compute_optimal(5.76e23, "hoffmann-approach3-rounded")
    assert biased.tokens_per_param == pytest.approx(92.6, abs=0.5)


def test_rule_of_thumb_and_all_methods():
    a = scaling.compute_optimal(5.76e23, "tokens-per-param-20")
    assert a.tokens == pytest.approx(20 * a.params) and 6 * a.params * a.tokens == pytest.approx(5.76e23)
    every = scaling.compute_optimal_all(1e24)
    assert list(every) == list(scaling.METHODS)
    for alloc in every.values():
        assert 6 * alloc.params * alloc.tokens == pytest.approx(1e24)
    with pytest.raises(ValueError, match="epoch-approach3"):
        scaling.compute_optimal(1e24, "epoch-aproach3")


def test_chinchilla_reproduces_the_papers_allocation():
    # The fitted loss of approach 3, with its published rounded constants, puts the optimum for Chinchilla's
    # budget at a smaller model (~3e10) trained on more tokens; check that order of magnitude and the budget.
    n_opt, d_opt = scaling.CHINCHILLA.compute_optimal(5.76e23)
    assert 6 * n_opt * d_opt == pytest.approx(5.76e23)
    assert 2e10 < n_opt < 7e10
    assert 10 < d_opt / n_opt < 120


@given(st.floats(min_value=1e18, max_value=1e27))
def test_optimum_is_a_minimum_along_the_budget(flops):
    fit = scaling.CHINCHILLA
    n_opt, d_opt = fit.compute_optimal(flops)
    best = fit.loss(n_opt, d_opt)
    for factor in (0.5, 0.8, 1.25, 2.0):
        n = n_opt * factor
        assert fit.loss(n, flops / 6 / n) >= best - 1e-12


@given(st.floats(min_value=1e18, max_value=1e26), st.floats(min_value=1.5, max_value=10))
def test_more_compute_means_bigger_model_and_lower_loss(flops, factor):
    fit = scaling.CHINCHILLA
    n1, d1 = fit.compute_optimal(flops)
    n2, d2 = fit.compute_optimal(flops * factor)
    assert n2 > n1 and d2 > d1 and fit.loss(n2, d2) < fit.loss(n1, d1)


def test_training_run_time_and_cost():
    from aihw.catalogue.hardware import get_chip

    h100 = get_chip("H100 SXM")
    run = scaling.training_run(1e21, h100, chips=8, mfu=0.5)
    assert run.seconds == pytest.approx(1e21 / (8 * h100.peak_flops("bf16") * 0.5))
    assert run.chip_hours == pytest.approx(run.seconds * 8 / 3600)
    assert run.usd == pytest.approx(run.chip_hours * h100.price.figure.value)
    assert scaling.training_run(1e21, "B200", chips=8, mfu=0.5).usd is None  # no price in the catalogue


@pytest.mark.parametrize("kwargs, match", [
    ({"chips": 0, "mfu": 0.5}, "chips"), ({"chips": 8, "mfu": 0}, "mfu"), ({"chips": 8, "mfu": 1.2}, "mfu"),
])
def test_bad_run_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        scaling.training_run(1e21, "H100 SXM", **kwargs)


def test_decode_bound():
    t = scaling.decode_seconds_per_token(7e9, bytes_per_param=2, bandwidth_bytes_per_s=3.35e12)
    assert t == pytest.approx(14e9 / 3.35e12)
    with pytest.raises(ValueError, match="batch"):
        scaling.decode_seconds_per_token(7e9, bytes_per_param=2, bandwidth_bytes_per_s=1e12, batch=0)


def test_cli_scaling_json_and_errors(capsys):
    import json

    from aihw.cli import main

    assert main(["scaling", "--compute", "5.76e23", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["methods"]) == set(scaling.METHODS) and out["flops"] == 5.76e23
    for m in out["methods"].values():
        assert {"params", "tokens"} <= set(m)
    assert main(["scaling", "--params", "7e9", "--tokens", "2e12", "--chip", "h100", "--chips", "256",
                 "--mfu", "0.4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["flops"] == pytest.approx(8.4e22)
    assert out["run"]["seconds"] == pytest.approx(scaling.training_run(8.4e22, "H100 SXM", chips=256,
                                                                       mfu=0.4).seconds)
    assert main(["scaling", "--params", "7e9", "--tokens", "2e12"]) == 0
    assert "8.400e+22" in capsys.readouterr().out
    for bad in (["scaling", "--compute", "-1"], ["scaling", "--params", "7e9"],
                ["scaling", "--compute", "1e24", "--chip", "h100", "--mfu", "1.5"], ["scaling"]):
        assert main(bad) == 2
        err = capsys.readouterr().err
        assert err.startswith("aihw: error:") and err.count("\n") == 1
