"""A module that forks while it is imported: both processes go on running shapecheck."""

import os

from _fixture_base import Attention

os.fork()


class Forks(Attention):
    pass
