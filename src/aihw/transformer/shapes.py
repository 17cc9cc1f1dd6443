"""Decoder-only transformer shapes and the published models the memory chapter sizes (stdlib only).

A :class:`ModelShape` holds exactly the numbers that decide memory: width, depth, heads, key/value heads,
feed-forward width, vocabulary, context, and the few architectural switches that change the parameter count
(biases, gated MLP, LayerNorm vs RMSNorm, learned positions, tied embeddings). Parameter counts are computed
from these, never typed in; ``published_params`` is kept only so the tests can compare.
"""

from __future__ import annotations

import dataclasses
import functools
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

from aihw._validate import MODEL_FILE_LIMIT, read_bounded_text, require_choice, require_positive, shown_path


def _once_per_shape(method: Callable[[ModelShape], int]) -> Callable[[ModelShape], int]:
    """A parameter count computed once per (frozen) shape: a layout search asks for it thousands of times.

    Kept in the instance's ``__dict__`` beside the fields (as functools.cached_property does), so equality,
    hashing, ``repr`` and ``dataclasses.replace`` (a new shape: counted afresh) see only the fields.
    """
    key = f"_count_{method.__name__}"

    @functools.wraps(method)
    def counted(self: ModelShape) -> int:
        memo = self.__dict__
        if key not in memo:
            memo[key] = method(self)
        return memo[key]

    return counted


@dataclass(frozen=True)
class ModelShape:
    """Architecture of a decoder-only transformer, as far as memory is concerned."""

    name: str
    hidden: int  # model width h
    layers: int  # number of transformer blocks L
    heads: int  # attention (query) heads a
    vocab: int  # vocabulary size V
    max_seq: int  # context length the model was trained with (tokens)
    kv_heads: int | None = None  # key/value heads: = heads for MHA, < heads for GQA, 1 for MQA
    ffn: int | None = None  # feed-forward inner width; None means 4 * hidden (GPT-2)
    gated_mlp: bool = False  # SwiGLU-style MLP with three matrices (gate, up, down) instead of two
    biases: bool = True  # bias vectors in every linear layer (GPT-2) or none (Llama, Mistral)
    norm: str = "layernorm"  # "layernorm" (weight + bias) or "rmsnorm" (weight only)
    learned_positions: bool = True  # a max_seq x hidden position table (GPT-2); False for RoPE
    tied_embeddings: bool = True  # output head shares the token-embedding matrix
    # Mixture of experts (0 experts: a dense model; the fields below are then ignored). Each layer's MLP is
    # ``experts`` copies of width ``expert_ffn`` plus a router (hidden x experts); each token goes to ``top_k``
    # of them; ``capacity_factor`` pads each expert's slot count to capacity x tokens x top_k / experts.
    experts: int = 0
    top_k: int = 2
    expert_ffn: int | None = None  # inner width of one expert; None: ffn
    capacity_factor: float = 1.0
    source: str = ""  # where the configuration was read (URL)
    published_params: float | None = None  # the count its authors publish, for tests only
    sliding_window: int | None = None  # attention window in tokens (Mistral: 4096); None: full attention

    def __post_init__(self) -> None:
        for field in ("hidden", "layers", "heads", "vocab", "max_seq"):
            require_positive(field, getattr(self, field), integer=True)
        if self.hidden % self.heads:
            raise ValueError(f"heads={self.heads} must divide hidden={self.hidden} "
                             f"(head dimension hidden/heads must be a whole number)")
        if self.kv_heads is not None:
            require_positive("kv_heads", self.kv_heads, integer=True)
            if self.heads % self.kv_heads:
                raise ValueError(f"kv_heads={self.kv_heads} must divide heads={self.heads} "
                                 f"(each key/value head serves a whole group of query heads)")
        if self.ffn is not None:
            require_positive("ffn", self.ffn, integer=True)
        if self.sliding_window is not None:
            require_positive("sliding_window", self.sliding_window, integer=True)
        require_choice("norm", self.norm, ("layernorm", "rmsnorm"))
        if isinstance(self.experts, bool) or not isinstance(self.experts, int) or self.experts < 0:
            raise ValueError(f"experts must be 0 (dense) or a positive integer, got {self.experts!r}")
        if self.experts:
            require_positive("top_k", self.top_k, integer=True)
            if self.top_k > self.experts:
                raise ValueError(f"top_k={self.top_k} cannot exceed the {self.experts} experts "
                                 "(each token picks top_k distinct experts)")
            if self.expert_ffn is not None:
                require_positive("expert_ffn", self.expert_ffn, integer=True)
            require_positive("capacity_factor", self.capacity_factor)
            if self.capacity_factor < 1:
                raise ValueError(f"capacity_factor must be >= 1 (slots per expert relative to an even share "
                                 f"of the tokens), got {self.capacity_factor!r}")

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def n_kv_heads(self) -> int:
        return self.heads if self.kv_heads is None else self.kv_heads

    @property
    def kv_dim(self) -> int:
        """Width of the key (and of the value) projection: kv_heads * head_dim."""
        return self.n_kv_heads * self.head_dim

    @property
    def ffn_dim(self) -> int:
        return 4 * self.hidden if self.ffn is None else self.ffn

    @property
    def attention_kind(self) -> str:
        """"MHA", "GQA" or "MQA"."""
        return "MHA" if self.n_kv_heads == self.heads else ("MQA" if self.n_kv_heads == 1 else "GQA")

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def expert_ffn_dim(self) -> int:
        return self.ffn_dim if self.expert_ffn is None else self.expert_ffn

    @_once_per_shape
    def attention_params(self) -> int:
        """W_q, W_k, W_v, W_o (and their biases) of one block."""
        h, kv = self.hidden, self.kv_dim
        return 2 * h * h + 2 * h * kv + ((2 * h + 2 * kv) if self.biases else 0)

    def mlp_params(self, width: int | None = None) -> int:
        """One (dense) MLP of inner width ``width`` (default: ffn)."""
        h, f = self.hidden, self.ffn_dim if width is None else width
        mlp = (3 if self.gated_mlp else 2) * h * f
        return mlp + (((2 * f if self.gated_mlp else f) + h) if self.biases else 0)

    @_once_per_shape
    def moe_params(self) -> int:
        """All experts of one MoE block plus its router (0 for a dense model)."""
        if not self.is_moe:
            return 0
        return self.experts * self.mlp_params(self.expert_ffn_dim) + self.hidden * self.experts

    @_once_per_shape
    def layer_params(self) -> int:
        """Parameters of one transformer block: attention, MLP (or all experts + router) and its two norms."""
        mlp = self.moe_params() if self.is_moe else self.mlp_params()
        return self.attention_params() + mlp + 2 * self._norm_params()

    def active_layer_params(self) -> int:
        """Parameters one token uses in a block: attention, ``top_k`` experts and the router (MoE)."""
        if not self.is_moe:
            return self.layer_params()
        return (self.attention_params() + self.top_k * self.mlp_params(self.expert_ffn_dim)
                + self.hidden * self.experts + 2 * self._norm_params())

    @_once_per_shape
    def embedding_params(self) -> int:
        """Token (and learned position) embeddings."""
        return self.vocab * self.hidden + (self.max_seq * self.hidden if self.learned_positions else 0)

    @_once_per_shape
    def head_params(self) -> int:
        """Final norm plus the output projection (0 extra when tied to the token embedding)."""
        return self._norm_params() + (0 if self.tied_embeddings else self.vocab * self.hidden)

    @_once_per_shape
    def param_count(self) -> int:
        """Total parameters, computed from the architecture."""
        return self.embedding_params() + self.layers * self.layer_params() + self.head_params()

    def _norm_params(self) -> int:
        return 2 * self.hidden if self.norm == "layernorm" else self.hidden


