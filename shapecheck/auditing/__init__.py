"""``shapecheck audit``'s library: a model's parameters against the attention formulas.

    from shapecheck.auditing import audit
    result = audit(model)            # AuditResult: components, shared, frozen, dead, totals
    result.clean                     # no formula mismatch and no dead parameter

The package is ``auditing`` so that ``shapecheck.audit`` can be the function.
"""

from shapecheck.auditing.api import LIVENESS_LIMIT, audit
from shapecheck.auditing.inputs import Inputs
from shapecheck.auditing.result import AuditResult, Component, Difference, Liveness, Parameter, SharedGroup, Totals

__all__ = [
    "LIVENESS_LIMIT",
    "AuditResult",
    "Component",
    "Difference",
    "Inputs",
    "Liveness",
    "Parameter",
    "SharedGroup",
    "Totals",
    "audit",
]
