"""What the checker knows at a point of the module: names' values, the class and function it is in.

``Scope`` is the base of the one checker: it holds the state, reports findings
through ``report`` and hands each event to the checks registered for it
(``shapecheck.lint.checks``), as pyflakes hands each node to its handler.
"""

from __future__ import annotations

import ast
import bisect
import itertools
import re
from dataclasses import dataclass, field
from typing import Iterator, Optional, Union

from shapecheck.vocabulary import AXES, SYNONYMS, canonical
from shapecheck.lint import messages as msg
from shapecheck.lint import names as nm
from shapecheck.lint.nodes import of_type, statement_blocks, subtree, unreachable_spans
from shapecheck.lint.tracking import Axis, Dim, Tensor, Value, height_label, int_label, name_label

Position = Union[ast.AST, tuple[int, int]]
_CALLEE_KIND = {"Softmax": "softmax", "Dropout": "all", "LayerNorm": "all", "RMSNorm": "all", "GELU": "all",
                "ReLU": "all", "Identity": "all", "Linear": "lead", "Conv1D": "lead", "LazyLinear": "lead",
                "Rearrange": "einops", "Reduce": "einops", "Conv1d": "conv", "Conv2d": "conv", "Conv3d": "conv"}


@dataclass
class ClassInfo:
    """A class of the module: ``self.x = ...`` assignments of its methods (first one wins)."""

    attrs: dict[str, ast.expr]
    has_forward: bool
    methods: dict[str, Union[ast.FunctionDef, ast.AsyncFunctionDef]] = field(default_factory=dict)
    widths: frozenset[str] = frozenset()  # attributes (and __init__ names) holding the width the head count splits
    head_counts: frozenset[str] = frozenset()  # attributes holding what splits the width into the head size
    name: str = ""
    init_params: tuple[str, ...] = ()  # ``__init__``'s parameters after ``self``, in order
    head_sizes: frozenset[str] = frozenset()  # what ``__init__`` multiplies the head count by (``heads * hidden``):
    # one head's size, whatever it is called
    multi_head: bool = True  # it splits the width by a count or reads a head count (``num_heads``, ``self.n_head``,
    # ``config.num_attention_heads``) for something; a class that reads none (one stored and never read included)
    # attends with one head, whose size is the width
    defines: frozenset[str] = frozenset()  # the name of every function its body defines (forward, decorated ones too)
    reassigned: frozenset[str] = frozenset()  # attributes stored more than once (``attrs`` holds the first store)


