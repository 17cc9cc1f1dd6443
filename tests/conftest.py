"""Shared test settings: hypothesis without wall-clock deadlines (2 shared cores make timings noisy)."""

from hypothesis import HealthCheck, settings

settings.register_profile("aihw", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("aihw")
