"""Widget of the lab "Inference on hardware": a serving calculator, and buttons that run the real small model.

The live part is HTML (a table and a memory bar), redrawn in milliseconds from :mod:`aihw.serving.estimator`. The buttons
run torch: **Generate and measure** continues a prompt with the trained target model (KV cache on or off) and
times it; **Speculative** runs the same request with the draft model proposing ``k`` tokens per round and
compares. The work is in plain functions the tests call directly: :func:`serving_view`, :func:`generate_view`,
:func:`speculative_view`.
"""

from __future__ import annotations

import html
import time
from typing import cast

import ipywidgets as W

from aihw.catalogue import hardware
from aihw.serving.estimator import PRECISIONS, Precision, ServingConfig, estimate
from aihw.transformer.shapes import list_presets
from aihw.widgets._common import error_box, guarded_run, run_button, show_error

KV_DEFAULT = "(default)"
MAX_NEW_TOKENS = 80


def serving_view(*, model: str = "llama-3-8b", chip: str = "NVIDIA H100 SXM", precision: str = "bf16",
                 kv_precision: str = KV_DEFAULT, batch: int = 1, context: int = 4096, tp: int = 1) -> dict:
    """The serving estimate for the control values and its HTML; raises ValueError on bad input."""
    kv = None if kv_precision == KV_DEFAULT else cast(Precision, kv_precision)  # validated by ServingConfig
    cfg = ServingConfig(model, chip=chip, precision=cast(Precision, precision), kv_precision=kv, batch=batch,
                        context=context, tp=tp)
    est = estimate(cfg)
    return {"estimate": est, "html": html_summary(est)}


def _bar(weights: float, kv: float, usable: float) -> str:
    scale = max(weights + kv, usable)
    w, k, u = (100 * x / scale for x in (weights, kv, usable))
    return (f"<div style='position:relative;height:18px;width:100%;background:#eee;border:1px solid #999'>"
            f"<div style='position:absolute;left:0;width:{w:.2f}%;height:100%;background:#1f77b4'></div>"
            f"<div style='position:absolute;left:{w:.2f}%;width:{k:.2f}%;height:100%;background:#ff7f0e'></div>"
            f"<div style='position:absolute;left:{u:.2f}%;height:100%;border-left:2px dashed #b00020'></div></div>"
            "<small><span style='color:#1f77b4'>&#9632;</span> weights "
            "<span style='color:#ff7f0e'>&#9632;</span> KV cache, per chip; dashed: usable memory</small>")


def html_summary(e) -> str:
    knee = e.knee_batch if e.knee_batch is not None else "none (KV reads grow as fast as FLOPs)"
    cost = f"${e.cost_per_million_tokens:.3g}" if e.cost_per_million_tokens is not None else "no price"
    colour = "#1b7f3b" if e.fits else "#b00020"
    rows = [
        ("fits?", f"<b style='color:{colour}'>{'fits' if e.fits else 'does not fit'}</b>: "
                  f"{e.per_device_bytes / 1e9:,.1f} GB of {e.usable_bytes_per_device / 1e9:,.0f} GB usable per chip"),
        ("weights / KV cache", f"{e.weights_bytes / 1e9:,.1f} GB / {e.kv_cache_bytes / 1e9:,.2f} GB "
                               f"({e.kv_cache_bytes_per_token / 1e3:,.1f} kB per token)"),
        ("time to first token", f"{e.prefill_seconds * 1e3:,.3g} ms ({e.prefill_bound}-bound)"),
        ("time per output token", f"{e.decode_seconds_per_token * 1e3:,.3g} ms ({e.decode_bound}-bound)"),
        ("throughput", f"{e.tokens_per_second:,.4g} tokens/s; {cost} per million tokens"),
        ("largest batch here", f"{e.max_batch} sequences"),
        ("knee batch", f"{knee}; weight matmuls alone: {e.knee_batch_weights}"),
    ]
    table = "".join(f"<tr><td style='padding-right:1em'>{html.escape(a)}</td><td>{b}</td></tr>" for a, b in rows)
    return f"<table>{table}</table>" + _bar(e.weights_bytes / e.tp, e.kv_cache_bytes / e.tp,
                                            e.usable_bytes_per_device)


