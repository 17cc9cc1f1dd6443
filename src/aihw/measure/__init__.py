"""Measurement kit (torch layer): device choice, timing, roofline, memory and FLOP measurements."""
