"""The one formula printer."""

import sympy

from shapecheck.display import show, signed


def test_sympy_and_text_formulas_print_alike():
    B, S, d_k, h = sympy.symbols("B S d_k h")
    expr = 2 * B * S**2 * d_k * h
    assert show(expr) == show(str(expr)) == "2·B·S²·d_k·h"


def test_powers_products_minus_and_integers():
    d_model, h = sympy.symbols("d_model h")
    assert show(4 * d_model**2 + 4 * d_model) == "4·d_model² + 4·d_model"
    assert show(h**12) == "h¹²"
    assert show(d_model - h) == "d_model − h"
    assert show(1234567) == "1,234,567"


def test_signed_amounts():
    d_model = sympy.Symbol("d_model")
    assert signed(-d_model) == "−d_model"
    assert signed(d_model**2 + d_model) == "+(d_model² + d_model)"
