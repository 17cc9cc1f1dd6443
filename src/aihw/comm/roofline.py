"""Communication rooflines: when does each kind of parallelism stay compute-bound? (standard library)

Each parallelism moves bytes for every FLOP it computes. With a chip of peak ``F`` FLOP/s and a link of ``W``
bytes/s per direction, communication can hide behind compute (or at least not dominate it) when

    compute time / communication time = (FLOPs / F) / (bytes / W) >= 1,

and every condition below reduces to "a size of the problem >= F / W x a constant". ``F / W`` (FLOPs per byte
of link) is the link's *critical intensity*, exactly as ``F / HBM bandwidth`` is the chip's in the roofline
chapter. Sizes are per device; 16-bit values (2 bytes); a multiply-add is 2 FLOPs; ring collectives move
``(p - 1) / p`` of the buffer per rank per phase.

* **Data parallelism / FSDP (ZeRO-3)**: per step a device computes ``6 N T`` FLOPs for ``T`` tokens and moves
  ``3 x 2N`` bytes (all-gather in forward and backward, reduce-scatter of gradients; a plain all-reduce moves
  ``2 x 2N`` against the backward's ``4 N T``). Both give **T >= F / W tokens per device per step**.
* **Tensor parallelism** (Megatron, per layer and token): ``2 P_l / t`` FLOPs (``P_l`` weights of a layer in
  matmuls; ``12 h^2`` for a 4h GELU MLP) against 2 all-reduces of ``2h`` bytes in the forward pass, ``8 h (t-1)/t``
  bytes: **P_l >= 4 h (t - 1) F / W**, i.e. ``h >= (t - 1) F / (3 W)`` for the GPT MLP: hidden size against
  FLOP/s per NVLink byte.
* **Expert parallelism** (per MoE layer and token): ``2 k P_e`` FLOPs (``P_e`` weights of one expert) against
  dispatch + combine all-to-alls of ``2 k h`` bytes each, ``(e-1)/e`` of it leaving the device:
  **P_e / h >= 2 (e - 1)/e x F / W**, i.e. for a gated expert (``P_e = 3 h f_e``)
  ``f_e >= (2/3) (e-1)/e x F / W``.
* **Context parallelism** (ring attention, per step of the ring): a block of ``s/c`` queries against ``s/c``
  keys costs ``4 (s/c)^2 h`` FLOPs (two matmuls, non-causal) while ``2 (s/c) kv_dim x 2`` bytes travel:
  **s / c >= (kv_dim / h) x F / W** tokens per rank.

:func:`conditions` evaluates them for a model on a chip and link; :func:`aihw.planning.planner.tp_roofline_check`
compares the tensor-parallel one with the planner's own terms.
"""

from __future__ import annotations

from dataclasses import dataclass

from aihw._validate import require_positive
from aihw.catalogue.hardware import get_chip
from aihw.catalogue.networks import get_network
from aihw.transformer.shapes import ModelShape, resolve_model


def chip_link(chip: str, link: str) -> tuple[float, float, str]:
    """(peak bf16 FLOP/s, per-direction bytes/s, link name): ``link`` is "chip" (NVLink/ICI) or a network."""
    c = get_chip(chip)
    peak = c.peak_flops("bf16")
    if link == "chip":
        if c.interconnect is None:
            raise ValueError(f"{c.name} has no chip-to-chip interconnect in the catalogue")
        return peak, c.interconnect.bandwidth_bytes_per_s(direction="per-direction", scope="chip"), c.interconnect.name
    net = get_network(link)
    return peak, net.bandwidth_bytes_per_s, net.name


@dataclass(frozen=True)
class Condition:
    """One compute-bound condition: the problem's size, the threshold, and their ratio (>= 1: compute-bound)."""

    parallelism: str
    quantity: str
    value: float
    threshold: float

    @property
    def ratio(self) -> float:
        return self.value / self.threshold

    @property
    def bound(self) -> str:
        return "compute" if self.ratio >= 1 else "communication"


def critical_intensity(chip: str, link: str) -> float:
    """F / W: FLOPs the chip does in the time one byte crosses the link."""
    peak, bw, _ = chip_link(chip, link)
    return peak / bw


def dp_condition(tokens_per_device: float, chip: str, link: str) -> Condition:
    require_positive("tokens_per_device", tokens_per_device)
    return Condition("data parallel / FSDP", "tokens per device per step", tokens_per_device,
                     critical_intensity(chip, link))


def tp_condition(model: ModelShape | str, tp: int, chip: str, link: str = "chip") -> Condition:
    m = resolve_model(model)
    require_positive("tp", tp, integer=True)
    layer_matmul = 2 * m.hidden ** 2 + 2 * m.hidden * m.kv_dim + (3 if m.gated_mlp else 2) * m.hidden * m.ffn_dim
    if tp == 1:
        return Condition("tensor parallel", "matmul weights per layer / (4 h)", layer_matmul / (4 * m.hidden),
                         0.0 + 1e-30)
    return Condition("tensor parallel", "matmul weights per layer / (4 h)", layer_matmul / (4 * m.hidden),
                     (tp - 1) * critical_intensity(chip, link))


def ep_condition(model: ModelShape | str, ep: int, chip: str, link: str = "chip") -> Condition:
    m = resolve_model(model)
    if not m.is_moe:
        raise ValueError(f"{m.name} is dense: expert parallelism needs experts > 0")
    require_positive("ep", ep, integer=True)
    expert = (3 if m.gated_mlp else 2) * m.hidden * m.expert_ffn_dim
    return Condition("expert parallel", "expert weights / hidden", expert / m.hidden,
                     max(2 * (ep - 1) / ep, 1e-30) * critical_intensity(chip, link))


def cp_condition(model: ModelShape | str, seq: int, cp: int, chip: str, link: str = "chip") -> Condition:
    m = resolve_model(model)
    require_positive("seq", seq, integer=True)
    require_positive("cp", cp, integer=True)
    return Condition("context parallel", "tokens per rank (s / cp)", seq / cp,
                     m.kv_dim / m.hidden * critical_intensity(chip, link))


def conditions(model: ModelShape | str = "llama-3-70b", *, chip: str = "H100 SXM", network: str = "InfiniBand NDR",
               tokens_per_device: float = 8192, tp: int = 8, seq: int = 131072, cp: int = 16,
               ep_model: ModelShape | str = "mixtral-8x7b", ep: int = 8) -> list[dict]:
    """Every condition inside a node (chip link) and across nodes (``network``), as table rows."""
    rows = []
    for where, link in (("inside a node", "chip"), ("across nodes", network)):
        for c in (dp_condition(tokens_per_device, chip, link), tp_condition(model, tp, chip, link),
                  cp_condition(model, seq, cp, chip, link), ep_condition(ep_model, ep, chip, link)):
            rows.append({"chip": get_chip(chip).name, "link": chip_link(chip, link)[2], "where": where,
                         "parallelism": c.parallelism, "quantity": c.quantity, "value": c.value,
                         "threshold": c.threshold, "ratio": c.ratio, "bound": c.bound})
    return rows
