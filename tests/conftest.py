"""Hypothesis profiles: a fast default for CI, a thorough one on request.

    HYPOTHESIS_PROFILE=thorough pytest
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
settings.register_profile("thorough", max_examples=300, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
