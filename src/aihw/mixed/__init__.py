"""Mixed-precision training mechanics, measured on real runs of :mod:`aihw.models.tinygpt` (torch).

* :mod:`aihw.mixed.training`: fp16 gradient underflow without loss scaling and torch's ``GradScaler`` recovering it
  (skipped steps counted); lost updates in pure bf16 vs fp32 master weights vs stochastic rounding; autocast bf16
  activation memory against :mod:`aihw.memory.estimator`.
* :mod:`aihw.mixed.fp8`: FP8 training recipes simulated (per-tensor current scaling, delayed scaling with an amax
  history, MX-style block scaling), compared on loss curves and overflow counts.
"""
