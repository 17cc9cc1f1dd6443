import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aihw.chips import systolic as sy
from aihw.chips.simt import AccessCounts, simt_matmul_counts

DATAFLOWS = sy.DATAFLOWS


def tile_sum_cycles(m, k, n, size, dataflow):
    """Cycle count summed tile by tile (independent of the closed form in the module)."""
    widths = lambda extent: [min(size, extent - s) for s in range(0, extent, size)]  # noqa: E731
    if dataflow == "weight-stationary":   # per tile: N weight load + M + N + n_t - 2
        return sum(size + m + size + n_t - 2 for n_t in widths(n) for _ in widths(k))
    return sum(k + m_t + n_t - 2 + size for m_t in widths(m) for n_t in widths(n))   # compute + N drain


@pytest.mark.parametrize("dataflow", DATAFLOWS)
def test_fixed_shapes_exact(dataflow):
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((9, 7)), rng.standard_normal((7, 5))
    np.testing.assert_allclose(sy.simulate(A, B, size=4, dataflow=dataflow).C, A @ B, rtol=1e-12, atol=1e-12)
    Ai, Bi = rng.integers(-1000, 1000, (6, 11)), rng.integers(-1000, 1000, (11, 3))
    result = sy.simulate(Ai, Bi, size=3, dataflow=dataflow)
    assert result.C.dtype == np.int64
    np.testing.assert_array_equal(result.C, Ai @ Bi)


@pytest.mark.parametrize("dataflow", DATAFLOWS)
def test_tiling_when_matrices_exceed_the_array(dataflow):
    rng = np.random.default_rng(2)
    A, B = rng.integers(-50, 50, (37, 29)), rng.integers(-50, 50, (29, 41))
    result = sy.simulate(A, B, size=8, dataflow=dataflow)
    np.testing.assert_array_equal(result.C, A @ B)
    assert result.cycles == tile_sum_cycles(37, 29, 41, 8, dataflow)


shapes = st.tuples(st.integers(1, 20), st.integers(1, 20), st.integers(1, 20), st.integers(1, 8))


@settings(max_examples=30, deadline=None)
@given(shapes, st.sampled_from(DATAFLOWS), st.booleans(), st.integers(0, 2**32 - 1))
def test_property_exact_cycles_utilisation_counts(shape, dataflow, integer, seed):
    m, k, n, size = shape
    rng = np.random.default_rng(seed)
    if integer:
        A, B = rng.integers(-100, 100, (m, k)), rng.integers(-100, 100, (k, n))
    else:
        A, B = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    result = sy.simulate(A, B, size=size, dataflow=dataflow)
    if integer:
        np.testing.assert_array_equal(result.C, A @ B)
    else:
        np.testing.assert_allclose(result.C, A @ B, rtol=1e-12, atol=1e-12)
    assert result.cycles == tile_sum_cycles(m, k, n, size, dataflow)
    assert result.cycles == sy.predicted_cycles(m, k, n, size=size, dataflow=dataflow)
    assert result.utilisation.shape == (result.cycles,)
    assert np.all(result.utilisation >= 0) and np.all(result.utilisation <= 1)
    assert result.counts.macs == m * n * k
    assert result.mean_utilisation == pytest.approx(m * n * k / (result.cycles * size**2), rel=1e-12)
    assert result.counts.register_file_reads == result.counts.register_file_writes == 0
    assert result.counts.offchip_writes == m * n
    assert result.counts.pe_register_transfers >= 2 * m * n * k   # at least a and psum / a and b per MAC


@pytest.mark.parametrize("size", [1, 2, 5, 8])
def test_single_tile_closed_forms(size):
    m, k = 13, 6
    A, B = np.ones((m, size)), np.ones((size, size))
    assert sy.simulate(A, B, size=size).cycles == size + m + 2 * size - 2          # load + stream + drain
    A2, B2 = np.ones((size, k)), np.ones((k, size))
    assert sy.simulate(A2, B2, size=size, dataflow="output-stationary").cycles == k + 3 * size - 2


def test_full_tile_reaches_full_utilisation_in_steady_state():
    n, m = 4, 50
    result = sy.simulate(np.ones((m, n)), np.ones((n, n)), size=n)
    assert result.utilisation.max() == 1.0
    assert result.utilisation[:n].sum() == 0            # weight-load cycles do no MACs


