"""``shapecheck audit``'s library: a model's parameters against the attention formulas.

    from shapecheck.auditing import audit
    result = audit(model)            # AuditResult: components, shared, frozen, dead, totals
    result.clean                     # True: every check ran and passed; None: counts clean, liveness not run;
                                     # False: a formula mismatch or a dead parameter
    audit_target("attn.py:MyAttention")   # built with its constructor's own defaults, probed small

The package is ``auditing`` so that ``shapecheck.audit`` can be the function.
"""

from shapecheck.auditing.api import LIVENESS_LIMIT, audit
from shapecheck.auditing.inputs import Inputs
from shapecheck.auditing.result import AuditResult, Component, Difference, Liveness, Parameter, SharedGroup, Totals
from shapecheck.auditing.targets import audit_preset, audit_target

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
    "audit_preset",
    "audit_target",
]