_HF = "https://huggingface.co"


def _gpt2(name: str, hidden: int, layers: int, heads: int, repo: str, published: float) -> ModelShape:
    # GPT-2: learned positions, LayerNorm with bias, biases everywhere, GELU MLP of width 4h, tied head.
    return ModelShape(name, hidden, layers, heads, vocab=50257, max_seq=1024,
                      source=f"{_HF}/openai-community/{repo}/blob/main/config.json", published_params=published)


def _llama(name: str, hidden: int, layers: int, heads: int, kv_heads: int, ffn: int, vocab: int,
           max_seq: int, repo: str, published: float, sliding_window: int | None = None) -> ModelShape:
    # Llama / Mistral: RoPE (no position table), RMSNorm, no biases, SwiGLU MLP, untied output head.
    return ModelShape(name, hidden, layers, heads, vocab=vocab, max_seq=max_seq, kv_heads=kv_heads, ffn=ffn,
                      gated_mlp=True, biases=False, norm="rmsnorm", learned_positions=False,
                      tied_embeddings=False, source=f"{_HF}/{repo}/blob/main/config.json",
                      published_params=published, sliding_window=sliding_window)


PRESETS: dict[str, ModelShape] = {
    m.name: m
    for m in (
        _gpt2("gpt2-small", 768, 12, 12, "gpt2", 117e6),
        _gpt2("gpt2-medium", 1024, 24, 16, "gpt2-medium", 345e6),
        _gpt2("gpt2-large", 1280, 36, 20, "gpt2-large", 762e6),
        _gpt2("gpt2-xl", 1600, 48, 25, "gpt2-xl", 1542e6),
        _llama("llama-2-7b", 4096, 32, 32, 32, 11008, 32000, 4096, "meta-llama/Llama-2-7b-hf", 6.74e9),
        _llama("llama-2-13b", 5120, 40, 40, 40, 13824, 32000, 4096, "meta-llama/Llama-2-13b-hf", 13.0e9),
        _llama("llama-2-70b", 8192, 80, 64, 8, 28672, 32000, 4096, "meta-llama/Llama-2-70b-hf", 69.0e9),
        _llama("llama-3-8b", 4096, 32, 32, 8, 14336, 128256, 8192, "meta-llama/Meta-Llama-3-8B", 8.03e9),
        _llama("llama-3-70b", 8192, 80, 64, 8, 28672, 128256, 8192, "meta-llama/Meta-Llama-3-70B", 70.6e9),
        _llama("mistral-7b", 4096, 32, 32, 8, 14336, 32000, 8192, "mistralai/Mistral-7B-v0.1", 7.24e9,
               sliding_window=4096),
        # Mixtral 8x7B: Mistral-7B's attention, 8 SwiGLU experts of width 14336 per layer, top-2 routing.
        dataclasses.replace(_llama("mixtral-8x7b", 4096, 32, 32, 8, 14336, 32000, 32768,
                                   "mistralai/Mixtral-8x7B-v0.1", 46.7e9), experts=8, top_k=2),
    )
}