@dataclass
class FunctionInfo:
    node: Union[ast.FunctionDef, ast.AsyncFunctionDef]
    method_of: Optional[ClassInfo]
    params: frozenset[str]
    _assigned: Optional[frozenset[str]] = field(default=None)

    @property
    def assigned(self) -> frozenset[str]:
        if self._assigned is None:
            self._assigned = frozenset(
                n.id for n in ast.walk(self.node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            )
        return self._assigned


class Scope:
    """State and context of one module's analysis; ``findings`` holds the results in the order found."""

    def __init__(self, tree: ast.Module, path: str) -> None:
        self.path = path
        self.tree = tree
        self.memo: dict[str, object] = {}  # facts about the whole module, computed once by the checks
        self.findings: list[msg.Finding] = []
        self._seen: set[tuple[str, int, int]] = set()
        self.callees: dict[int, set[str]] = {}  # id(function node) -> the names it calls (the last dotted part)
        self.env: dict[str, Optional[Value]] = {}
        self.values: dict[int, Value] = {}
        self.scalars: dict[str, ast.expr] = {}
        self.cls: Optional[ClassInfo] = None
        self.func: Optional[FunctionInfo] = None
        self.in_class = False
        self.targets: tuple[str, ...] = ()
        self.following: list[ast.AST] = []  # helpers being run with a caller's tensors, innermost last
        self.uid = itertools.count(1)
        self.functional = nm.functional_imports(tree)
        self.einops_names = nm.imports_from(tree, "einops")
        self.left_out: frozenset[str] = frozenset()  # codes the run does not report (not selected, opt-in, ignored)

    def report(self, message: type[msg.Message], node: Position, *args: object) -> None:
        if self.following and message not in msg.LAYOUT_RULES:
            return  # inside a helper run with the caller's tensors only layout is trusted; the rest it may mean
        line, col = node if isinstance(node, tuple) else (node.lineno, node.col_offset)  # type: ignore[attr-defined]
        if self.unreached(line):
            return  # no path runs that line: whatever it computes changes no result
        if (message.code, line, col) not in self._seen:
            self._seen.add((message.code, line, col))
            self.findings.append(message.finding(self.path, line, col + 1, *args))

    def unreached(self, line: int) -> bool:
        """Whether ``line`` follows a ``return``, ``raise``, ``continue`` or ``break`` of its statement list."""
        if "unreachable" not in self.memo:
            self.memo["unreachable"] = unreachable_spans(self.tree)
        spans: list[tuple[int, int]] = self.memo["unreachable"]  # type: ignore[assignment]
        at = bisect.bisect_right(spans, (line, float("inf"))) - 1  # the spans are disjoint: the last to start by then
        return at >= 0 and spans[at][0] <= line <= spans[at][1]

    def emit(self, event: object) -> None:
        """Run every check registered for the event's type, but those whose every code the run leaves out."""
        for check in _checks().get(type(event), ()):
            if not (check.reports and check.reports <= self.left_out):
                check(self, event)

    # ---- context the checks ask about ---------------------------------------------------
    def source_text(self) -> Optional[tuple[str, list[int]]]:
        """The file's text and where each line starts in it, made once per file: a function's lines are searched
        in place (``pattern.search(text, start, end)``), with no copy and no walk."""
        lines = getattr(self, "lines", None)
        if lines is None:
            return None
        if "source_text" not in self.memo:
            text = "\n".join(lines)
            starts = [0]
            at = text.find("\n")
            while at != -1:
                starts.append(at + 1)
                at = text.find("\n", at + 1)
            starts.append(len(text) + 1)
            self.memo["source_text"] = (text, starts)
        return self.memo["source_text"]  # type: ignore[return-value]

    def mentions(self, node: ast.AST, pattern: re.Pattern) -> bool:
        """Whether ``node``'s lines match ``pattern`` (True when the text is unknown): a cheap first question."""
        source = self.source_text()
        if source is None:
            return True
        text, starts = source
        first, last = node.lineno, getattr(node, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]
        return pattern.search(text, starts[first - 1], starts[min(last, len(starts) - 1)]) is not None

    def class_attr(self, name: str) -> Optional[ast.expr]:
        return None if self.cls is None else self.cls.attrs.get(name)

    def is_weight(self, node: ast.AST) -> bool:
        """``self.w`` made by ``nn.Parameter(...)`` in this class: a learned tensor nobody scaled."""
        attr = nm.self_attr(node)
        made = self.class_attr(attr) if attr is not None else None
        return isinstance(made, ast.Call) and (nm.dotted(made.func) or "").split(".")[-1] == "Parameter"

    def in_module_method(self) -> Optional[str]:
        """The method's name inside a class that has a ``forward`` (an nn.Module), else None."""
        f = self.func
        return f.node.name if f is not None and f.method_of is not None and f.method_of.has_forward else None

    def is_untouched_param(self, name: str) -> bool:
        f = self.func
        return f is not None and name in f.params and name not in f.assigned

    def module_of(self, attr: str) -> tuple[Optional[str], Optional[ast.Call]]:
        """What ``self.attr(x)`` does to its input ("softmax", "all", "lead", "conv", "einops" or None), and the call that made it."""
        made = self.class_attr(attr)
        if isinstance(made, ast.Call) and isinstance(made.func, ast.Name) and made.func.id in self.file_classes():
            return None, made  # ``self.softmax = Softmax()`` of the file's own class: whatever it does, not torch's
        if isinstance(made, ast.Call):
            callee = (nm.dotted(made.func) or "").split(".")[-1]
            kind = _CALLEE_KIND.get(callee) or nm.module_kind(callee)
            if kind is not None:
                return kind, made
        return nm.module_kind(attr), None

    def class_info_of(self, node: ast.ClassDef) -> "ClassInfo":
        """``class_info`` of a class of the module, computed once per run."""
        key = f"class_info:{id(node)}"
        if key not in self.memo:
            self.memo[key] = class_info(node)
        return self.memo[key]  # type: ignore[return-value]

    def file_classes(self) -> frozenset[str]:
        """The names of the classes this file defines."""
        if "file_classes" not in self.memo:
            found, blocks = set(), [self.tree.body]  # statements only: no walk into expressions or functions
            while blocks:
                for stmt in blocks.pop():
                    if isinstance(stmt, ast.ClassDef):
                        found.add(stmt.name)
                    if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        blocks += statement_blocks(stmt)
            self.memo["file_classes"] = frozenset(found)
        return self.memo["file_classes"]  # type: ignore[return-value]

    def bind_scope(self, args: ast.arguments) -> None:
        params = all_args(args)
        names = [a.arg for a in params]
        for k, a in enumerate(params):
            if a.arg in ("self", "cls"):
                continue
            self.scalars.pop(a.arg, None)
            height = height_label(names, k)  # ``def f(x, d, h, w)``: a height, not a head count
            if height is not None:
                self.env[a.arg] = Dim(height)
                continue
            axes = jaxtyping_axes(a.annotation)
            self.env[a.arg] = Tensor(axes=axes, param=axes is None, uid=next(self.uid))


_CHECKS: Optional[dict[type, list]] = None


def _checks() -> dict[type, list]:
    """The registered checks by event type, imported on first use (the checks import this module), not at each
    event."""
    global _CHECKS
    if _CHECKS is None:
        from shapecheck.lint.checks import CHECKS

        _CHECKS = CHECKS
    return _CHECKS


def all_args(args: ast.arguments) -> list[ast.arg]:
    found = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    return found + [a for a in (args.vararg, args.kwarg) if a is not None]


def class_info(node: ast.ClassDef) -> ClassInfo:
    class_name = node.name
    init = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    attrs: dict[str, ast.expr] = {}
    reassigned: set[str] = set()
    methods: dict[str, Union[ast.FunctionDef, ast.AsyncFunctionDef]] = {}
    split: set[str] = set()
    counts: set[str] = set()
    sizes: set[str] = set()
    fed: list[ast.expr] = []  # what feeds a Linear's in_features in __init__ (``args.dim``, ``config.n_embd``)
    has_forward = False
    for stmt in node.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        has_forward = has_forward or stmt.name == "forward"
        if stmt.name != "forward" and not stmt.decorator_list:
            methods[stmt.name] = stmt
        for sub in (pair for statement in _statements(stmt.body) for pair in _pairs(statement)):
            if len(sub.targets) == 1:
                attr = nm.self_attr(sub.targets[0])
                if attr is not None:
                    if attr in attrs:
                        reassigned.add(attr)
                    attrs.setdefault(attr, sub.value)
            if stmt.name == "__init__":
                inner = subtree(sub.value)
                for part in (sub, *(n for n in inner if isinstance(n, ast.BinOp))):
                    name = _width_name(part)
                    if name is not None:
                        split.add(name)
                    factor = _per_head_factor(part) if isinstance(part, ast.BinOp) else None
                    if factor is not None:
                        sizes.add(factor)
                found = _head_size_split(sub)
                if found is not None:
                    split.add(found[0])
                    counts.add(found[1])
                fed += [c.args[0] for c in (inner if isinstance(sub.value, ast.Call) else ())
                        if isinstance(c, ast.Call) and c.args
                        and (nm.dotted(c.func) or "").split(".")[-1] == "Linear"
                        and isinstance(c.args[0], (ast.Name, ast.Attribute))]
    reads_heads = bool(counts) or _reads_head_count(node)  # a count that splits the width is read already
    if counts or reads_heads:
        # a multi-head class: the field its projections read is the width, whatever the attribute holding it is
        # called (``self.width = args.dim`` beside ``nn.Linear(args.dim, ...)``); spelled out only here
        fed_text = {ast.unparse(f) for f in fed}
        split |= {attr for attr, value in attrs.items() if isinstance(value, (ast.Attribute, ast.Name))
                  and ast.unparse(value) in fed_text and nm.self_attr(value) is None
                  and not _is_head_size(value)}  # a per-head layer reads the head size (``nn.Linear(dim_head, ...)``)
    widths = frozenset(split) | frozenset(attr for attr, value in attrs.items()
                                          if isinstance(value, ast.Name) and value.id in split)
    heads = frozenset(counts) | frozenset(attr for attr, value in attrs.items()
                                          if isinstance(value, ast.Name) and value.id in counts)
    params = tuple(a.arg for a in [*init.args.posonlyargs, *init.args.args, *init.args.kwonlyargs][1:]) if init else ()
    multi_head = bool(heads) or reads_heads
    head_sizes = frozenset(sizes) | frozenset(attr for attr, value in attrs.items()
                                              if isinstance(value, ast.Name) and value.id in sizes)
    defines = frozenset(s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return ClassInfo(attrs, has_forward, methods, widths, heads, class_name, params, head_sizes, multi_head, defines,
                     frozenset(reassigned))


_HEAD_COUNTS = frozenset(n for n in [*AXES, *SYNONYMS] if canonical(n) == "heads")  # what a head count is called


def _reads_head_count(node: ast.ClassDef) -> bool:
    """The class reads a head count (``num_heads``, ``self.n_head``, ``config.num_attention_heads``) for something: a
    view, a size, a module it builds. One only stored (``self.num_heads = num_heads``, never read) splits nothing:
    the class attends with one head, whose size is the width."""
    methods = [s for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
    rest = [n for s in node.body if s not in methods for n in subtree(s)]

    def typed(kind: type) -> list[ast.AST]:
        return [n for m in methods for n in of_type(m, kind)] + [n for n in rest if type(n) is kind]

    loads = [n for n in typed(ast.Name) if n.id in _HEAD_COUNTS and isinstance(n.ctx, ast.Load)] + \
        [n for n in typed(ast.Attribute) if n.attr in _HEAD_COUNTS and isinstance(n.ctx, ast.Load)]
    if not loads:
        return False
    stored = {id(n.value) for n in typed(ast.Assign) if len(n.targets) == 1  # type: ignore[attr-defined]
              and nm.self_attr(n.targets[0]) is not None}  # type: ignore[attr-defined]
    loads = [n for n in loads if id(n) not in stored]
    if any(type(n) is ast.Attribute or n.id != "h" for n in loads):  # type: ignore[attr-defined]
        return bool(loads)
    return bool(loads) and not any(_binds_height(n) for n in typed(ast.Tuple) + typed(ast.arguments))


def _binds_height(node: ast.AST) -> bool:
    """An unpacking or a parameter list that binds ``h`` right before ``w``: an image's height."""
    if isinstance(node, ast.Tuple) and isinstance(node.ctx, ast.Store):
        names = [e.id if isinstance(e, ast.Name) else None for e in node.elts]
    elif isinstance(node, ast.arguments):
        names = [a.arg for a in [*node.posonlyargs, *node.args, *node.kwonlyargs]]
    else:
        return False
    return any(height_label(names, k) is not None for k in range(len(names)))


def _head_size_split(node: ast.Assign) -> Optional[tuple[str, str]]:
    """``self.head_dim = hidden_size // num_attn_heads``: (the width, the head count), whatever they are called
    (the head count is what splits the width into the head size)."""
    target, value = node.targets[0] if len(node.targets) == 1 else None, node.value
    name = target.id if isinstance(target, ast.Name) else nm.self_attr(target) if target is not None else None
    if isinstance(value, ast.Call) and nm.dotted(value.func) == "int" and len(value.args) == 1:
        value = value.args[0]
    if name is None or name_label(name).atoms != ("d_head",) or not (
            isinstance(value, ast.BinOp) and isinstance(value.op, (ast.FloorDiv, ast.Div))):
        return None
    width = value.left.id if isinstance(value.left, ast.Name) else nm.self_attr(value.left)
    count = value.right.id if isinstance(value.right, ast.Name) else nm.self_attr(value.right)
    return (width, count) if width is not None and count is not None else None


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a body, nested ones included (not those of nested functions or classes)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for part in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, part, None)
            if inner:
                yield from _statements(inner)
        for handler in getattr(stmt, "handlers", ()):
            yield from _statements(handler.body)
        for case in getattr(stmt, "cases", ()):
            yield from _statements(case.body)


def _width_name(node: Union[ast.Assign, ast.BinOp]) -> Optional[str]:
    """A name that holds the model width, whatever it is called, found in ``__init__``: what the head count (or the
    head size) divides (``head_dim = dim // num_heads`` makes ``dim`` the width, and so ``self.dim = dim``), and
    the head count times a size (``self.all_head_size = self.num_heads * self.head_size``)."""
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, (ast.FloorDiv, ast.Div)) and (_is_head_count(node.right) or _is_head_size(node.right)):
            left = node.left
            return left.id if isinstance(left, ast.Name) else nm.self_attr(left)
        return None
    value = node.value
    if len(node.targets) == 1 and isinstance(value, ast.BinOp) and isinstance(value.op, ast.Mult) \
            and (_is_head_count(value.left) or _is_head_count(value.right)):
        target = node.targets[0]
        return target.id if isinstance(target, ast.Name) else nm.self_attr(target)
    return None


def _per_head_factor(node: ast.BinOp) -> Optional[str]:
    """``self.n_heads * self.hidden`` (either order): the size the head count multiplies, one head's."""
    if not isinstance(node.op, ast.Mult):
        return None
    for count, other in ((node.left, node.right), (node.right, node.left)):
        if _is_head_count(count):
            return other.id if isinstance(other, ast.Name) else nm.self_attr(other)
    return None


def _pairs(stmt: ast.stmt) -> list[ast.Assign]:
    """An assignment as one assignment per target: ``self.heads, self.d_head = heads, dim // heads`` is two."""
    if not isinstance(stmt, ast.Assign):
        return []
    if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Tuple) and isinstance(stmt.value, ast.Tuple) \
            and len(stmt.targets[0].elts) == len(stmt.value.elts) \
            and not any(isinstance(e, ast.Starred) for e in stmt.targets[0].elts + stmt.value.elts):
        return [ast.copy_location(ast.Assign(targets=[t], value=v), stmt)
                for t, v in zip(stmt.targets[0].elts, stmt.value.elts)]
    return [stmt]


