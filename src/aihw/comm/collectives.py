"""The alpha-beta cost model of collectives: how long an all-reduce takes on a given link (stdlib + numpy).

A message of ``n`` bytes over one link costs ``alpha + n / B``: a start-up latency ``alpha`` (seconds) and a
per-byte cost ``1 / B`` (``B`` in bytes/s, per direction). A collective algorithm is a schedule of such
messages; counting the sequential steps (latency term) and the bytes each rank must push through its link
(bandwidth term) gives its time (Thakur, Rabenseifner and Gropp 2005; Patarasuk and Yuan 2009). For ``p``
ranks and a buffer of ``n`` bytes:

==================== ======================== =====================================
algorithm            latency term             bandwidth term
==================== ======================== =====================================
naive (to rank 0     ``2 (p-1) alpha``        ``2 (p-1) n / B`` (rank 0's link
and back)                                     carries every copy)
ring                 ``2 (p-1) alpha``        ``2 (p-1)/p n / B`` (optimal)
tree (binomial       ``2 ceil(log2 p) alpha`` ``2 ceil(log2 p) n / B``
reduce + broadcast)
recursive doubling   ``(log2 p (+2)) alpha``  ``(log2 p (+2)) n / B`` (+2 when p is
                                              not a power of two)
==================== ======================== =====================================

The ring's ``2 (p-1)/p`` is the lower bound for any all-reduce built from point-to-point messages: each rank
must send out (and receive) at least ``(p-1)/p`` of the buffer twice (Patarasuk and Yuan 2009). Reduction
arithmetic (the "gamma" term) is left out. Bus bandwidth follows the nccl-tests definition
(``doc/PERFORMANCE.md``): ``busbw = algbw x factor``, with ``algbw = n / t``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from aihw._validate import (
    FLOAT_MAX,
    coerce_numbers,
    require_choice,
    require_finite_result,
    require_non_negative,
    require_positive,
)
from aihw.catalogue.hardware import Chip, get_chip
from aihw.catalogue.networks import get_network

Algorithm = Literal["naive", "ring", "tree", "recursive-doubling"]
ALGORITHMS: tuple[str, ...] = get_args(Algorithm)
# nccl-tests doc/PERFORMANCE.md: busbw = algbw * factor(n)
BUS_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}
# Assumed per-message start-up latencies (seconds). Not datasheet figures: the order of magnitude of small-message
# times reported for NCCL within a node and over InfiniBand. For gradient-sized messages (GB) the bandwidth
# term is 1000x larger, so these barely matter; pass your own measured value where it does.
DEFAULT_CHIP_ALPHA_S = 5e-6
DEFAULT_NETWORK_ALPHA_S = 10e-6


@dataclass(frozen=True)
class LinkModel:
    """One link in the alpha-beta model: ``alpha_s`` seconds per message + bytes / ``bandwidth_bytes_per_s``."""

    alpha_s: float  # start-up latency of one message, seconds (>= 0)
    bandwidth_bytes_per_s: float  # per direction, bytes/s (> 0); beta = 1 / bandwidth seconds per byte
    name: str = ""

    def __post_init__(self) -> None:
        coerce_numbers(self, "alpha_s", "bandwidth_bytes_per_s")
        if isinstance(self.alpha_s, bool) or not isinstance(self.alpha_s, (int, float)) \
                or not -FLOAT_MAX <= self.alpha_s <= FLOAT_MAX or self.alpha_s < 0:
            raise ValueError(f"alpha_s must be a finite number >= 0 (seconds), got {self.alpha_s!r}")
        require_positive("bandwidth_bytes_per_s", self.bandwidth_bytes_per_s)

    @property
    def beta_s_per_byte(self) -> float:
        """Seconds per byte: 1 / bandwidth."""
        return 1.0 / self.bandwidth_bytes_per_s


def _world(world_size: object) -> int:
    return int(require_positive("world_size", world_size, integer=True))


def _bytes(n_bytes: object) -> float:
    return float(require_positive("n_bytes (message size)", n_bytes))


def all_reduce_terms(world_size: int, algorithm: str = "ring") -> tuple[float, float]:
    """(latency steps, bandwidth factor): all-reduce time = steps * alpha + factor * n_bytes / B."""
    p = _world(world_size)
    require_choice("algorithm", algorithm, ALGORITHMS)
    if p == 1:
        return 0.0, 0.0
    if algorithm == "naive":
        return 2.0 * (p - 1), 2.0 * (p - 1)
    if algorithm == "ring":
        return 2.0 * (p - 1), 2.0 * (p - 1) / p
    if algorithm == "tree":
        depth = math.ceil(math.log2(p))
        return 2.0 * depth, 2.0 * depth
    k = p.bit_length() - 1  # largest power of two <= p is 2**k
    steps = k + (0 if p == 2**k else 2)  # extra ranks fold in first and get the result back last
    return float(steps), float(steps)


def all_reduce_time(n_bytes: float, world_size: int, *, link: LinkModel, algorithm: str = "ring",
                    latency_steps: float | None = None) -> float:
    """Seconds to all-reduce ``n_bytes`` (each rank's buffer) over ``world_size`` ranks with ``algorithm``.

    ``latency_steps`` replaces the algorithm's count of message start-ups: the one-shot/two-shot all-reduces
    that serving engines use for small messages pay about 2 latencies whatever the ranks, with the ring's
    bandwidth term.
    """
    n = _bytes(n_bytes)
    steps, factor = all_reduce_terms(world_size, algorithm)
    if latency_steps is not None:
        steps = require_non_negative("latency_steps", latency_steps) if _world(world_size) > 1 else 0.0
    seconds = steps * link.alpha_s + factor * n / link.bandwidth_bytes_per_s
    require_finite_result(f"all_reduce_time(n_bytes={n_bytes!r}, world_size={world_size!r})", seconds)
    return seconds


def reduce_scatter_time(n_bytes: float, world_size: int, *, link: LinkModel) -> float:
    """Ring reduce-scatter of a buffer of ``n_bytes`` (each rank ends with n/p bytes): (p-1)(alpha + n/(pB))."""
    n, p = _bytes(n_bytes), _world(world_size)
    return (p - 1) * (link.alpha_s + n / p / link.bandwidth_bytes_per_s)


def all_gather_time(n_bytes: float, world_size: int, *, link: LinkModel) -> float:
    """Ring all-gather into a buffer of ``n_bytes`` (full gathered size): (p-1)(alpha + n/(pB))."""
    return reduce_scatter_time(n_bytes, world_size, link=link)


def all_to_all_time(n_bytes: float, world_size: int, *, per_node: int, intra: LinkModel,
                    inter: LinkModel) -> float:
    """Seconds of an all-to-all of ``n_bytes`` per rank over ``world_size`` ranks, ``per_node`` of them in each
    node: each rank sends 1/p of its buffer to every other; the shares for ranks in its node cross the chip link,
    the rest the network, both at once; one start-up per peer (the network's once the group spans nodes)."""
    n, p = _bytes(n_bytes), _world(world_size)
    g = int(require_positive("per_node", per_node, integer=True))
    if g > p:
        raise ValueError(f"per_node={g} must not exceed world_size={p}")
    local = (g - 1) / p * n / intra.bandwidth_bytes_per_s
    remote = (p - g) / p * n / inter.bandwidth_bytes_per_s
    return (p - 1) * (intra.alpha_s if g == p else inter.alpha_s) + local + remote


def send_recv_time(n_bytes: float, *, link: LinkModel) -> float:
    """One point-to-point message: alpha + n/B seconds."""
    return link.alpha_s + _bytes(n_bytes) / link.bandwidth_bytes_per_s


def algorithm_bandwidth(n_bytes: float, time_s: float) -> float:
    """nccl-tests algbw: bytes / seconds."""
    return _bytes(n_bytes) / float(require_positive("time_s", time_s))


def bus_bandwidth(alg_bandwidth: float, world_size: int, collective: str = "all_reduce") -> float:
    """nccl-tests busbw = algbw x factor: 2(n-1)/n for all_reduce, (n-1)/n for reduce_scatter/all_gather/
    all_to_all, 1 for broadcast/reduce/send_recv. Comparable with a link's peak, whatever the rank count."""
    require_choice("collective", collective, BUS_FACTORS)
    return float(require_positive("alg_bandwidth", alg_bandwidth)) * BUS_FACTORS[collective](_world(world_size))


FLAT_FRACTION = 0.01  # fit_alpha_beta refuses timings whose bandwidth term is below this share of the time


def fit_alpha_beta(sizes_bytes: Sequence[float], times_s: Sequence[float], world_size: int,
                   algorithm: str = "ring") -> tuple[LinkModel, float]:
    """Fit alpha (s) and B (bytes/s) of ``all_reduce_time`` to measured all-reduce times; return (link, R²).

    Weighted least squares on relative error (weights 1/t), so 1 KB messages count as much as 64 MB ones;
    alpha is clipped at 0 (then B is refitted alone). R² is the ordinary coefficient of determination of the
    fitted times against the measured ones.
    """
    sizes, times = _fit_inputs(sizes_bytes, times_s)
    steps, factor = all_reduce_terms(world_size, algorithm)
    if steps == 0:
        raise ValueError("world_size=1 moves no data: there is nothing to fit")
    moved = [factor * x for x in sizes]  # bytes each rank moves, per message
    alpha, beta = _weighted_fit(steps, moved, times)
    largest = sizes.index(max(sizes))
    if not beta > 0 or beta * moved[largest] < FLAT_FRACTION * times[largest]:
        raise ValueError("the measured times do not grow with message size (the bandwidth term explains less "
                         f"than {FLAT_FRACTION:.0%} of the largest message's time); cannot fit a bandwidth: "
                         "measure larger messages")
    r2 = _r_squared(times, [alpha * steps + beta * m for m in moved])
    return LinkModel(alpha, 1.0 / beta, name=f"fit ({algorithm}, {world_size} ranks)"), r2


def _fit_inputs(sizes_bytes: Sequence[float], times_s: Sequence[float]) -> tuple[list[float], list[float]]:
    """The measurements as floats, refused unless equally long, positive, finite and of two sizes or more."""
    try:
        sizes, times = [float(x) for x in sizes_bytes], [float(x) for x in times_s]
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"sizes_bytes and times_s must be sequences of numbers ({exc})") from exc
    if len(sizes) != len(times):
        raise ValueError(f"sizes_bytes and times_s must be equally long, got {len(sizes)} and {len(times)}")
    if len(set(sizes)) < 2:
        raise ValueError(f"need at least two different message sizes to fit alpha and beta, got {sizes}")
    if not all(math.isfinite(x) and x > 0 for x in (*sizes, *times)):
        raise ValueError("sizes_bytes and times_s must all be finite and > 0")
    return sizes, times


def _weighted_fit(steps: float, moved: list[float], times: list[float]) -> tuple[float, float]:
    """(alpha, beta) of t_i = alpha * steps + beta * moved_i, weighted by 1/t_i, alpha clipped at 0: the 2x2
    normal equations, with the bytes column scaled to order 1 so they stay well conditioned."""
    scale = max(moved)
    d1 = [m / scale for m in moved]
    w2 = [1.0 / t**2 for t in times]
    s00 = sum(w * steps * steps for w in w2)
    s01 = sum(w * steps * d for w, d in zip(w2, d1, strict=True))
    s11 = sum(w * d * d for w, d in zip(w2, d1, strict=True))
    r0 = sum(w * steps * t for w, t in zip(w2, times, strict=True))
    r1 = sum(w * d * t for w, d, t in zip(w2, d1, times, strict=True))
    det = s00 * s11 - s01 * s01
    alpha, beta_scaled = (r0 * s11 - r1 * s01) / det, (s00 * r1 - s01 * r0) / det
    if alpha < 0:
        alpha, beta_scaled = 0.0, r1 / s11
    return alpha, beta_scaled / scale  # seconds, seconds per byte moved


def _r_squared(measured: list[float], predicted: list[float]) -> float:
    mean = sum(measured) / len(measured)
    ss_tot = sum((t - mean) ** 2 for t in measured)
    residual = sum((t - q) ** 2 for t, q in zip(measured, predicted, strict=True))
    return 1.0 - residual / ss_tot if ss_tot > 0 else 1.0


# Below this R², a fitted (alpha, B) describes the measurements poorly: flag it wherever a fit is shown.
LOW_R2 = 0.9


def fit_flag(r2: float) -> str:
    """"" for a good fit; otherwise a short warning to print beside the fitted alpha and B.

    A low R² on a shared CPU usually means scheduler stalls (single calls taking a millisecond instead of
    microseconds) or too narrow a range of message sizes, not that the alpha-beta model is wrong: rerun on an
    idle machine, or with more sizes, before reading alpha and B.
    """
    return "" if r2 >= LOW_R2 else f"low R² ({r2:.2f} < {LOW_R2}): noisy timings, do not trust alpha and B"


def link_from_chip(chip_name: str | Chip, *, alpha_s: float = DEFAULT_CHIP_ALPHA_S) -> LinkModel:
    """A chip's scale-up link (NVLink, ICI, PCIe) from the hardware catalogue: per-direction, whole chip.

    For an NVSwitch node every GPU can send at this rate to the others. For a TPU torus it sums all ICI
    ports, an upper bound: one ring uses only some of them (a 2D/3D all-reduce runs rings on every axis).
    """
    chip = chip_name if isinstance(chip_name, Chip) else get_chip(chip_name)
    if chip.interconnect is None:
        raise ValueError(f"{chip.name} has no interconnect figure in the catalogue")
    bandwidth = chip.interconnect.bandwidth_bytes_per_s(direction="per-direction", scope="chip")
    return LinkModel(alpha_s, bandwidth, name=f"{chip.short_name} {chip.interconnect.name}")


def network_link(network: str, *, alpha_s: float = DEFAULT_NETWORK_ALPHA_S) -> LinkModel:
    """An inter-node port (InfiniBand NDR/HDR, 100/400 GbE) from ``data/networks.toml``, per direction."""
    net = get_network(network)
    return LinkModel(alpha_s, net.bandwidth_bytes_per_s, name=net.name)


def hierarchical_all_reduce_time(n_bytes: float, *, gpus_per_node: int, nodes: int, intra: LinkModel,
                                 inter: LinkModel) -> float:
    """Two-level all-reduce: ring reduce-scatter inside each node, ring all-reduce of each 1/g shard across
    nodes (one network port per GPU, all g rails at once), ring all-gather inside the node. Seconds."""
    g, m = _world(gpus_per_node), int(require_positive("nodes", nodes, integer=True))
    n = _bytes(n_bytes)
    if m == 1:
        return all_reduce_time(n, g, link=intra)
    if g == 1:
        return all_reduce_time(n, m, link=inter)
    return (reduce_scatter_time(n, g, link=intra) + all_reduce_time(n / g, m, link=inter)
            + all_gather_time(n, g, link=intra))


def flat_ring_time(n_bytes: float, *, gpus_per_node: int, nodes: int, intra: LinkModel,
                   inter: LinkModel) -> float:
    """One ring through all g x m GPUs: every step waits for the slowest link on the ring. Seconds."""
    g, m = _world(gpus_per_node), int(require_positive("nodes", nodes, integer=True))
    slowest = intra if m == 1 else min((intra, inter), key=lambda link: link.bandwidth_bytes_per_s)
    alpha = intra.alpha_s if m == 1 else max(intra.alpha_s, inter.alpha_s)
    return all_reduce_time(n_bytes, g * m, link=LinkModel(alpha, slowest.bandwidth_bytes_per_s))


@dataclass(frozen=True)
class ClusterEstimate:
    """Predicted gradient all-reduce time of one cluster layout."""

    label: str
    devices: int
    time_s: float
    link: str


def cluster_estimates(n_bytes: float, *, chip: str = "H100 SXM", network: str = "InfiniBand NDR",
                      gpus_per_node: int = 8, nodes: int = 2, tpu: str = "TPU v5p", tpu_chips: int = 16
                      ) -> list[ClusterEstimate]:
    """All-reduce of ``n_bytes`` on: one node (ring over the chip's link), ``nodes`` nodes (hierarchical and
    flat ring over ``network``), and a TPU slice of ``tpu_chips`` (ring over ICI, upper-bound bandwidth)."""

    if get_chip(chip).kind != "gpu":
        raise ValueError(f"chip {chip!r} is a {get_chip(chip).kind.upper()}, not a GPU: TPUs are not joined into "
                         f"nodes over {network}; give it as tpu= (--tpu) for the slice estimate")
    if get_chip(tpu).kind != "tpu":
        raise ValueError(f"tpu {tpu!r} is a {get_chip(tpu).kind.upper()}, not a TPU; give a TPU (e.g. 'TPU v5p') "
                         "or compare GPUs with chip= (--chip)")
    intra, inter, ici = link_from_chip(chip), network_link(network), link_from_chip(tpu)
    g, m = gpus_per_node, nodes
    return [
        ClusterEstimate(f"{g} x {chip}, one node", g, all_reduce_time(n_bytes, g, link=intra), intra.name),
        ClusterEstimate(f"{m} nodes x {g}, hierarchical", g * m, hierarchical_all_reduce_time(
            n_bytes, gpus_per_node=g, nodes=m, intra=intra, inter=inter), f"{intra.name} + {inter.name}"),
        ClusterEstimate(f"{m} nodes x {g}, flat ring", g * m, flat_ring_time(
            n_bytes, gpus_per_node=g, nodes=m, intra=intra, inter=inter), inter.name),
        ClusterEstimate(f"{tpu_chips} x {tpu} slice", tpu_chips, all_reduce_time(n_bytes, tpu_chips, link=ici),
                        ici.name),
    ]
