"""Communication between chips: the alpha-beta cost of collectives on real links and networks
(:mod:`~aihw.comm.collectives`) and the communication rooflines that say when each kind of parallelism stays
compute-bound (:mod:`~aihw.comm.roofline`)."""
