"""What ``shapecheck/lint/torch_keywords.py`` is written from: the keyword names each public function of
``torch`` and ``torch.nn.functional`` accepts, read from the installed torch.

A function bound in C (``torch.cat``) takes what any of its overloads in torch's type stubs names
(``torch/_C/_VariableFunctions.pyi``, ``torch/nn/functional.pyi``), and torch's argument parser also takes NumPy's
names for some (``axis`` for ``dim``, ``keepdims`` for ``keepdim``, ``x``/``a``/``x1`` for ``input``, ``x2`` for
``other``). A Python function takes what its signature names; one that takes ``**kwargs`` is left out (any keyword
binds). ``tests/lint/test_checks.py`` holds the table to this; to write it again::

    python -m tests.support.torch_keywords > shapecheck/lint/torch_keywords.py
"""

from __future__ import annotations

import ast
import inspect
import os
import textwrap
import types

_NUMPY_NAMES = {"dim": ("axis",), "keepdim": ("keepdims",), "input": ("x", "a", "x1"), "other": ("x2",)}


def _stub_keywords(path: str) -> dict[str, set[str]]:
    """Function name -> every parameter any of its overloads in the stub names (``self``/varargs aside)."""
    found: dict[str, set[str]] = {}
    for node in ast.parse(open(path, encoding="utf-8").read()).body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            args = node.args
            names = {a.arg for a in [*args.args, *args.kwonlyargs]}
            if args.kwarg is not None:
                found[node.name] = {"**"}
            elif "**" not in found.get(node.name, ()):
                found.setdefault(node.name, set()).update(names)
    return found


def _with_numpy_names(names: set[str]) -> set[str]:
    return names | {alias for name in names for alias in _NUMPY_NAMES.get(name, ())}


def installed() -> dict[str, frozenset[str]]:
    """'torch.cat' -> the keywords the installed torch's ``torch.cat`` accepts (functions taking ``**kwargs`` left
    out)."""
    import torch
    import torch.nn.functional as F

    root = os.path.dirname(torch.__file__)
    stubs = {"torch": _stub_keywords(os.path.join(root, "_C", "_VariableFunctions.pyi")),
             "torch.nn.functional": _stub_keywords(os.path.join(root, "nn", "functional.pyi"))}
    table: dict[str, frozenset[str]] = {}
    for module_name, module in (("torch", torch), ("torch.nn.functional", F)):
        for name in dir(module):
            value = getattr(module, name)
            if name.startswith("_") or isinstance(value, type) or not callable(value):
                continue
            if isinstance(value, types.FunctionType):
                try:
                    params = inspect.signature(value).parameters.values()
                except (TypeError, ValueError):
                    continue
                if any(p.kind is p.VAR_KEYWORD for p in params):
                    continue
                names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
            elif isinstance(value, types.BuiltinFunctionType) and name in stubs[module_name]:
                names = stubs[module_name][name]
                if "**" in names:
                    continue
                names = _with_numpy_names(names)
            else:
                continue
            table[f"{module_name}.{name}"] = frozenset(names)
    return table


def written(table: dict[str, frozenset[str]]) -> str:
    """The table as the module lint reads."""
    import torch

    rows = "\n".join(f"    {name!r}: {' '.join(sorted(kws))!r}," for name, kws in sorted(table.items()))
    version = torch.__version__.split("+")[0]
    head = textwrap.dedent(f'''\
        """The keywords each public function of ``torch`` and ``torch.nn.functional`` accepts: a keyword none of them
        names is a TypeError (SC186). Written from torch {version} by ``tests/support/torch_keywords.py`` (an
        overloaded function takes what any overload names, with NumPy's names torch's parser also takes: ``axis``,
        ``keepdims``); a test holds it to the installed torch. Functions that take ``**kwargs`` are not listed. Lint
        never imports torch: it reads this table.
        """

        TORCH_KEYWORDS: dict[str, str] = {{
        ''')
    return head + rows + "\n}\n"


if __name__ == "__main__":
    print(written(installed()), end="")
