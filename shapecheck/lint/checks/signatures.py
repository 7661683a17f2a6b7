"""Calls their callee cannot take (SC186): a keyword it has no parameter for (``mask=`` to xformers, which names it
``attn_bias``: sd-webui-text2video 67aaba9f), more positional arguments than it has, one parameter given twice, a
required one left out. Python raises TypeError on that call, on the path that reaches it only; pyflakes, which does
not match calls to definitions, says nothing.

The callee must be known for certain: a fused kernel whose origin is its package (``kernels.KERNELS``), a function of
``torch`` or ``torch.nn.functional`` given a keyword none of its overloads names (``torch.cat(..., dims=-2)``: GPT2
01045d6f; ``torch_keywords.TORCH_KEYWORDS``, only keywords are checked there), a function the
module defines once, the calling class's own method, a class of the file built by name (its ``__init__``), or a
module of the file that ``__init__`` builds into ``self.<name>`` once and the class calls (its ``forward``). A
decorator that may change the signature, a name bound twice, a subclass that overrides the method: not known.
"""

from __future__ import annotations

import ast
import difflib
import re
from typing import Iterable, Iterator, Optional, Union

from shapecheck.lint import events as ev
from shapecheck.lint import kernels
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.checks import on
from shapecheck.lint.kernels import Signature
from shapecheck.lint.nodes import of_type, statement_blocks
from shapecheck.lint.scope import Scope, all_args
from shapecheck.lint.torch_keywords import TORCH_KEYWORDS

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# decorators that leave the signature as written (the first argument aside)
_KEEPS = frozenset({"staticmethod", "classmethod", "torch.no_grad", "no_grad", "torch.inference_mode",
                    "torch.jit.script", "torch.jit.ignore", "torch.jit.unused", "torch.jit.export", "torch.compile",
                    "functools.lru_cache", "lru_cache", "functools.cache", "cache", "torch.enable_grad",
                    "torch.autocast", "abstractmethod", "abc.abstractmethod", "override", "typing.override"})


def _keywords_every_one_takes() -> dict[str, frozenset[str]]:
    """The last name of each function TORCH_KEYWORDS knows -> the keywords every function of that name takes: a call
    that names only those cannot be refused, whatever it calls (``x.sum(dim=1)``), and is not looked at further."""
    found: dict[str, frozenset[str]] = {}
    for name, keywords in TORCH_KEYWORDS.items():
        last, taken = name.rpartition(".")[2], frozenset(keywords.split())
        found[last] = found.get(last, taken) & taken
    return found


_TORCH_NAMES = _keywords_every_one_takes()
_NUMPY_NAMES = frozenset({"axis", "keepdims", "x", "a", "x1", "x2"})  # torch's parser takes them too; not shown


@on(ev.FunctionDone, reports=("SC186",))
def call_the_callee_refuses(scope: Scope, e: ev.FunctionDone) -> None:
    func = scope.func
    if func is None or func.node is not e.node or scope.following:
        return
    if "signatures" not in scope.memo:
        scope.memo["signatures"] = _Table(scope)
    table: _Table = scope.memo["signatures"]  # type: ignore[assignment]
    function: Function = e.node  # type: ignore[assignment]
    if id(function) not in table.tops:
        return  # a nested function: its calls are read with the function around it, whose names it sees
    owner = table.tops[id(function)]
    local: Optional[tuple[frozenset[str], frozenset[str]]] = None
    for call in of_type(function, ast.Call):
        if not table.candidate(call, owner):  # type: ignore[arg-type]
            continue
        if isinstance(call.func, ast.Attribute) and nm.self_attr(call.func) is not None:  # type: ignore[attr-defined]
            found = table.own_callee(call, owner, function)  # type: ignore[arg-type]
        else:
            local = local or _local_names(function)
            found = table.callee(call, owner, *local)  # type: ignore[arg-type]
        refused = _refusal(found[1], call) if found is not None else None  # type: ignore[arg-type]
        if refused is not None and id(call) not in _meant_to_fail(function):
            node, why = refused
            scope.report(msg.CallRefused, node, found[0], why, found[1].shown())  # type: ignore[index]


