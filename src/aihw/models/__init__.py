"""The small models the experiments run (torch layer): TinyGPT and the digits MLP."""
