"""Modules that never return: from the constructor, or from forward."""

import time

from _fixture_base import Attention


class HangsInForward(Attention):
    def forward(self, x):
        while True:
            time.sleep(0.05)


class HangsInInit(Attention):
    def __init__(self, d_model: int = 16, heads: int = 2) -> None:
        super().__init__(d_model, heads)
        while True:
            pass


class Fine(Attention):
    pass