class _Table:
    """The file's definitions a call can be matched with for certain: read from the module's own statements, and
    from the whole module only once a call names a fused kernel."""

    def __init__(self, scope: Scope) -> None:
        self.scope, tree = scope, scope.tree
        statements = list(_module_statements(tree))  # inside ``try:`` and ``if`` blocks too
        top = _module_bindings(statements)
        registered = {a.id for d in _decorators(statements) if isinstance(d, ast.Call) for a in d.args
                      if isinstance(a, ast.Name)}  # ``@overload(new_set)``: what runs is registered elsewhere
        self.functions = {n.name: n for n in statements if isinstance(n, _FUNCTIONS) and top.get(n.name) == 1
                          and not _method_outside(n) and n.name not in registered}
        self.classes = {n.name: n for n in statements if isinstance(n, ast.ClassDef) and top.get(n.name) == 1}
        self.tops: dict[int, Optional[ast.ClassDef]] = {}  # the module's functions and its classes' methods ->
        # the class whose instance ``self`` is there (none in a static or class method)
        for stmt in statements:
            if isinstance(stmt, _FUNCTIONS):
                self.tops[id(stmt)] = None
            elif isinstance(stmt, ast.ClassDef):
                for m in stmt.body:
                    if isinstance(m, _FUNCTIONS):
                        self.tops[id(m)] = None if nm.decorated(m, "staticmethod", "classmethod") else stmt
        self.derived: dict[str, set[str]] = {}  # a class's name -> the methods classes deriving from it define
        for cls in self.classes.values():
            defined = {m.name for m in cls.body if isinstance(m, _FUNCTIONS)}
            for base in cls.bases:
                self.derived.setdefault(nm.dotted(base) or "", set()).update(defined)
        self._origins: Optional[dict[str, str]] = None
        self._replaced: dict[str, bool] = {}
        self._signatures: dict[tuple[int, int], Optional[Signature]] = {}  # (id(def), skip) -> what it takes

    def candidate(self, call: ast.Call, owner: Optional[ast.ClassDef]) -> bool:
        """A cheap first look: a call that may reach a callee this table knows."""
        func = call.func
        if isinstance(func, ast.Name):
            return func.id in self.functions or func.id in self.classes
        if not isinstance(func, ast.Attribute):
            return False
        if func.attr in kernels.KERNELS:
            return True
        taken = _TORCH_NAMES.get(func.attr)
        if taken is not None and any(k.arg is not None and k.arg not in taken for k in call.keywords):
            return True  # ``torch.cat(..., dims=-2)``, ``F.softmax(..., axis=-1)``: a keyword no such function takes
        if _super(func.value, owner) or isinstance(func.value, ast.Name) and func.value.id in self.classes:
            return True
        if owner is None or not isinstance(func.value, ast.Name) or func.value.id != "self":
            return False
        return _own(owner, func.attr) is not None or self._built_once(func.attr) is not None

    def callee(self, call: ast.Call, owner: Optional[ast.ClassDef], local: frozenset[str],
               imported: frozenset[str]) -> Optional[tuple[str, Signature]]:
        func = call.func
        if isinstance(func, ast.Name):
            if func.id in local or func.id in imported:
                return None
            if func.id in self.functions:
                return self._of(self.functions[func.id], func.id, skip=0)
            return self._built(func.id, "__init__") if func.id in self.classes else None
        if _super(func.value, owner):  # type: ignore[attr-defined]
            return self.inherited(owner, func.attr, skip=1)  # type: ignore[arg-type, attr-defined]
        base = func.value  # type: ignore[attr-defined]
        if isinstance(base, ast.Name) and base.id in self.classes and base.id not in local:
            return self.inherited(self.classes[base.id], func.attr, skip=0, own=True)  # type: ignore[attr-defined]
        dotted = nm.dotted(func)
        if dotted is not None and dotted.split(".")[0] not in local:
            return self._imported(dotted)
        return None

    def inherited(self, cls: ast.ClassDef, name: str, skip: int, own: bool = False) -> Optional[tuple[str, Signature]]:
        """What ``super().<name>`` reaches from ``cls`` (or ``<cls>.<name>``, ``own``, which looks in ``cls`` first):
        the method of the first class up the chain that defines it, where each class on the way has one base, a class
        of the file bound once, with no decorator or metaclass. ``skip``: 1 where Python passes ``self``."""
        seen = {cls.name}
        while True:
            if not own:
                bases = [nm.dotted(b) for b in cls.bases]
                if len(bases) != 1 or cls.keywords or bases[0] not in self.classes or bases[0] in seen:
                    return None
                cls = self.classes[bases[0]]  # type: ignore[index]
                seen.add(cls.name)
            own = False
            if cls.decorator_list or cls.keywords or self.replaced(name):
                return None
            bound = [s for s in cls.body if name in _bound_by(s)]
            if not bound:
                continue
            method = _own(cls, name)
            if method is None or len(bound) != 1:
                return None  # bound otherwise than by one ``def`` (``forward = _forward``, a property)
            if nm.decorated(method, "staticmethod") or name == "__new__":  # ``__new__``: static without saying so
                skip = 0
            elif nm.decorated(method, "classmethod"):
                skip = 1
            return self._of(method, f"{cls.name}.{name}", skip=skip)

    def own_callee(self, call: ast.Call, owner: Optional[ast.ClassDef],
                   function: Function) -> Optional[tuple[str, Signature]]:
        """``self.<name>(...)`` in a method whose first parameter is ``self``: the class's own method, or the
        ``forward`` of the class of the file ``self.<name>`` was built from."""
        attr = nm.self_attr(call.func)
        first = [*function.args.posonlyargs, *function.args.args][:1]
        if attr is None or owner is None or attr.startswith("__") or not first or first[0].arg != "self":
            return None  # (``self.__new__(cls, ...)`` and the like pass what Python passes implicitly elsewhere)
        method = _own(owner, attr)
        if method is not None:
            if self.replaced(attr) or attr in self.derived.get(owner.name, ()):
                return None  # replaced at run time, or overridden by a class deriving from this one
            return self._of(method, f"self.{attr}", skip=0 if nm.decorated(method, "staticmethod") else 1)
        made = self._built_once(attr)
        if made is None:
            return None
        cls = self.classes[made]
        entry = "__call__" if _own(cls, "__call__") is not None else "forward"
        if entry == "forward" and not cls.bases or self.replaced(entry):
            return None  # not a torch module (calling it is not its forward), or its entry replaced
        found = self._built(made, entry)
        return (f"self.{attr}", found[1]) if found else None

    def replaced(self, name: str) -> bool:
        """Something in the file stores into an attribute of that name (``model.forward = model.forward_unpadded``):
        the method may not be what the class defines. Read from the text: one search a name."""
        if name not in self._replaced:
            found = self.scope.source_text()
            pattern = re.compile(rf"\.\s*{re.escape(name)}\s*=(?!=)")
            self._replaced[name] = found is None or pattern.search(found[0]) is not None
        return self._replaced[name]

    def _built_once(self, attr: str) -> Optional[str]:
        """The class of the file the calling class builds into ``self.<attr>``, by its only store there."""
        cls = self.scope.cls
        if cls is None or attr in cls.reassigned:
            return None
        made = cls.attrs.get(attr)
        if isinstance(made, ast.Call) and isinstance(made.func, ast.Name) and made.func.id in self.classes:
            return made.func.id
        return None

    def _built(self, name: str, entry: str) -> Optional[tuple[str, Signature]]:
        cls = self.classes[name]
        if cls.decorator_list or cls.keywords or _own(cls, "__new__") is not None:
            return None  # a dataclass, a metaclass, ``__new__``: what the call binds to is not ``__init__`` alone
        method = _own(cls, entry)
        if method is None:
            return None  # inherited from a base this check does not read
        return self._of(method, f"{name}.{entry}" if entry != "__init__" else name, skip=1)

    def _of(self, function: Function, shown: str, skip: int) -> Optional[tuple[str, Signature]]:
        """(how the callee is shown, its signature), each definition's signature made once a file."""
        key = (id(function), skip)
        if key not in self._signatures:
            self._signatures[key] = _signature(function, skip)
        found = self._signatures[key]
        return (shown, found) if found is not None else None

    def _imported(self, dotted: str) -> Optional[tuple[str, Signature]]:
        """A fused kernel's signature, or the keywords a function of torch takes, by where the call's name was
        imported from (the file's imports read once, and only for a call that may reach one)."""
        if self._origins is None:
            self._origins = _origins(self.scope.tree)
        head, _, rest = dotted.partition(".")
        origin = self._origins.get(head)
        if origin is None:
            return None
        full = f"{origin}.{rest}" if rest else origin
        module, _, name = full.rpartition(".")
        if name in kernels.KERNELS and module in kernels.ORIGINS[name]:
            return f"{module}.{name}", kernels.KERNELS[name]
        if full in TORCH_KEYWORDS:
            return full, _keywords_only(TORCH_KEYWORDS[full])
        return None


