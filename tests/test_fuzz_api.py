"""Fuzz the public calculators with bad values: each argument in turn replaced by one of many bad values (and by
hypothesis' numbers), the call must return a finite result or raise ValueError/TypeError with a message of the
package's own, never AttributeError, KeyError, OverflowError, ZeroDivisionError or 'math domain error'."""

from __future__ import annotations

import fuzz_support as F
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

TARGETS = F.api_targets()


@pytest.mark.parametrize(("name", "function", "good"), TARGETS, ids=[t[0] for t in TARGETS])
def test_each_argument_with_each_bad_value(name, function, good):
    assert F.check_api(function, good) is None, f"{name} fails on its good arguments"
    violations = []
    for argument in good:
        for bad in F.BAD_VALUES:
            kind = F.check_api(function, {**good, argument: bad})
            if kind:
                violations.append((kind, argument, repr(bad)[:30]))
    assert not violations, violations


numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(min_value=-10**400,
                                                                                  max_value=10**400))


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(TARGETS), st.data())
def test_random_numbers_in_every_argument(target, data):
    name, function, good = target
    argument = data.draw(st.sampled_from(sorted(good)))
    value = data.draw(numbers)
    assert F.check_api(function, {**good, argument: value}) is None, (name, argument, value)
