"""Inside a chip: the roofline (:mod:`~aihw.chips.roofline`), a systolic array simulated cycle by cycle
(:mod:`~aihw.chips.systolic`), SIMT and tensor-core traffic (:mod:`~aihw.chips.simt`) and energy per operation
(:mod:`~aihw.chips.energy`). The chips' figures themselves are data, in :mod:`aihw.catalogue`."""
