"""Published training runs, pinned in the planner: does it say they fit, and what throughput does it predict?

Each :class:`PublishedRun` holds a run's model, layout, batch, sequence and hardware as its authors give them,
and the per-GPU throughput they report, in the convention they report it:

* ``"executed"``: FLOPs actually executed per GPU per second, recomputation included (Narayanan et al. 2021
  count eq. 3, which includes the recomputed forward pass), compared with the planner's
  ``executed_tflops_per_device``;
* ``"model"``: model FLOPs (no recomputation; torchtitan's MFU numerator), compared with
  ``model_tflops_per_device``.

Sources (read 2026-12-01):

* Narayanan et al. 2021 (arXiv:2104.04473), Table 1 (weak scaling, GPT, V = 51,200, s = 2,048, A100 80GB on
  Selene: 8 GPUs and 8 HDR InfiniBand ports per node, fp16 mixed precision, activation recomputation) and
  Table 2 (GPT-3 175B, 96 layers, h = 12,288, 96 heads: PTD-P with t = 8, p = 12, micro-batch 1; ZeRO-3 without
  model parallelism). The paper's own PDF was not reachable from this machine; the rows were read from three
  independent transcriptions of the tables in public repositories (found with the course's code search;
  they agree on every cell) and from the Megatron-LM README, which shows the same table.
* torchtitan ``docs/performance.md`` (https://github.com/pytorch/torchtitan/blob/main/docs/performance.md):
  Llama 3 8B and 70B and Llama 2 13B and 70B with FSDP2 on 64 A100 80GB, local batch 1 or 2, with the WPS
  (tokens per second per GPU) and MFU they report. Their network is not stated: InfiniBand HDR (one 200 Gb/s
  port per GPU) is ASSUMED.

Assumptions the sources do not state are in each run's ``notes``. The efficiency constants are not tuned per
row: :func:`fit_overhead` fits the single constant ``planner.STEP_OVERHEAD`` to Table 1 and nothing else. What
differs between rows is what the run's software did, described by named, documented behaviours rather than
numbers: :data:`IMPLEMENTATIONS` (how the stack runs ZeRO-3: :data:`DEEPSPEED_2021` for Table 2's ZeRO-3 rows),
``elementwise`` (torchtitan without ``torch.compile``: eager kernels) and ``recompute_every`` (torchtitan's
every-second-layer checkpointing). torchtitan rows are compared in tokens per second per GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from aihw.planning.config import Attention, Cluster, Elementwise, Layout, PlanConfig
from aihw.planning.efficiency import Efficiency
from aihw.planning.planner import pinned
from aihw.transformer.flops import model_flops_per_token
from aihw.transformer.shapes import ModelShape, get_preset

DEFAULT_EFFICIENCY = Efficiency()

# How each software stack runs ZeRO-3 (the planner's defaults describe FSDP/NCCL today). DeepSpeed as Narayanan et
# al. ran it in 2021, three behaviours, none of them a fitted number:
# * flat_collectives: every byte of the parameter gathers and gradient reduce-scatters crosses the GPU's own
#   network port. Inferred from the rows' scaling SHAPE (an inference, not read in DeepSpeed's code): with the
#   batch fixed, the per-GPU step time is the same on 768 and 1,536 GPUs (2 x 2.94e15 / 88e12 = 2.94e15 / 44e12 =
#   67 s), so the communication per GPU does not shrink with more GPUs and dominates. Hierarchical NCCL rings would
#   move one eighth of it per port (each node receiving the parameters once over its 8 ports) and leave the step
#   compute-bound near 150 TFLOP/s; the paper itself says ZeRO-3 loses "due to [more] cross-node communication".
# * zero3_regather_recompute: DeepSpeed fetches a module's parameters in a hook before every forward it runs and
#   releases them after, so the forward recomputed by activation checkpointing gathers them a third time
#   (modelled from how the hooks work; FSDP skips the gather when the forward runs inside backward).
# * zero3_overlap_reduce=False: DeepSpeed's configuration reference documents ``overlap_comm`` ("Attempts to
#   overlap the reduction of the gradients with backward computation") with default false
#   (https://www.deepspeed.ai/docs/config-json/, read 2026-12-01; later releases turn it on for stage 3); the
#   paper does not publish its DeepSpeed configuration, so the default is assumed. Parameter prefetching (which
#   overlaps the gathers with compute) is on by default (``stage3_prefetch_bucket_size``).
DEEPSPEED_2021 = Efficiency(flat_collectives=True, zero3_regather_recompute=True, zero3_overlap_reduce=False)
IMPLEMENTATIONS = {"megatron": DEFAULT_EFFICIENCY, "fsdp2": DEFAULT_EFFICIENCY, "deepspeed-2021": DEEPSPEED_2021}
NARAYANAN = "https://arxiv.org/abs/2104.04473"
TORCHTITAN = "https://github.com/pytorch/torchtitan/blob/main/docs/performance.md"


def megatron_gpt(name: str, hidden: int, layers: int, heads: int) -> ModelShape:
    """The GPT models of Narayanan et al. 2021: vocabulary 51,200, sequence 2,048, 4h MLP, learned positions."""
    return ModelShape(name, hidden, layers, heads, vocab=51200, max_seq=2048, source=NARAYANAN)


@dataclass(frozen=True)
class PublishedRun:
    name: str
    model: ModelShape
    gpus: int
    tp: int
    pp: int
    global_batch: int
    published_tflops: float  # per GPU
    convention: str  # "executed" or "model"
    source: str
    zero: int = 0
    micro_batch: int = 1
    recompute: str = "full"
    attention: Attention = "eager"
    chip: str = "NVIDIA A100 80GB SXM"
    network: str = "InfiniBand HDR"
    precision: str = "fp16"
    seq: int = 2048
    table: str = ""
    notes: str = ""
    cp: int = 1
    virtual_stages: int = 1
    elementwise: Elementwise = "fused"  # "eager": PyTorch element-wise ops one kernel each (torchtitan without compile)
    recompute_every: int = 1  # k > 1: every k-th layer fully recomputed, the others not (torchtitan's
    #   "selective layer" activation checkpointing, selective_ac_option = '2')
    implementation: str = "megatron"  # a key of IMPLEMENTATIONS: how the stack runs ZeRO-3 and its collectives
    published_wps: float | None = None  # tokens per second per GPU, when the source gives them (torchtitan)

    @property
    def efficiency(self) -> Efficiency:
        return IMPLEMENTATIONS[self.implementation]

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.pp * self.cp)

    def config(self, efficiency: Efficiency | None = None) -> PlanConfig:
        cluster = Cluster(chip=self.chip, chips_per_node=8, nodes=self.gpus // 8, network=self.network)
        return PlanConfig(model=self.model, cluster=cluster, global_batch=self.global_batch, seq=self.seq,
                          micro_batch=self.micro_batch, precision=self.precision, attention=self.attention,
                          elementwise=self.elementwise,
                          sequence_parallel=self.tp > 1 and self.chip != "NVIDIA A100 80GB SXM",
                          efficiency=self.efficiency if efficiency is None else efficiency)

    def predict(self, efficiency: Efficiency | None = None) -> Layout:
        """The pinned layout, with the run's own implementation's efficiency unless ``efficiency`` is given.

        With ``recompute_every = k > 1`` the planner (which applies one policy to every layer) is run with no
        recomputation and with full recomputation, and each step term, the executed FLOPs and the memory are
        mixed in the share 1/k of fully recomputed layers: exact for the per-layer compute and activation terms,
        which add over layers.
        """
        cfg = self.config(efficiency)

        def one(recompute: str) -> Layout:
            return pinned(cfg, dp=self.dp, tp=self.tp, pp=self.pp, cp=self.cp, zero=self.zero, recompute=recompute,
                          micro_batch=self.micro_batch, virtual_stages=self.virtual_stages)

        if self.recompute_every == 1:
            return one(self.recompute)
        share = 1 / self.recompute_every
        lean, full = one("none"), one("full")

        def mix(a: float, b: float) -> float:
            return (1 - share) * a + share * b

        memory = mix(lean.memory_bytes, full.memory_bytes)
        capacity = cfg.memory_fraction * _capacity(cfg)
        return replace(full, recompute=f"full every {self.recompute_every} layers",
                       breakdown={k: mix(lean.breakdown[k], full.breakdown[k]) for k in full.breakdown},
                       executed_flops_per_step=mix(lean.executed_flops_per_step, full.executed_flops_per_step),
                       memory_bytes=memory, fits=memory <= capacity,
                       band_s=(mix(lean.band_s[0], full.band_s[0]), mix(lean.band_s[1], full.band_s[1])))


def _capacity(cfg: PlanConfig) -> float:
    return cfg.cluster.chip_spec.memory_bytes


_T1 = [  # params (B), heads, hidden, layers, t, p, GPUs, batch, TFLOP/s per GPU (Narayanan et al. 2021, Table 1)
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 137), (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 142), (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138), (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148), (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163), (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163),
]
_T1_NOTES = ("Table 1 gives no micro-batch size or schedule: micro-batch 1 and non-interleaved 1F1B assumed; "
             "eager attention (2021 Megatron-LM: fused softmax kernel, s x s scores kept); full recomputation.")

GPT3 = megatron_gpt("gpt3-175b", 12288, 96, 96)

TABLE1 = tuple(PublishedRun(f"GPT {p:g}B", megatron_gpt(f"gpt-{p:g}b", h, layers, a), n, t, pp, batch, tf,
                            "executed", NARAYANAN, table="Narayanan 2021 Table 1", notes=_T1_NOTES)
               for p, a, h, layers, t, pp, n, batch, tf in _T1)

TABLE2 = tuple(
    [PublishedRun(f"GPT-3 175B PTD-P, {n} GPUs", GPT3, n, 8, 12, 1536, tf, "executed", NARAYANAN,
                  table="Narayanan 2021 Table 2", notes="PTD-P: t=8, p=12 (model-parallel size 96), micro-batch 1")
     for n, tf in ((384, 153), (768, 149), (1536, 141))]
    + [PublishedRun(f"GPT-3 175B ZeRO-3, {n} GPUs", GPT3, n, 1, 1, 1536, tf, "executed", NARAYANAN, zero=3,
                    micro_batch=b, table="Narayanan 2021 Table 2", implementation="deepspeed-2021",
                    notes="ZeRO-3 (DeepSpeed 2021) without model parallelism, micro-batch as published; one "
                          "micro-batch per GPU per step (1536 = GPUs x micro-batch)")
       for n, b, tf in ((384, 4, 144), (768, 2, 88), (1536, 1, 44))])

_TT_NOTES = ("FSDP2 = ZeRO-3 over all 64 GPUs; compared in tokens per second per GPU (WPS), which needs no FLOP "
             "convention; network not stated in the source: InfiniBand HDR per GPU assumed.")


def _titan(name: str, preset: str, batch: int, recompute: str, wps: float, seq: int, label: str, every: int = 1
           ) -> PublishedRun:
    """A torchtitan performance.md row: published WPS, shown in TFLOP/s as WPS x the planner's model FLOPs/token."""
    model = get_preset(preset)
    return PublishedRun(f"torchtitan {name}, {label}", model, 64, 1, 1, 64 * batch,
                        wps * model_flops_per_token(model, seq) / 1e12, "model", TORCHTITAN, zero=3,
                        micro_batch=batch, recompute=recompute, attention="fused", precision="bf16", seq=seq,
                        table="torchtitan performance.md", notes=_TT_NOTES, implementation="fsdp2",
                        published_wps=wps, recompute_every=every, elementwise="eager")


