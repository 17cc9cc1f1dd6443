"""FLOPs per token of a decoder-only transformer, counted from its shape (standard library).

One FLOP model for the whole course (the scaling chapter, the planner, the serving model, the transformer-math
chapter). Convention, stated once:

* A multiply-add is 2 FLOP. Only matrix multiplications are counted (norms, activations, softmax and the
  embedding lookup are a fraction of a percent for real models and are left out).
* **Dense matmuls**: every weight matrix that multiplies the token's activations, 2 FLOP per weight per token in
  the forward pass: the attention projections (Q, K, V, O), the MLP (2 or 3 matrices) of every layer, and the
  output head (``vocab x hidden``, counted even when tied to the embedding, since it is still a matmul).
* **Attention matmuls**: both of them, ``Q Kᵀ`` (scores) and ``A V`` (weighted values). For a token attending to
  ``s`` keys with ``heads x head_dim`` query width, each is ``2 · s · heads · head_dim`` FLOP, so together
  ``4 · layers · s · heads · head_dim`` per token forward. By default every token is charged the full sequence
  ``s`` (non-causal), the convention of PaLM's MFU (Chowdhery et al. 2022, appendix B: ``6N + 12·L·H·Q·T``) and of
  Megatron-LM's formula (Narayanan et al. 2021, eq. 3). ``causal=True`` charges the average ``(s+1)/2`` keys a
  causal token really sees, which is what a causal kernel such as FlashAttention executes.
* **Training** = forward + backward = 3 × forward (the backward pass computes two matmuls per forward matmul:
  gradients of the input and of the weight). Activation recomputation adds forward work again (see
  :func:`flops_per_token`).

Kaplan et al. 2020 (Table 1) write the attention term as ``2 · n_layer · n_ctx · d_attn`` forward, which counts
one of the two attention matmuls; here both are counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from aihw._validate import require_choice, require_positive
from aihw.model_presets import ModelShape

Recompute = Literal["none", "selective", "full"]
RECOMPUTE_CHOICES: tuple[str, ...] = get_args(Recompute)


@dataclass(frozen=True)
class TokenFlops:
    """Forward FLOPs per token, split into the dense matmuls and the two attention matmuls."""

    dense: float  # 2 x (weights in matmuls)
    attention: float  # Q K^T plus A V

    @property
    def forward(self) -> float:
        return self.dense + self.attention

    @property
    def training(self) -> float:
        """Forward + backward (3 x forward), no recomputation."""
        return 3 * self.forward

    @property
    def attention_share(self) -> float:
        """Fraction of the forward FLOPs spent in the two attention matmuls."""
        return self.attention / self.forward


def matmul_params(model: ModelShape) -> int:
    """Weights that multiply a token's activations: Q, K, V, O and the MLP of every layer, plus the output head.

    Mixture of experts: the ``top_k`` experts a token is routed to, plus the router (hidden x experts).
    """
    h, kv, f = model.hidden, model.kv_dim, model.ffn_dim
    if model.experts:
        mlp = model.top_k * (3 if model.gated_mlp else 2) * h * model.expert_ffn_dim + h * model.experts
    else:
        mlp = (3 if model.gated_mlp else 2) * h * f
    per_layer = 2 * h * h + 2 * h * kv + mlp
    return model.layers * per_layer + model.vocab * h


def forward_flops_per_token(model: ModelShape, seq: int, *, causal: bool = False) -> TokenFlops:
    """Forward FLOPs per token at sequence length ``seq`` (see the module docstring for the convention)."""
    require_positive("seq", seq, integer=True)
    keys = (seq + 1) / 2 if causal else seq
    attention = 4 * model.layers * keys * model.heads * model.head_dim
    return TokenFlops(dense=2.0 * matmul_params(model), attention=float(attention))


def flops_per_token(model: ModelShape, seq: int, *, training: bool = True, recompute: Recompute = "none",
                    causal: bool = False) -> float:
    """FLOPs per token: forward only, or training (forward + backward + any recomputed forward work).

    ``recompute``: "none"; "selective" recomputes the attention core (the two attention matmuls) in the
    backward pass (Korthikanti et al. 2022); "full" recomputes the whole forward pass of every layer.
    """
    require_choice("recompute", recompute, RECOMPUTE_CHOICES)
    f = forward_flops_per_token(model, seq, causal=causal)
    if not training:
        return f.forward
    extra = {"none": 0.0, "selective": f.attention,
             "full": f.forward - 2.0 * model.vocab * model.hidden}[recompute]  # the head is not recomputed
    return f.training + extra


def model_flops_per_token(model: ModelShape, seq: int, *, causal: bool = False) -> float:
    """Model FLOPs per trained token (no recomputation): the numerator of MFU."""
    return flops_per_token(model, seq, training=True, recompute="none", causal=causal)
