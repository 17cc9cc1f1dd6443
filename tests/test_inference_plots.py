"""The inference measurements' plumbing and figures on a tiny model (no timing is asserted)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from aihw.inference import decode  # noqa: E402
from aihw.inference.model import GenConfig  # noqa: E402
from aihw.inference.paged import waste_for_trace  # noqa: E402
from aihw.inference.quantized import quantized_decode_points  # noqa: E402
from aihw.plots import inference as iplots  # noqa: E402
from aihw.serving.estimator import ServingConfig, batch_sweep  # noqa: E402


def test_measure_point_and_figures():
    m = decode.random_model(GenConfig(width=32, depth=1, heads=2, seq_len=32))
    points = [decode.measure_point(m, "tiny", bandwidth=1e10, peak_flops=1e10, batch=b, repeats=2)
              for b in (1, 4)]
    p = points[0]
    assert p.seconds > 0 and p.memory_s > 0 and p.compute_s > 0 and p.predicted_s == max(p.memory_s, p.compute_s)
    assert p.weight_bytes == decode.weights_read_per_step(m) < sum(x.numel() * 4 for x in m.parameters())
    assert points[1].compute_s == 4 * p.compute_s
    figs = [iplots.plot_decode_vs_bytes(points, bandwidth=1e10, llc_bytes=2**20),
            iplots.plot_batch_sweep(points),
            iplots.plot_roofline_points(bandwidth=1e10, peak=1e11, points=[("decode", 0.5, 1e9), ("prefill", 30, 5e10)]),
            iplots.plot_waste(waste_for_trace([(0, 10, 20), (3, 5, 40)], max_tokens=64, block_size=8,
                                              bytes_per_token=1.0)),
            iplots.plot_serving_sweep(batch_sweep(ServingConfig("llama-3-8b", context=512), (1, 8, 64)))]
    for fig in figs:
        fig.canvas.draw()
        plt.close(fig)
    assert decode.time_prefill(m, tokens=8, repeats=1).median > 0


def test_quantized_decode_points_count_bytes():
    m = decode.random_model(GenConfig(width=64, depth=1, heads=2, seq_len=32))
    points = quantized_decode_points(m, bandwidth=1e10, peak_flops=1e10, kernel="reference", repeats=1)
    by = {p.label.split(" ")[0]: p.weight_bytes for p in points}
    assert by["fp32"] > by["bf16"] > by["int8"] > by["int4"]
    assert by["fp32"] == 2 * by["bf16"]
    with torch.no_grad():
        assert all(p.seconds > 0 for p in points)
