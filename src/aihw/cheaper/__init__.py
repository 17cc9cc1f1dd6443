"""Making models cheaper (torch layer): quantization, pruning, distillation."""
