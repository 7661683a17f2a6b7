"""The one formula printer: every output shows a closed form the same way.

``show(4*d_model**2 + 4*d_model)`` -> ``4·d_model² + 4·d_model``: products with
``·``, integer powers as superscripts (``S²``, ``d_model³``, ``h^12``), minus as
``−``. It takes a sympy expression, an int, or formula text that sympy printed
(``"2*B*S**2*d_k*h"``), so libraries may keep formulas as sympy objects or as
their ``str`` and every renderer prints them alike.
"""

from __future__ import annotations

import re
from typing import Any

_SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def show(expr: Any) -> str:
    """A formula for people: ``2*B*S**2*d_k*h`` -> ``2·B·S²·d_k·h``; an int with thousands separators."""
    if isinstance(expr, bool):
        return str(expr)
    if isinstance(expr, int):
        return f"{expr:,}"
    text = expr if isinstance(expr, str) else _sympy_text(expr)
    text = re.sub(r"\*\*(\d+)", lambda m: m.group(1).translate(_SUPERSCRIPTS), text)
    text = re.sub(r"\*\*\(?([^()\s*]+)\)?", r"^\1", text)
    return text.replace("*", "·").replace(" - ", " − ")


def signed(expr: Any) -> str:
    """An amount with its sign: ``−d_model``, ``+(d_model² + d_model)``, ``−(3·d_model)``."""
    import sympy

    expr = sympy.expand(expr)
    negative = expr.could_extract_minus_sign()
    body = show(-expr if negative else expr)
    if " + " in body or " − " in body:
        body = f"({body})"
    return ("−" if negative else "+") + body


def _sympy_text(expr: Any) -> str:
    import sympy

    return str(sympy.expand(expr)) if isinstance(expr, sympy.Expr) else str(expr)