def _keywords_only(names: str) -> Signature:
    """A signature that checks only the keywords of a call (its overloads differ in what they take by position)."""
    keywords = tuple(names.split())
    shown = [k for k in keywords if k not in _NUMPY_NAMES]
    return Signature((), 0, keyword_only=keywords, varargs=True,
                     text=f"the keywords {', '.join(shown)}" if shown else "no keyword")


def _decorators(statements: Iterable[ast.stmt]) -> Iterator[ast.expr]:
    """The decorators of the module's functions and classes and of their methods."""
    for stmt in statements:
        if isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
            yield from stmt.decorator_list
        if isinstance(stmt, ast.ClassDef):
            yield from (d for m in stmt.body if isinstance(m, _FUNCTIONS) for d in m.decorator_list)


def _origins(tree: ast.Module) -> dict[str, str]:
    """Local name -> the dotted name it was imported as, from every import of the file (inside functions too); a name
    imported from two places, or bound otherwise than to None, has none."""
    seen: dict[str, set[str]] = {}
    for kind in (ast.Import, ast.ImportFrom):
        for node in of_type(tree, kind):
            for alias in node.names:  # type: ignore[attr-defined]
                if isinstance(node, ast.ImportFrom):
                    if node.level or node.module is None:
                        continue
                    local, origin = alias.asname or alias.name, f"{node.module}.{alias.name}"
                elif alias.asname:
                    local, origin = alias.asname, alias.name
                else:
                    local = origin = alias.name.split(".")[0]
                seen.setdefault(local, set()).add(origin)
    rebound = {n.id for a in of_type(tree, ast.Assign) if not _none(a.value)  # type: ignore[attr-defined]
               for t in a.targets for n in ast.walk(t) if isinstance(n, ast.Name)}  # type: ignore[attr-defined]
    rebound |= {d.name for kind in (*_FUNCTIONS, ast.ClassDef) for d in of_type(tree, kind)}  # type: ignore
    return {local: next(iter(found)) for local, found in seen.items() if len(found) == 1 and local not in rebound}