def generate_view(prompt: str = "The KV cache", new_tokens: int = 40, *, cache: bool = True,
                  target=None) -> dict:
    """Continue ``prompt`` greedily with the trained target model; wall time and tokens/s measured here."""
    import torch

    from aihw.inference.model import generate
    from aihw.inference.train import TARGET, decode, encode, trained

    if not isinstance(new_tokens, int) or not 1 <= new_tokens <= MAX_NEW_TOKENS:
        raise ValueError(f"new tokens must be an integer in [1, {MAX_NEW_TOKENS}], got {new_tokens!r}")
    model = target if target is not None else trained(TARGET)
    ids = encode(prompt or " ")
    if ids.shape[1] + new_tokens > model.cfg.seq_len:
        raise ValueError(f"prompt ({ids.shape[1]} bytes) + {new_tokens} new tokens exceeds the model's "
                         f"{model.cfg.seq_len} positions")
    with torch.no_grad():
        generate(model, ids, 2, cache=cache)  # warm-up
        start = time.perf_counter()
        out = generate(model, ids, new_tokens, cache=cache)
        seconds = time.perf_counter() - start
    return {"text": decode(out[0, ids.shape[1]:]), "seconds": seconds, "tokens_per_s": new_tokens / seconds,
            "cache": cache}


def speculative_view(prompt: str = "The KV cache", new_tokens: int = 40, *, k: int = 4, target=None,
                     draft=None) -> dict:
    """The same continuation by speculative decoding; acceptance and speed-up against the plain run."""
    import torch

    from aihw.inference.model import generate
    from aihw.inference.speculative import expected_tokens_per_round, speculative_generate
    from aihw.inference.train import DRAFT, TARGET, encode, trained

    if not isinstance(k, int) or not 1 <= k <= 8:
        raise ValueError(f"k must be an integer in [1, 8], got {k!r}")
    target = target if target is not None else trained(TARGET)
    draft = draft if draft is not None else trained(DRAFT)
    ids = encode(prompt or " ")
    if ids.shape[1] + new_tokens > min(target.cfg.seq_len, draft.cfg.seq_len):
        raise ValueError("prompt + new tokens exceeds the models' positions")
    with torch.no_grad():
        start = time.perf_counter()
        plain = generate(target, ids, new_tokens)
        plain_s = time.perf_counter() - start
        spec = speculative_generate(target, draft, ids, new_tokens, k=k)
    return {"same_output": bool(torch.equal(plain, spec.tokens)), "alpha": spec.alpha, "rounds": spec.rounds,
            "tokens_per_round": spec.tokens_per_round,
            "formula_tokens_per_round": expected_tokens_per_round(spec.alpha, k),
            "speedup": plain_s / spec.seconds}


