"""The planted-defect modules, loaded from their file as the CLI loads a target."""

import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PLANTED = os.path.join(HERE, "planted.py")
SEED002 = os.path.join(HERE, "..", "corpus", "seeds", "seed002_multihead.py")


@pytest.fixture(scope="session")
def planted():
    spec = importlib.util.spec_from_file_location("audit_planted", PLANTED)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def planted_path():
    return PLANTED


@pytest.fixture(scope="session")
def seed002_path():
    return SEED002