def _signature(function: Function, skip: int) -> Optional[Signature]:
    if not all((nm.dotted(d.func if isinstance(d, ast.Call) else d) or "") in _KEEPS for d in function.decorator_list):
        return None
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body or len(body) == 1 and isinstance(body[0], (ast.Raise, ast.Pass)):
        return None  # a stub: one that raises whatever it is given (``raise NotImplementedError``), or a name that
        # stands for an implementation registered elsewhere (numba's ``@overload`` of a ``pass`` function)
    args = function.args
    positional = [a.arg for a in [*args.posonlyargs, *args.args]][skip:]
    return Signature(
        positional=tuple(positional), required=max(0, len(positional) - len(args.defaults)),
        keyword_only=tuple(a.arg for a in args.kwonlyargs),
        keyword_required=frozenset(a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None),
        only_positional=max(0, len(args.posonlyargs) - skip), varargs=args.vararg is not None,
        varkw=args.kwarg is not None)


def _refusal(sig: Signature, call: ast.Call) -> Optional[tuple[ast.AST, str]]:
    """The first thing in the call Python will not bind to the signature, with where it is and what it is."""
    starred = any(isinstance(a, ast.Starred) for a in call.args)
    spread = any(k.arg is None for k in call.keywords)
    given = len(call.args)
    if not starred and not sig.varargs and given > len(sig.positional):
        return call.args[len(sig.positional)], (
            f"takes {len(sig.positional)} positional arguments, and the call gives {given}")
    named = set(sig.positional[sig.only_positional:]) | set(sig.keyword_only)
    for kw in call.keywords:
        if kw.arg is None:
            continue
        if kw.arg not in named:
            if sig.varkw:
                continue
            close = difflib.get_close_matches(kw.arg, sorted(named), n=1)
            return kw.value, f"has no parameter '{kw.arg}'" + (f" (did you mean '{close[0]}'?)" if close else "")
        if not starred and kw.arg in sig.positional[:given]:
            return kw.value, f"gets '{kw.arg}' twice, by position and by keyword"
    if starred or spread:
        return None
    keywords = {k.arg for k in call.keywords}
    missing = [p for p in sig.positional[given:sig.required] if p not in keywords]
    missing += sorted(sig.keyword_required - keywords)
    if missing:
        return call, f"needs '{missing[0]}', which the call does not give"
    return None


