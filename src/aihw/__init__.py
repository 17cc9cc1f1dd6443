"""aihw: calculators, simulators and small real experiments for a course on AI hardware.

Layers, bottom to top; a layer imports only the layers below it (declared once, as the import-linter contract
in pyproject.toml, and checked by ``make lint``):

* analytic calculators (standard library + numpy): the top-level modules (:mod:`aihw.precision`, the registry
  of number formats; :mod:`aihw.flops`, the FLOP model; :mod:`aihw.roofline`, :mod:`aihw.memory`,
  :mod:`aihw.systolic`, :mod:`aihw.simt`, :mod:`aihw.numerics`, :mod:`aihw.energy`, :mod:`aihw.model_presets`,
  :mod:`aihw.parallel_dims` (one validated layout), :mod:`aihw.planner` with :mod:`aihw.validation` (published
  runs) and :mod:`aihw.comm_roofline`, :mod:`aihw.serving` (the serving model), ...), :mod:`aihw.catalogue` (chips and networks, with sourced figures),
  the command line (:mod:`aihw.cli`, :mod:`aihw.commands`) and :mod:`aihw.live` (the CLI in the browser);
* torch experiments: :mod:`aihw.measure` (device, timing, measurements), :mod:`aihw.parallel` (launcher,
  collectives, parallelism), :mod:`aihw.models` (TinyGPT, the digits MLP), :mod:`aihw.cheaper` (quantization,
  pruning, distillation), :mod:`aihw.mixed` (mixed-precision training),
  :mod:`aihw.accel` (memory hierarchy, fusion, attention, Triton kernel, profile,
  power counters), :mod:`aihw.inference` (KV-cached generation, paged cache, batching,
  speculative and quantized decode);
* plots, :mod:`aihw.plots` (``aihw.plots.<slug>``, one module per chapter);
* widgets, :mod:`aihw.widgets` (``aihw.widgets.<slug>_lab``, one module per lab).

``import aihw`` loads neither torch, matplotlib nor ipywidgets.
"""

__version__ = "0.1.0"
