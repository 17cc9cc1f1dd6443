"""Fuzz the command line: every subcommand and option with hostile values (hypothesis), each answered with output
or one short printable error line, never a traceback, an internal error, an inf or a raw control character."""

from __future__ import annotations

import fuzz_support as F
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

OPTIONS = F.cli_options()
COMMANDS = sorted(OPTIONS)
SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

values = st.one_of(st.sampled_from(F.HOSTILE_NUMBERS + F.HOSTILE_TEXT),
                   st.text(max_size=30), st.floats(allow_nan=True).map(repr),
                   st.integers(min_value=-10**30, max_value=10**320).map(str))


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(COMMANDS))
    argv = [command]
    for flag, takes_value, choices in draw(st.lists(st.sampled_from(OPTIONS[command]), max_size=4)):
        if not takes_value:
            argv.append(flag)
            continue
        value = draw(st.sampled_from(choices) if choices and draw(st.booleans()) else values)
        argv += [f"{flag}={value}"] if draw(st.booleans()) else [flag, value]
    if draw(st.booleans()):
        argv.append("--json")
    return argv


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_with_every_hostile_value(command):
    """Exhaustive over the fixed hostile values: each option of ``command`` alone, then with --json."""
    violations = []
    for flag, takes_value, _ in OPTIONS[command]:
        for value in (F.HOSTILE_NUMBERS + F.HOSTILE_TEXT) if takes_value else [None]:
            for extra in ([], ["--json"]):
                argv = [command, flag, *([] if value is None else [value]), *extra]
                kind = F.check_cli(argv)
                if kind:
                    violations.append((kind, [a[:40] for a in argv]))
    assert not violations, violations[:10]


@SETTINGS
@given(command_lines())
def test_random_command_lines(argv):
    assert F.check_cli(argv) is None, argv


@SETTINGS
@given(st.lists(st.text(max_size=20), max_size=5))
def test_random_words(words):
    assert F.check_cli(words) is None, words
