"""Hypothesis profiles: a fast default for CI, a thorough one on request.

    HYPOTHESIS_PROFILE=thorough pytest
"""

import os
import signal

import pytest
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


def _torchvision_cpu_ops() -> None:
    """Where the README's test command ran ``tests/support/torchvision_cpu_ops.py`` the environment already
    does this; otherwise (pytest run in an environment set up by hand) this process at least does."""
    import importlib.util
    import pathlib

    if importlib.util.find_spec("_torchvision_cpu_ops") is not None:
        return  # the .pth has installed it in every process
    path = pathlib.Path(__file__).parent / "support" / "torchvision_cpu_ops.py"
    spec = importlib.util.spec_from_file_location("_torchvision_cpu_ops_tests", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.install()


_torchvision_cpu_ops()


@pytest.fixture
def ctrl_c():
    """Ctrl-C raises KeyboardInterrupt in this process, as at a terminal: a test run started in the background
    (``cmd &`` in a script, nohup) inherits SIGINT ignored, and the tests that send it would see nothing."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
