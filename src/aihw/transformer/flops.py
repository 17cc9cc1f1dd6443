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
from aihw.transformer.shapes import ModelShape

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


@dataclass(frozen=True)
class LayerIntensity:
    """FLOPs, minimum bytes moved and arithmetic intensity of one operation of a transformer layer."""

    op: str
    kind: str  # "matmul (weights)", "matmul (attention)" or "elementwise"
    flops: float
    bytes_moved: float

    @property
    def intensity(self) -> float:
        """FLOP per byte of memory traffic (each operand read once, the result written once)."""
        return self.flops / self.bytes_moved


def layer_intensities(model: ModelShape, *, batch: int, new_tokens: int, context: int,
                      bytes_per_value: float = 2.0) -> list[LayerIntensity]:
    """Arithmetic intensity of each operation of one layer for ``batch`` sequences of ``new_tokens`` each.

    A training or prefill step: ``new_tokens`` = ``context`` = the sequence length; one decode step:
    ``new_tokens`` = 1 and ``context`` = the tokens already in the KV cache. Weight matmuls read the weights
    once for all batch x new_tokens tokens, so their intensity grows with that product; the attention
    matmuls read each sequence's own keys and values, so a decode step's attention stays near
    ``heads / kv_heads`` FLOP/byte (1 without GQA, about 3.9 for Llama-3-8B's 4 query heads per KV head)
    whatever the batch. Elementwise operations (norms, activations) do a few FLOP per value and are always
    memory-bound. Minimum traffic: every operand read once and the result written once.
    """
    for name, value in (("batch", batch), ("new_tokens", new_tokens), ("context", context)):
        require_positive(name, value, integer=True)
    require_positive("bytes_per_value", bytes_per_value)
    if new_tokens > context:
        raise ValueError(f"new_tokens={new_tokens} cannot exceed context={context} (keys a query can see)")
    h, kv, f, b = model.hidden, model.kv_dim, model.ffn_dim, bytes_per_value
    tokens = batch * new_tokens

    def linear(name: str, n_in: int, n_out: int) -> LayerIntensity:
        return LayerIntensity(name, "matmul (weights)", 2.0 * tokens * n_in * n_out,
                              b * (tokens * n_in + n_in * n_out + tokens * n_out))

    queries_per_seq, seqs = new_tokens, batch
    width = model.heads * model.head_dim
    # Q K^T: per sequence, (queries x width) times (width x context) per head group; reads Q, K, writes scores.
    scores_bytes = b * seqs * (queries_per_seq * width + context * kv + model.heads * queries_per_seq * context)
    av_bytes = b * seqs * (model.heads * queries_per_seq * context + context * kv + queries_per_seq * width)
    attention_flops = 2.0 * tokens * context * width
    mlp_in = 2 * f if model.gated_mlp else f
    ops = [
        LayerIntensity("norm (before attention)", "elementwise", 5.0 * tokens * h, b * 2 * tokens * h),
        linear("Q, K, V projections", h, h + 2 * kv),
        LayerIntensity("scores Q·Kᵀ", "matmul (attention)", attention_flops, scores_bytes),
        LayerIntensity("weighted values A·V", "matmul (attention)", attention_flops, av_bytes),
        linear("output projection", h, h),
        LayerIntensity("norm (before MLP)", "elementwise", 5.0 * tokens * h, b * 2 * tokens * h),
        linear("MLP up" + (" + gate" if model.gated_mlp else ""), h, mlp_in),
        LayerIntensity("activation" + (" (SwiGLU)" if model.gated_mlp else " (GELU)"), "elementwise",
                       8.0 * tokens * f, b * (mlp_in + f) * tokens),
        linear("MLP down", f, h),
    ]
    return ops