def _method_outside(function: Function) -> bool:
    """A module function written as a method (``self`` or ``cls`` first, ``@staticmethod``): bound to a class at
    run time, not called by its name as written."""
    first = [*function.args.posonlyargs, *function.args.args][:1]
    return bool(first and first[0].arg in ("self", "cls")) or nm.decorated(function, "staticmethod", "classmethod")


_FAILS = re.compile(r"raises|Raises|Error|Exception")  # ``pytest.raises``, ``self.assertRaises``, ``assertTypingError``


def _meant_to_fail(function: Function) -> set[int]:
    """The calls a test writes to fail: inside ``with pytest.raises(...):`` (or any context named for an error), or
    inside a lambda handed to ``raises(TypeError, lambda: ...)``."""
    found: set[int] = set()
    for kind in (ast.With, ast.AsyncWith):
        for block in of_type(function, kind):
            if any(isinstance(i.context_expr, ast.Call) and _FAILS.search(nm.dotted(i.context_expr.func) or "")
                   for i in block.items):  # type: ignore[attr-defined]
                found |= {id(c) for stmt in block.body for c in ast.walk(stmt) if isinstance(c, ast.Call)}  # type: ignore
    for call in of_type(function, ast.Call):
        if _FAILS.search(nm.dotted(call.func) or ""):  # type: ignore[attr-defined]
            found |= {id(c) for a in call.args if isinstance(a, ast.Lambda)  # type: ignore[attr-defined]
                      for c in ast.walk(a) if isinstance(c, ast.Call)}
    return found


def _super(node: ast.expr, owner: Optional[ast.ClassDef]) -> bool:
    """``super()`` or ``super(Owner, self)`` in a method of ``owner``."""
    if owner is None or not isinstance(node, ast.Call) or nm.dotted(node.func) != "super":
        return False
    return not node.args or len(node.args) == 2 and isinstance(node.args[0], ast.Name) and node.args[0].id == owner.name


def _own(cls: ast.ClassDef, name: str) -> Optional[Function]:
    found = [s for s in cls.body if isinstance(s, _FUNCTIONS) and s.name == name]
    return found[0] if len(found) == 1 else None


def _local_names(function: Function) -> tuple[frozenset[str], frozenset[str]]:
    """Every name the function (and the functions inside it) binds: parameters, stores, definitions; and apart,
    what it imports (a kernel imported there is read with the file's imports, ``_origins``)."""
    found = {a.arg for f in [function, *of_type(function, ast.FunctionDef), *of_type(function, ast.AsyncFunctionDef),
                             *of_type(function, ast.Lambda)] for a in all_args(f.args)}  # type: ignore[attr-defined]
    found |= {n.id for n in of_type(function, ast.Name) if not isinstance(n.ctx, ast.Load)}  # type: ignore
    found |= {d.name for kind in (*_FUNCTIONS, ast.ClassDef) for d in of_type(function, kind)
              if d is not function}  # type: ignore[attr-defined]
    imported = {(a.asname or a.name).split(".")[0] for kind in (ast.Import, ast.ImportFrom)
                for i in of_type(function, kind) for a in i.names}  # type: ignore[attr-defined]
    return frozenset(found), frozenset(imported)


def _module_statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """The module's statements, those inside its ``if``/``try``/``with`` blocks too (not inside functions or
    classes)."""
    blocks = [tree.body]
    while blocks:
        for stmt in blocks.pop():
            yield stmt
            if not isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
                blocks += statement_blocks(stmt)


def _module_bindings(statements: Iterable[ast.stmt]) -> dict[str, int]:
    """How many statements of the module bind each name (definitions, imports, assignments, loops, ``with``)."""
    count: dict[str, int] = {}
    for stmt in statements:
        for name in _bound_by(stmt):
            count[name] = count.get(name, 0) + 1
    return count


def _bound_by(stmt: ast.stmt) -> list[str]:
    """The names one statement binds where it stands (a module's or a class body's): a definition, an import, an
    assignment's or a loop's targets, ``with ... as`` names."""
    if isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names]
    targets = [*getattr(stmt, "targets", []), *([stmt.target] if hasattr(stmt, "target") else []),
               *(i.optional_vars for i in getattr(stmt, "items", []) if i.optional_vars is not None)]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def _none(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and value.value is None
