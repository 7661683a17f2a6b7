"""Modules that end the run: sys.exit / os._exit / KeyboardInterrupt in the constructor or forward."""

import os
import sys

from _fixture_base import Attention


class SysExitInForward(Attention):
    def forward(self, x):
        sys.exit(0)


class SysExitInInit(Attention):
    def __init__(self, d_model: int = 16, heads: int = 2) -> None:
        sys.exit(0)


class OsExitInForward(Attention):
    def forward(self, x):
        os._exit(0)


class OsExitInInit(Attention):
    def __init__(self, d_model: int = 16, heads: int = 2) -> None:
        os._exit(0)


class RaisesKeyboardInterrupt(Attention):
    def forward(self, x):
        raise KeyboardInterrupt


class ReturnsNone(Attention):
    def forward(self, x):
        self.qkv(x)
        return None
