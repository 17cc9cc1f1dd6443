"""Transformer shapes and their arithmetic: architectures, presets and model files
(:mod:`~aihw.transformer.shapes`) and the one FLOP model (:mod:`~aihw.transformer.flops`)."""

from aihw.transformer.shapes import ModelShape, get_preset, list_presets, load_model_file, resolve_model

__all__ = ["ModelShape", "get_preset", "list_presets", "load_model_file", "resolve_model"]