def get_preset(name: str) -> ModelShape:
    """Look up an architecture preset by name (case-insensitive); unknown names list close matches."""
    key = name.lower() if isinstance(name, str) else name
    return PRESETS[require_choice("model preset", key, PRESETS)]


def list_presets() -> list[str]:
    return list(PRESETS)


# --- model files ---------------------------------------------------------------------------------------------
# A model file is a TOML table with the field names of ModelShape, e.g.
#
#     name = "my-7b"
#     hidden = 4096
#     layers = 32
#     heads = 32
#     kv_heads = 8
#     ffn = 14336
#     vocab = 32000
#     max_seq = 8192
#     gated_mlp = true
#     biases = false
#     norm = "rmsnorm"
#     learned_positions = false
#     tied_embeddings = false
#     # mixture of experts (optional; leave out for a dense model)
#     experts = 8
#     top_k = 2
#     expert_ffn = 14336
#     capacity_factor = 1.25
#
# Accepted wherever a preset name is (the CLI's --model, the memory estimator, the planner, the serving model).

MODEL_FILE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(ModelShape) if f.name != "published_params")
_REQUIRED = ("hidden", "layers", "heads", "vocab", "max_seq")


def load_model_file(path: str | Path) -> ModelShape:
    """Read a model file (TOML with ModelShape's field names); one clear ValueError for any problem.

    The file must be a regular file of at most :data:`~aihw._validate.MODEL_FILE_LIMIT` bytes (1 MiB): a FIFO,
    a device such as ``/dev/zero`` or a directory is refused at once, before any read."""
    text = read_bounded_text(path, what="model file", limit=MODEL_FILE_LIMIT)
    p = Path(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"model file {shown_path(p)} is not valid TOML: {err}") from None
    unknown = sorted(set(data) - set(MODEL_FILE_FIELDS))
    if unknown:
        raise ValueError(f"model file {shown_path(p)}: unknown field(s) {', '.join(unknown)}; "
                         f"allowed: {', '.join(MODEL_FILE_FIELDS)}")
    missing = [f for f in _REQUIRED if f not in data]
    if missing:
        raise ValueError(f"model file {shown_path(p)}: missing field(s) {', '.join(missing)} "
                         f"(required: {', '.join(_REQUIRED)})")
    types = {f.name: f.type for f in fields(ModelShape)}
    for key, value in data.items():
        want = types[key]
        if "bool" in str(want) and not isinstance(value, bool):
            raise ValueError(f"model file {shown_path(p)}: {key} must be true or false, got {value!r}")
        if "int" in str(want) and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError(f"model file {shown_path(p)}: {key} must be a whole number, got {value!r}")
        if want in ("float", float) and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ValueError(f"model file {shown_path(p)}: {key} must be a number, got {value!r}")
        if want in ("str", str) and not isinstance(value, str):
            raise ValueError(f"model file {shown_path(p)}: {key} must be a string, got {value!r}")
    data.setdefault("name", p.stem)
    try:
        return ModelShape(**data)
    except ValueError as err:
        raise ValueError(f"model file {shown_path(p)}: {err}") from None


def _exists(name: str) -> bool:
    """Whether ``name`` is an existing file (False, not OSError, for names too long or otherwise invalid)."""
    try:
        return Path(name).is_file()
    except (OSError, ValueError):
        return False


def resolve_model(name_or_path: str | ModelShape) -> ModelShape:
    """A preset name, a path to a model file (``*.toml``), or a ModelShape, turned into a ModelShape."""
    if isinstance(name_or_path, ModelShape):
        return name_or_path
    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise ValueError(f"model must be a preset name ({', '.join(PRESETS)}) or a .toml model file; "
                         f"got {name_or_path!r}")
    if name_or_path.lower().endswith(".toml") or "/" in name_or_path or _exists(name_or_path):
        return load_model_file(name_or_path)
    return get_preset(name_or_path)
