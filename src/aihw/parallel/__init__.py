"""Parallelism experiments (torch layer): launcher, point-to-point, collectives, data/ZeRO, layer, pipeline and tensor parallel."""