def test_systolic_cuts_register_file_traffic_for_a_big_matmul():
    A = np.ones((256, 256))
    systolic = sy.simulate(A, A, size=128).counts
    simt = simt_matmul_counts(256, 256, 256, tile=64, thread_tile=4)
    assert simt.register_file_reads > systolic.register_file_reads == 0
    assert simt.per_mac()["register_file_reads"] == pytest.approx(3 + 1 / 256)
    assert simt.per_mac()["buffer_reads"] == pytest.approx(2 / 4)
    reuse = simt_matmul_counts(256, 256, 256, tile=64, thread_tile=4, operand_reuse=True)
    assert reuse.per_mac()["register_file_reads"] == pytest.approx(2 + 1 / 4 + 1 / 256)
    # systolic buffer traffic: A staged once per n-tile (2 of them), accumulators once per k-tile
    assert systolic.buffer_reads == 256 * 256 * 2 + 256 * 256 + 2 * 256 * 256


def test_simt_counts_known_small_case_and_ragged_edges():
    c = simt_matmul_counts(64, 64, 64, tile=64, thread_tile=4)
    macs = 64**3
    assert c.macs == macs and c.offchip_reads == 2 * 64 * 64 and c.offchip_writes == 64 * 64
    assert c.buffer_reads == 2 * 64 * 64 * 16 and c.buffer_writes == c.offchip_reads
    assert c.register_file_reads == 3 * macs + 64 * 64
    assert c.register_file_writes == macs + c.buffer_reads + 64 * 64
    staged = simt_matmul_counts(64, 64, 64, tile=64, thread_tile=4, staging_through_registers=True)
    assert staged.register_file_writes - c.register_file_writes == c.offchip_reads
    ragged = simt_matmul_counts(70, 10, 5, tile=64, thread_tile=4)
    assert ragged.offchip_reads == 70 * 5 * 1 + 5 * 10 * 2
    assert ragged.buffer_reads == 5 * 70 * math.ceil(10 / 4) + 5 * 10 * (16 + math.ceil(6 / 4))
    with pytest.raises(ValueError, match="thread_tile must divide tile"):
        simt_matmul_counts(8, 8, 8, tile=64, thread_tile=5)


def test_access_counts_conversions():
    c = AccessCounts(1, 2, 3, 4, 5, 6, macs=10, pe_register_transfers=7)
    assert c.as_dict()["macs"] == 10 and c.as_dict()["pe_register_transfers"] == 7
    assert c.to_bytes(2) == {"register_file_reads": 2, "register_file_writes": 4, "buffer_reads": 6,
                             "buffer_writes": 8, "offchip_reads": 10, "offchip_writes": 12,
                             "pe_register_transfers": 14, "tensor_memory_accesses": 0}
    assert c.per_mac()["offchip_reads"] == 0.5 and c.register_file_accesses == 3
    with pytest.raises(ValueError, match="bytes_per_element"):
        c.to_bytes(0)


@pytest.mark.parametrize("dataflow", DATAFLOWS)
def test_trace_matches_simulate(dataflow):
    A, B = np.arange(12).reshape(3, 4), np.arange(20).reshape(4, 5)
    tr = sy.trace(A, B, size=4, dataflow=dataflow)
    result = sy.simulate(A, B, size=4, dataflow=dataflow)
    np.testing.assert_array_equal(tr.C, A @ B)
    assert tr.cycles == result.cycles and tr.a.shape == (result.cycles, 4, 4)
    np.testing.assert_array_equal(tr.fire.sum(axis=(1, 2)) / 16, result.utilisation)
    assert np.all(~np.isnan(tr.a[tr.fire])) and np.all(~np.isnan(tr.b[tr.fire]))


