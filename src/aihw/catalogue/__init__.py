"""The hardware catalogue: chips, networks, the sourced-figure parser and comparison tables (analytic layer)."""