# (published WPS and MFU: 2904 and 56.8%, 331 and 51.7%, 2162 and 61.1%, 353 and 50.5%; torchtitan's MFU counts
# 6 x all parameters + 12 l h s per token, which is not the planner's count, hence the comparison in WPS)
TORCHTITAN_RUNS = (
    _titan("Llama 3 8B", "llama-3-8b", 1, "full", 2904, 8192, "selective layer AC", every=2),
    _titan("Llama 3 70B", "llama-3-70b", 1, "full", 331, 8192, "full AC"),
    _titan("Llama 2 13B", "llama-2-13b", 2, "none", 2162, 4096, "no AC"),
    _titan("Llama 2 70B", "llama-2-70b", 2, "full", 353, 4096, "full AC"),
)

RUNS = TABLE1 + TABLE2 + TORCHTITAN_RUNS

# Not in the list: Llama 3 405B (Dubey et al. 2024, Table 4; arXiv:2407.21783), read from the paper's text
# as stored in a public repository. 126 layers on 16 stages (uneven), H100 80GB, RoCE 400 Gb/s per GPU. The
# paper's text prints DP = 4 for the 131K-token row, but 8 x 16 x 16 x 4 = 8,192 GPUs, not the row's 16,384, and
# 16M tokens per batch at 131,072 tokens needs 128 sequences = DP 8 x 16: DP = 8 is used. The paper does not say
# which FLOPs its TFLOP/s count nor its recomputation policy: full recomputation (the only one this estimator
# fits in 80 GB) and interleaving v = 2 are assumed; compare both conventions.
LLAMA3_405B = ModelShape("llama-3-405b", 16384, 126, 128, vocab=128256, max_seq=8192, kv_heads=8, ffn=53248,
                         gated_mlp=True, biases=False, norm="rmsnorm", learned_positions=False,
                         tied_embeddings=False, source="https://huggingface.co/meta-llama/Llama-3.1-405B",
                         published_params=405e9)
