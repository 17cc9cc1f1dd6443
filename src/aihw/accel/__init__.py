"""Torch experiments of the chapter "Inside the accelerator": memory hierarchy, fusion, attention, a Triton
kernel, a profile of one training step and power counters. Each module holds one experiment and its config."""
