"""The GPU report reads the collective benchmark's rows by the keys the benchmark writes (run here on gloo)."""

from __future__ import annotations

import pytest

from aihw.measure.gpu_report import bus_summary
from aihw.parallel.collectives_bench import BenchConfig, measure

pytestmark = pytest.mark.distributed


def test_bus_summary_reads_real_benchmark_rows():
    rows = measure(BenchConfig(sizes_bytes=(4096, 65536), algorithms=("builtin",), budget_s=0.01), world_size=2,
                   timeout_s=120)
    summary = bus_summary(rows)
    fastest = min(rows, key=lambda r: r["time_s"])
    assert summary["seconds"] == fastest["time_s"] > 0
    assert summary["bus_bandwidth_bytes_per_s"] == fastest["busbw"] > 0
    assert summary["gpus"] == 2 and summary["bytes"] == fastest["size_bytes"] and summary["backend"] == "gloo"
