"""Every lint check, registered for the event it reads (``shapecheck.lint.events``).

A check is a plain function ``check(scope, event)`` that reports through
``scope.report(MessageClass, node, *args)``; ``@on(EventType)`` registers it.
To add a rule: a message class in ``messages.py`` (and in ``RULES``), a check
here in the module of its topic, a buggy file and a clean twin in ``tests/lint/corpus``.
"""

from __future__ import annotations

from typing import Callable

CHECKS: dict[type, list[Callable]] = {}


def on(event: type, reports: tuple[str, ...] = ()) -> Callable[[Callable], Callable]:
    """Register the decorated function as a check of ``event``. ``reports``, when given, names every code the
    check can report (tests/lint/test_checks.py holds it to that): a run that selects none of them skips it."""

    def register(check: Callable) -> Callable:
        check.reports = frozenset(reports)  # type: ignore[attr-defined]
        CHECKS.setdefault(event, []).append(check)
        return check

    return register


from shapecheck.lint.checks import (  # noqa: E402  (registers them)
    arguments, binary_masks, broadcast, cache, caches, dead, devices, dropout, expand, exponent, flow, forwarding, fused,
    layers, mask_uses, masks, positions, reshape, siblings, signatures, slices, softmax, state, unbound, values,
)

__all__ = ["CHECKS", "on", "arguments", "binary_masks", "broadcast", "cache", "caches", "dead", "devices", "dropout",
           "expand", "exponent", "flow", "forwarding", "fused", "layers", "mask_uses", "masks", "positions", "reshape",
           "siblings", "signatures", "slices", "softmax", "state", "unbound", "values"]