def is_head_count(node: ast.expr, cls: Optional[ClassInfo]) -> bool:
    """``num_heads``, ``self.n_head`` or an attribute the class splits the width by, whatever its name."""
    name = node.id if isinstance(node, ast.Name) else nm.self_attr(node)
    return name is not None and (canonical(name) == "heads" or cls is not None and name in cls.head_counts)


def _is_head_count(node: ast.expr) -> bool:
    name = node.id if isinstance(node, ast.Name) else nm.self_attr(node)
    return name is not None and canonical(name) == "heads"


def _is_head_size(node: ast.expr) -> bool:
    name = node.id if isinstance(node, ast.Name) else nm.self_attr(node)
    return name is not None and name_label(name).atoms == ("d_head",)


def jaxtyping_axes(annotation: Optional[ast.expr]) -> Optional[tuple[Axis, ...]]:
    """The axes of ``Float[Tensor, "batch seq d_model"]`` (inside Optional[...] too); None if variadic."""
    node = annotation
    while isinstance(node, ast.Subscript) and (nm.dotted(node.value) or "").split(".")[-1] == "Optional":
        node = node.slice
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        node = node.left
    if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2):
        return None
    spec = node.slice.elts[1]
    if not (isinstance(spec, ast.Constant) and isinstance(spec.value, str)):
        return None
    axes: list[Axis] = []
    for token in spec.value.split():
        token = token.lstrip("#")
        if token.startswith(("*", "...")) or "=" in token:
            return None
        axes.append(None if token == "_" else int_label(int(token)) if token.isdigit() else name_label(token))
    return tuple(axes)