def serving_calculator(model: str = "llama-3-8b", chip: str = "NVIDIA H100 SXM") -> W.VBox:
    """Controls for model, chip, precisions, batch, context and TP; buttons that run the small model here."""
    c = {
        "model": W.Dropdown(options=list_presets(), value=model, description="model"),
        "chip": W.Dropdown(options=[ch.name for ch in hardware.list_chips()], value=chip, description="chip"),
        "precision": W.Dropdown(options=list(PRECISIONS), value="bf16", description="weights"),
        "kv_precision": W.Dropdown(options=[KV_DEFAULT, *PRECISIONS], value=KV_DEFAULT, description="KV cache"),
        "batch": W.BoundedIntText(value=1, min=-10, max=10**6, description="batch"),
        "context": W.BoundedIntText(value=4096, min=-10, max=10**7, description="context"),
        "tp": W.BoundedIntText(value=1, min=1, max=1024, description="TP"),
    }
    err, summary, status, gen_out = error_box(), W.HTML(), W.HTML(), W.HTML()
    prompt = W.Text(value="The KV cache", description="prompt")
    cache_on = W.Checkbox(value=True, description="KV cache")
    spec_on = W.Checkbox(value=False, description="speculative (k=4)")
    button = run_button("Generate and measure")

    def update(_=None) -> None:
        try:
            view = serving_view(**{k: w.value for k, w in c.items()})
        except ValueError as exc:
            show_error(err, exc)
            return
        show_error(err, None)
        summary.value = view["html"]

    def work() -> str:
        if spec_on.value:
            r = speculative_view(prompt.value, 40, k=4)
            gen_out.value = (f"speculative decoding: output identical to the target's: <b>{r['same_output']}</b>; "
                             f"acceptance {r['alpha']:.2f}, {r['tokens_per_round']:.2f} tokens per target pass "
                             f"(formula {r['formula_tokens_per_round']:.2f}); speed-up {r['speedup']:.2f}x here")
            return "done"
        r = generate_view(prompt.value, 40, cache=cache_on.value)
        gen_out.value = (f"<pre>{html.escape(prompt.value + r['text'])}</pre>{r['tokens_per_s']:.0f} tokens/s "
                         f"({'with' if r['cache'] else 'without'} KV cache), measured on this machine")
        return "done"

    for w in c.values():
        w.observe(update, names="value")
    button.on_click(lambda _: guarded_run(button, status, err, "running the small model...", work))
    update()
    left = W.VBox([c[k] for k in ("model", "chip", "precision", "kv_precision")])
    right = W.VBox([c[k] for k in ("batch", "context", "tp")])
    return W.VBox([W.HBox([left, right]), err, summary, W.HBox([prompt, cache_on, spec_on]),
                   W.HBox([button, status]), gen_out])


def solution(n: int) -> str:
    """The worked solution of the lab's exercise ``n`` (1-4), computed by the course's models."""
    from aihw.serving.estimator import estimate_serving, kv_bytes_per_token, streamed_weights_bytes
    from aihw.transformer.shapes import get_preset

    if n == 1:
        return (f"2 x 80 layers x 8 KV heads x 128 x 2 bytes = {kv_bytes_per_token(get_preset('llama-2-70b'), 2):,.0f}"
                " bytes per token (320 KiB): GQA with 8 KV heads cuts the MHA figure 8-fold.")
    if n == 2:
        e = estimate_serving("llama-3-8b", chip="H100 SXM", batch=1, context=16)
        m = get_preset("llama-3-8b")
        streamed = streamed_weights_bytes(m, "bf16", 1)
        return (f"{e.params:,} parameters x 2 bytes = {e.weights_bytes / 1e9:.2f} GB, less the input-embedding table "
                f"({m.vocab:,} x {m.hidden:,}), of which a token reads one gathered row: {streamed / 1e9:.2f} GB per "
                f"token; / 3.35 TB/s = {e.decode_seconds_per_token * 1e3:.2f} ms, at most "
                f"{e.tokens_per_second:.0f} tokens/s at batch 1.")
    if n == 3:
        e = estimate_serving("llama-3-8b", chip="H100 SXM", batch=64, context=4096)
        return (f"{e.decode_bound}: the step reads {e.weights_bytes / 1e9:.1f} GB of weights and "
                f"{e.kv_cache_bytes / 1e9:.1f} GB of KV cache ({e.decode_memory_seconds * 1e3:.1f} ms) but computes "
                f"for only {e.decode_compute_seconds * 1e3:.2f} ms: each sequence's attention reads its own cache, "
                "so with long contexts the KV bytes grow as fast as the FLOPs and decode never turns compute-bound.")
    if n == 4:
        from aihw.inference.speculative import expected_tokens_per_round

        return (f"(1 - 0.8^5) / (1 - 0.8) = {expected_tokens_per_round(0.8, 4):.2f} tokens: the first guess is kept "
                "with probability 0.8, the first two with 0.64, ..., and every pass adds one token of the target's own.")
    raise ValueError(f"exercise must be 1 to 4, got {n!r}")



SOLUTIONS = {n: (lambda n=n: solution(n)) for n in (1, 2, 3, 4)}  # for aihw.exercises.reveal
