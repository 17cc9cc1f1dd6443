"""What each kind of parallelism sends in one optimizer step, and how long it takes on the cluster.

The times come from the collective model (:mod:`aihw.comm.collectives`, alpha-beta) on the links a group of
ranks actually uses: ranks are ordered TP fastest, then CP, then DP (EP carved from DP x CP), then PP, so a
group of ``ranks`` ranks ``stride`` apart spans ``ranks / per_node`` nodes (:func:`link_for`); a group that spans
nodes runs hierarchically (inside each node on the chip link, across nodes on the network port, every port at
once), at an achieved share of line rate (:data:`aihw.planning.efficiency.BUS_FRACTION`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from aihw.comm import collectives as cc
from aihw.formats.precision import activation_bytes_per_value
from aihw.layout.dims import ParallelDims
from aihw.memory.estimator import PRECISION_BYTES
from aihw.planning.config import PlanConfig
from aihw.planning.efficiency import NVLS_SPEEDUP


def link_for(cfg: PlanConfig, stride: int, ranks: int) -> tuple[int, int]:
    """(members per node, nodes spanned) of a group of ``ranks`` ranks ``stride`` apart."""
    per_node = max(1, min(ranks, cfg.cluster.chips_per_node // stride)) if stride < cfg.cluster.chips_per_node else 1
    return per_node, max(1, ranks // per_node)


@functools.lru_cache(maxsize=16384)  # a search asks for the same few hundred collectives thousands of times
def collective_seconds(cfg: PlanConfig, kind: str, n_bytes: float, ranks: int, stride: int, bus: float = 1.0) -> float:
    """Seconds of one collective of ``n_bytes`` (per rank's full buffer) over ``ranks`` ranks ``stride`` apart.

    Hierarchical when the group spans nodes: the intra-node part on the chip link, the rest on the network
    (one port per chip, all rails at once). Bandwidths at BUS_FRACTION of line rate (scaled by ``bus``).
    """
    if ranks <= 1 or n_bytes <= 0:
        return 0.0
    cl, eff = cfg.cluster, cfg.efficiency
    intra, inter = cl.intra_link(), cl.inter_link()
    intra = cc.LinkModel(intra.alpha_s, intra.bandwidth_bytes_per_s * min(1.0, eff.intra_bus * bus), intra.name)
    inter = cc.LinkModel(inter.alpha_s, inter.bandwidth_bytes_per_s * min(1.0, eff.inter_bus * bus), inter.name)
    g, k = link_for(cfg, stride, ranks)
    if kind == "send_recv":
        return cc.send_recv_time(n_bytes, link=intra if g > 1 else inter)
    if kind == "all_to_all":
        return cc.all_to_all_time(n_bytes, ranks, per_node=g, intra=intra, inter=inter)
    if eff.flat_collectives and k > 1:  # one ring over every rank, at the network's speed
        half = cc.reduce_scatter_time(n_bytes, ranks, link=inter)
        return 2 * half if kind == "all_reduce" else half
    # hierarchical: reduce-scatter inside each node, then across nodes on the 1/g shard each rank holds
    half = cc.reduce_scatter_time(n_bytes, g, link=intra) if g > 1 else 0.0
    if k > 1:
        half += cc.reduce_scatter_time(n_bytes / g, k, link=inter)
    if kind == "all_reduce":  # reduce-scatter then all-gather (the same time)
        return 2 * half / (NVLS_SPEEDUP if cl.nvls and k == 1 else 1.0)
    return half  # all_gather / reduce_scatter


def zero3_gathers_per_micro_batch(recompute: str, *, regather: bool) -> int:
    """Parameter all-gathers ZeRO-3 runs per micro-batch: one per forward pass executed, one for backward.

    Forward and backward each need the full layer weights (2). With full recomputation the recomputed forward
    needs them once more: an implementation that releases them after every forward and gathers on every
    forward (``regather``, DeepSpeed's per-module hooks) pays a third gather; FSDP, which keeps a block's
    parameters gathered from its recomputation through its backward, does not.
    """
    return 3 if regather and recompute == "full" else 2



@dataclass(frozen=True)
class Traffic:
    """One layout's communication in one step: ``m`` micro-batches of ``micro_batch`` sequences, ``layers`` on
    the busiest device, bandwidths scaled by ``bus`` (the uncertainty band)."""

    cfg: PlanConfig
    dims: ParallelDims
    recompute: str
    micro_batch: int
    m: int
    layers: int
    bus: float = 1.0

    def _seconds(self, kind: str, n_bytes: float, ranks: int, stride: int) -> float:
        return collective_seconds(self.cfg, kind, n_bytes, ranks, stride, self.bus)

    @property
    def _activations(self) -> float:
        """Bytes of one micro-batch's activations entering a layer on one device (b x s / cp x hidden)."""
        cfg = self.cfg
        return self.micro_batch * cfg.tokens / self.dims.cp * cfg.shape.hidden * activation_bytes_per_value(
            cfg.precision)

    def tp_seconds(self) -> float:
        """2 collectives per layer forward, 2 backward (+2 recomputed): all-reduces, or all-gather +
        reduce-scatter pairs with sequence parallelism (the same bytes); not overlapped."""
        per_layer = 6 if self.recompute == "full" else 4
        return self.m * self.layers * per_layer * self._seconds("all_reduce", self._activations, self.dims.tp, 1)

    def cp_seconds(self, *, hidden_behind: float) -> float:
        """Ring attention: (cp - 1) key/value block passes forward, twice that backward (x 1.5 with
        recomputation), hidden behind ``hidden_behind`` seconds of attention compute per layer."""
        cfg, d = self.cfg, self.dims
        if d.cp == 1:
            return 0.0
        block = 2 * self.micro_batch * (cfg.tokens / d.cp) * cfg.shape.kv_dim / d.tp * activation_bytes_per_value(
            cfg.precision)
        one = self._seconds("send_recv", block, d.cp, d.tp)
        passes = 3 * (d.cp - 1) * one * (1.5 if self.recompute != "none" else 1.0)
        return self.m * self.layers * max(0.0, passes - hidden_behind)

    def ep_seconds(self) -> float:
        """Expert parallelism: dispatch + combine all-to-all forward and backward (+ forward again if
        recomputed) of the routed tokens."""
        cfg, d, mdl = self.cfg, self.dims, self.cfg.shape
        if not mdl.is_moe or d.ep == 1:
            return 0.0
        routed = self._activations * mdl.top_k * mdl.capacity_factor / (d.tp if cfg.sequence_parallel else 1)
        return self.m * self.layers * (6 if self.recompute == "full" else 4) * self._seconds(
            "all_to_all", routed, d.ep, d.tp)

    def pp_seconds(self) -> float:
        """An activation forward and a gradient back per micro-batch and chunk boundary."""
        cfg, d = self.cfg, self.dims
        if d.pp == 1:
            return 0.0
        act = self._activations / (d.tp if cfg.sequence_parallel else 1)
        return 2 * d.virtual_stages * self.m * self._seconds("send_recv", act, 2, d.tp * d.cp * d.dp)

    def dp_seconds(self, *, params: float, grad_bytes: float, backward_window: float, compute: float) -> float:
        """Data parallelism: the gradients of the device's ``params`` parameters, all-reduced behind the last
        micro-batch's backward (``backward_window`` seconds); ZeRO-3 gathers the parameters in every
        micro-batch (:func:`zero3_gathers_per_micro_batch`) and reduce-scatters the gradients, behind
        ``compute`` seconds, the reduce-scatter exposed unless ``Efficiency.zero3_overlap_reduce``."""
        cfg, d, eff = self.cfg, self.dims, self.cfg.efficiency
        ranks, stride = d.dp, d.tp * d.cp
        reduced = params * min(grad_bytes, 4)  # the model gradient (fp16 runs: fp16; bf16: the fp32 main one)
        exposed = max(0.0, self._seconds("all_reduce", reduced, ranks, stride) - backward_window)
        if d.zero != 3 or d.dp == 1:
            return exposed
        gather = self._seconds("all_gather", params * PRECISION_BYTES[cfg.precision], ranks, stride)
        scatter = self._seconds("reduce_scatter", reduced, ranks, stride)
        rounds = 1 if cfg.zero3_keep_gathered else self.m
        gathers = zero3_gathers_per_micro_batch(self.recompute, regather=eff.zero3_regather_recompute)
        hidden = rounds * gathers * gather + (rounds * scatter if eff.zero3_overlap_reduce else 0.0)
        return max(0.0, hidden - compute) + (0.0 if eff.zero3_overlap_reduce else rounds * scatter)
