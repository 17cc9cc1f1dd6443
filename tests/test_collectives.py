"""Teaching all-reduces over send/recv equal dist.all_reduce on 2, 3 and 4 gloo ranks; the benchmark's numbers."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from aihw.parallel import collectives, collectives_bench
from aihw.parallel.collectives import chunk_bounds, compare_with_builtin
from aihw.parallel.launch import LaunchConfig, WorkerError, launch

pytestmark = pytest.mark.distributed
ALGORITHMS = ("naive", "ring", "tree", "recursive-doubling")


def test_chunk_bounds_cover_uneven_sizes():
    assert chunk_bounds(10, 3) == [(0, 4), (4, 7), (7, 10)]
    assert chunk_bounds(2, 3) == [(0, 1), (1, 2), (2, 2)]  # more ranks than elements: an empty chunk
    for numel in range(0, 30):
        for p in range(1, 6):
            bounds = chunk_bounds(numel, p)
            sizes = [e - s for s, e in bounds]
            assert bounds[0][0] == 0 and bounds[-1][1] == numel and max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_every_algorithm_equals_builtin_all_reduce(world_size):
    # uneven and tiny sizes (empty chunks); the largest makes the ring send each chunk in several pieces
    numels = (1, 2, 3, 5, 64, 1001, 786_439) if world_size < 4 else (1, 3, 6, 1001, 786_439)
    assert 786_439 * 4 // world_size > 3 * collectives.MIN_PIECE_BYTES
    per_rank = launch(compare_with_builtin, numels, config=LaunchConfig(world_size=world_size, timeout_s=120))
    rows = [row for rank_rows in per_rank for row in rank_rows]
    assert {r["algorithm"] for r in rows} == set(ALGORITHMS)
    assert len(rows) == world_size * len(numels) * 2 * len(ALGORITHMS)
    for r in rows:
        assert r["same_on_all_ranks"], r  # every rank ends with the same values
        if r["dtype"] == "int64":
            assert r["exact"], r  # integer sums do not depend on the order of addition
        else:
            assert r["max_abs_diff"] <= 1e-5 * max(1.0, r["scale"]), r  # float32: order of addition only
    assert not multiprocessing.active_children()


def test_unknown_algorithm_is_refused_locally_and_in_a_worker():
    with pytest.raises(ValueError, match=r"unknown algorithm 'rign'.*did you mean 'ring'"):
        collectives.all_reduce(None, "rign")
    start = time.monotonic()
    with pytest.raises(WorkerError, match=r"(?s)rank \d failed:.*unknown algorithm 'bogus'"):
        launch(compare_with_builtin, (4,), ("ring", "bogus"), config=LaunchConfig(world_size=2, timeout_s=60))
    assert time.monotonic() - start < 60
    assert not multiprocessing.active_children()


def test_benchmark_reports_time_algbw_busbw_and_fits():
    sizes = (4096, 262144, 4194304)
    config = collectives_bench.BenchConfig(sizes_bytes=sizes, budget_s=0.03, max_iters=20)
    rows = collectives_bench.measure(config, world_size=2, timeout_s=120)
    assert len(rows) == len(sizes) * len(collectives.ALGORITHM_NAMES)
    for r in rows:
        assert r["time_s"] > 0 and r["iters"] >= 2 and r["world_size"] == 2
        assert r["algbw"] == pytest.approx(r["size_bytes"] / r["time_s"])
        assert r["busbw"] == pytest.approx(r["algbw"] * 2 * (2 - 1) / 2)
    for algorithm in ("ring", "builtin"):
        link, r2 = collectives_bench.fit_rows(rows, algorithm)
        assert link.alpha_s >= 0 and link.bandwidth_bytes_per_s > 0 and r2 <= 1
    assert collectives_bench.ratio_to_builtin(rows, 4194304) > 0
    assert "busbw GB/s" in collectives_bench.format_rows(rows)


@pytest.mark.parametrize(("kwargs", "pattern"), [
    ({"sizes_bytes": (0,)}, r"message size \(bytes\) must be a positive integer"),
    ({"sizes_bytes": (1023,)}, r"multiple of 4 bytes"),
    ({"algorithms": ("rings",)}, r"unknown algorithm 'rings'"),
    ({"min_iters": 5, "max_iters": 2}, r"max_iters=2 must be >= min_iters=5"),
])
def test_bad_benchmark_config(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        collectives_bench.BenchConfig(**kwargs)


@pytest.mark.parametrize("world_size", [0, 17])
def test_bad_world_size_for_the_measurement(world_size):
    with pytest.raises(ValueError, match=rf"world_size must be an integer in \[1, 16\].*got {world_size}"):
        collectives_bench.measure(collectives_bench.BenchConfig(sizes_bytes=(1024,)), world_size=world_size)
    assert not multiprocessing.active_children()
