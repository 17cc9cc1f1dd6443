"""aihw: calculators, simulators and small real experiments for a course on AI hardware.

Layers, bottom to top (nothing imports upward):

* analytic (standard library + numpy): :mod:`aihw.catalogue.hardware`, :mod:`aihw.precision`,
  :mod:`aihw.roofline`, :mod:`aihw.systolic`, :mod:`aihw.exercises`, :mod:`aihw.numerics`
* torch experiments: :mod:`aihw.measure.device`, :mod:`aihw.parallel.launch`, :mod:`aihw.measure.roofline`,
  :mod:`aihw.mixed`
* plotting (:mod:`aihw.plots`) and widgets (:mod:`aihw.widgets`)

``import aihw`` loads neither torch, matplotlib nor ipywidgets.
"""

__version__ = "0.1.0"
