"""aihw: calculators, simulators and small real experiments for a course on AI hardware.

Layers, bottom to top; a layer imports only the layers below it (declared once, as the import-linter contract
in pyproject.toml, and checked by ``make lint``):

* analytic calculators (standard library + numpy): the top-level modules (:mod:`aihw.formats.precision`, the registry
  of number formats; :mod:`aihw.transformer.flops`, the FLOP model; :mod:`aihw.chips.roofline`, :mod:`aihw.memory.estimator`,
  :mod:`aihw.chips.systolic`, :mod:`aihw.chips.simt`, :mod:`aihw.formats.numerics`, :mod:`aihw.chips.energy`, :mod:`aihw.transformer.shapes`,
  :mod:`aihw.layout.dims` (one validated layout), :mod:`aihw.planning.planner` with :mod:`aihw.planning.published` (published
  runs) and :mod:`aihw.comm.roofline`, :mod:`aihw.serving.estimator` (the serving model), :mod:`aihw.choosing` (an objective to chips, layout, time, cost and energy), ...), :mod:`aihw.catalogue` (chips and networks, with sourced figures),
  the command line (:mod:`aihw.cli`, :mod:`aihw.cli.commands`) and :mod:`aihw.cli.live` (the CLI in the browser);
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