def test_trace_weight_stationary_registers():
    A, B = np.arange(6).reshape(2, 3), np.arange(9).reshape(3, 3)
    tr = sy.trace(A, B, size=3)
    assert tr.phase[:3] == ("load weights",) * 3 and tr.phase[3] == "compute"
    np.testing.assert_array_equal(tr.b[2], B)               # after N load cycles PE (i, j) holds B[i, j]
    assert np.isnan(tr.a[:3]).all()
    # compute cycle 1: A[1, 0] entered row 0, A[0, 0] moved to column 1, A[0, 1] entered row 1
    assert tr.a[4, 0, 0] == 3 and tr.a[4, 0, 1] == 0 and tr.a[4, 1, 0] == 1
    assert tr.psum[4, 1, 0] == A[0, 0] * B[0, 0] + A[0, 1] * B[1, 0]
    assert tr.fire[4].sum() == 3


def test_import_does_not_load_matplotlib():
    code = "import sys, aihw.chips.systolic, aihw.chips.simt; assert 'matplotlib' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("size", [0, -3, 513, 2.5, "8", True])
def test_bad_size(size):
    with pytest.raises(ValueError, match=r"size must be .*\[1, 512\]"):
        sy.simulate(np.ones((2, 2)), np.ones((2, 2)), size=size)


def test_bad_operands_and_dataflow():
    ok = np.ones((3, 3))
    with pytest.raises(ValueError, match="A must be a 2-D matrix"):
        sy.simulate(np.ones(3), ok, size=2)
    with pytest.raises(ValueError, match="B must be a 2-D matrix"):
        sy.simulate(ok, np.ones((3, 3, 1)), size=2)
    with pytest.raises(ValueError, match=r"inner dimensions must match.*columns 3 != B rows 4"):
        sy.simulate(ok, np.ones((4, 2)), size=2)
    with pytest.raises(ValueError, match="at least one row"):
        sy.simulate(np.ones((0, 3)), ok, size=2)
    with pytest.raises(ValueError, match="must hold numbers"):
        sy.simulate(np.array([["a"]]), ok[:1], size=2)
    with pytest.raises(ValueError, match="did you mean 'weight-stationary'"):
        sy.simulate(ok, ok, size=2, dataflow="weight-stationery")
    with pytest.raises(ValueError, match=r"size must be in \[1, 8\], got 9"):
        sy.trace(ok, ok, size=9)


def test_plots_return_the_figure_of_the_given_axes():
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from aihw.plots import gpus_vs_tpus as plots

    A = np.arange(12).reshape(3, 4)
    result = sy.simulate(A, A.T, size=2)
    for draw in (lambda ax: plots.plot_utilisation(result, ax=ax),
                 lambda ax: plots.plot_access_counts(result.counts, simt_matmul_counts(3, 3, 4), ax=ax),
                 lambda ax: plots.plot_trace_step(sy.trace(A, A.T, size=2), 5, ax=ax)):
        fig = Figure()
        assert draw(fig.subplots()) is fig
    with pytest.raises(ValueError, match="cycle must be in"):
        plots.plot_trace_step(sy.trace(A, A.T, size=2), 10_000, ax=Figure().subplots())


@pytest.mark.parametrize("m, k, n, size", [(5, 9, 7, 4), (20, 13, 17, 4), (3, 3, 3, 8), (16, 16, 16, 4)])
def test_double_buffered_matches_numpy_and_closed_form(m, k, n, size):
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    db = sy.simulate(A, B, size=size, double_buffered=True)
    single = sy.simulate(A, B, size=size)
    np.testing.assert_allclose(db.C, A @ B)
    assert db.cycles == sy.predicted_cycles(m, k, n, size=size, double_buffered=True) <= single.cycles
    assert db.counts == single.counts  # the same data moves; only the timing overlaps


def test_utilisation_sweep_rises_with_size_and_double_buffering_helps():
    from aihw.chips.systolic import utilisation_sweep
    plain = utilisation_sweep([128, 512, 2048], size=128)
    db = utilisation_sweep([128, 512, 2048], size=128, double_buffered=True)
    assert [r["utilisation"] for r in plain] == sorted(r["utilisation"] for r in plain)
    assert all(d["utilisation"] >= p["utilisation"] for d, p in zip(db, plain, strict=True))
    with pytest.raises(ValueError, match="double_buffered"):
        sy.predicted_cycles(8, 8, 8, size=4, dataflow="output-stationary", double_buffered=True)
    with pytest.raises(ValueError, match="at least one"):
        utilisation_sweep([], size=8)