LLAMA3 = "https://arxiv.org/abs/2407.21783"
LLAMA3_RUNS = tuple(
    PublishedRun(f"Llama 3 405B, {n} GPUs, seq {seq}", LLAMA3_405B, n, 8, 16, batch, tf, "model", LLAMA3,
                 zero=1, recompute="full", attention="fused", chip="NVIDIA H100 SXM", network="400 Gigabit Ethernet",
                 precision="bf16", seq=seq, cp=cp, virtual_stages=2, table="Llama 3 paper Table 4",
                 notes="recomputation, interleaving and FLOP convention not stated; see LLAMA3_RUNS")
    for n, cp, seq, batch, tf in ((8192, 1, 8192, 2048, 430), (16384, 1, 8192, 2048, 400),
                                  (16384, 16, 131072, 128, 380)))


# DeepSpeed ZeRO-3 as run in 2021: no overlap, every byte of the parameter gathers through the network port.
FLAT_NO_OVERLAP = Efficiency(overlap=False, flat_collectives=True)


def compare(run: PublishedRun, efficiency: Efficiency | None = None) -> dict:
    """One table row: the pinned layout's fit and predicted throughput beside the published figure.

    ``efficiency``: None uses the run's own implementation (:data:`IMPLEMENTATIONS`).
    """
    x = run.predict(run.efficiency if efficiency is None else efficiency)
    predicted = x.executed_tflops_per_device if run.convention == "executed" else x.model_tflops_per_device
    lo_s, hi_s = x.band_s
    scale = x.step_s
    return {"run": run.name, "table": run.table, "layout": f"DP{run.dp} TP{run.tp} PP{run.pp} ZeRO-{run.zero}",
            "gpus": run.gpus, "batch": run.global_batch, "micro_batch": run.micro_batch, "seq": run.seq,
            "fits": x.fits, "memory_gb": x.memory_bytes / 1e9, "published_tflops": run.published_tflops,
            "predicted_tflops": predicted, "ratio": predicted / run.published_tflops,
            "band_tflops": (predicted * scale / hi_s, predicted * scale / lo_s), "convention": run.convention,
            "mfu": x.mfu, "breakdown": x.breakdown, "notes": run.notes}


def table(runs: tuple[PublishedRun, ...] = RUNS, efficiency: Efficiency | None = None) -> list[dict]:
    return [compare(r, efficiency) for r in runs]


def fit_overhead(runs: tuple[PublishedRun, ...] = TABLE1) -> float:
    """The step-overhead share that makes the geometric-mean ratio predicted/published 1 over ``runs``.

    The calibration behind ``planner.STEP_OVERHEAD``: run once, the result rounded and frozen in the code.
    """
    base = [compare(r, replace(Efficiency(), step_overhead=0.0))["ratio"] for r in runs]
    mean_log = sum(math.log(r) for r in base) / len(base)
    return max(0.0, 1 - math.exp(-mean_log))  # predicted scales as (1 - overhead)
