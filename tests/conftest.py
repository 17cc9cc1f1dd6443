"""Shared test settings: hypothesis without wall-clock deadlines (2 shared cores make timings noisy), and in CI
no test file may vanish by a module-level skip (for example ``pytest.importorskip`` of a torch submodule that
moved): the skip becomes a failure naming the file and the reason."""

import pytest
from browser_support import in_ci
from hypothesis import HealthCheck, settings

settings.register_profile("aihw", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("aihw")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and isinstance(collector, pytest.Module) and in_ci():
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = (f"{collector.nodeid}: the whole file was skipped ({reason}); in CI a module-level skip "
                           "is a failure, since it would hide every test in the file")
