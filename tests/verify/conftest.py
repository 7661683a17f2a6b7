"""Paths and small option sets shared by the verify tests."""

import os

from hypothesis import settings

HERE = os.path.dirname(os.path.abspath(__file__))
MUTANTS = os.path.join(HERE, "mutants")
SEEDS = os.path.join(HERE, "..", "corpus", "seeds")

# The profile's example count (15 by default, more under HYPOTHESIS_PROFILE=thorough), never raised here.
EXAMPLES = settings().max_examples
# Tiny shapes keep every module call in the microseconds.
SMALL = {"max_heads": 3, "max_d_head": 3, "max_batch": 3, "max_seq": 4}


def mutant(name: str) -> str:
    return os.path.join(MUTANTS, f"{name}.py") + ":Attention"
