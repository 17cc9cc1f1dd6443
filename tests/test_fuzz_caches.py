"""Fuzz the caches: a weights file or its digest damaged at random (flipped, truncated, appended to, overwritten,
emptied) is never loaded; a cached JSON result overwritten with random bytes or JSON of another shape is
recomputed, and no temporary file stays behind."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import fuzz_support as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
MODES = ["flip", "truncate", "append", "replace", "empty"]

json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                        max_size=3), max_leaves=8)


@SETTINGS
@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(MODES), st.binary(min_size=1, max_size=16),
       st.sampled_from(["weights", "digest"]))
def test_damaged_weights_are_never_loaded(position, mode, junk, target):
    with tempfile.TemporaryDirectory() as folder:
        assert F.check_weights(Path(folder), position, mode, junk, target) is None, (position, mode, junk, target)


@SETTINGS
@given(st.one_of(st.binary(max_size=60), json_values.map(lambda v: json.dumps(v).encode()),
                 st.dictionaries(st.sampled_from(["key", "sha256", "result", "x"]), json_values, max_size=4)
                 .map(lambda v: json.dumps(v).encode())))
def test_damaged_json_caches_are_recomputed(content):
    with tempfile.TemporaryDirectory() as folder:
        assert F.check_cached_json(Path(folder), content) is None, content
