"""How work is laid out on many chips: the one validated description of a parallel layout
(:class:`~aihw.layout.dims.ParallelDims`) and pipeline schedules with their bubbles
(:mod:`~aihw.layout.schedules`)."""

from aihw.layout.dims import ParallelDims

__all__ = ["ParallelDims"]
