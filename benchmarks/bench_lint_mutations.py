"""Detection rate of ``shapecheck lint`` on canonical attention bugs injected into real code.

Every attention forward of the real corpus (the installed packages' sources listed in
``tests/lint/real_corpus.py``; a function that computes a softmax of a product, or calls
SDPA) gets one bug at a time, where the function has the spot that bug needs:

    softmax_axis      softmax(..., dim=-1) -> dim=1
    merge_no_transpose  x.transpose(1, 2)[.contiguous()].view/reshape(...) -> x[.contiguous()].view/reshape(...)
    split_no_transpose  x.view(b, t, h, d).transpose(1, 2) -> x.view(b, h, t, d)
    scale_removed     scores * scale (or / sqrt(d)), before the softmax or fused call -> scores (not where the
                      only attention is a fused call with its default 1/sqrt(d) scale: the factor corrects that)
    scale_by_width    the scale factor -> self.<width> ** -0.5 (the class's embed_dim, hidden_size, ...)
    sdpa_dropout      dropout_p=(p if self.training else 0.0) -> dropout_p=p
    mask_after_softmax  s = s.masked_fill(m, v) (or s = s + mask, or the ``if`` block holding it) moved to after
                      p = softmax(s), applied to p

A bug counts as detected when lint reports an error or warning on the mutated module that
it does not report on the same module unmutated. Each mutated function is linted in a
module holding the file's imports, module-level code and functions, and its own class.

    python benchmarks/bench_lint_mutations.py [--jobs N] [--limit FILES] [--per-file] [--extend-select SC102]

SC102 (unscaled scores) is opt-in: without ``--extend-select SC102`` a removed scaling is found only where
another rule notices it.
"""

from __future__ import annotations

import argparse
import ast
import copy
import importlib.util
import os
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Callable, Iterator, Optional

from shapecheck.lint import lint_source
from shapecheck.lint.config import LintConfig

ROOT = Path(__file__).resolve().parents[1]
HEAD_COUNTS = ("num_heads", "heads", "n_head", "n_heads", "num_attention_heads", "nhead", "h")
WIDTHS = ("embed_dim", "hidden_size", "d_model", "n_embd", "dim", "inner_dim", "all_head_size", "hidden_dim")


def real_corpus():
    spec = importlib.util.spec_from_file_location("real_corpus", ROOT / "tests" / "lint" / "real_corpus.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


# ---- finding the attention forwards -------------------------------------------------------
def _calls(node: ast.AST, names: set[str]) -> list[ast.Call]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Call) and _name(n.func) in names]


def _name(func: ast.AST) -> Optional[str]:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def is_attention(func: ast.AST) -> bool:
    if _calls(func, {"scaled_dot_product_attention"}):
        return True
    products = any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult) for n in ast.walk(func)) or \
        _calls(func, {"matmul", "bmm", "baddbmm", "einsum"})
    return bool(products) and bool(_calls(func, {"softmax", "Softmax"}))


def attention_functions(tree: ast.Module) -> Iterator[tuple[Optional[ast.ClassDef], ast.FunctionDef]]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and is_attention(node):
            yield None, node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and is_attention(item):
                    yield node, item


def context_module(tree: ast.Module, cls: Optional[ast.ClassDef], func: ast.FunctionDef) -> ast.Module:
    """The file's imports, module-level statements and functions, and the function's own class."""
    body = [n for n in tree.body if not isinstance(n, ast.ClassDef)]
    if cls is not None:
        body.append(cls)
    return ast.Module(body=body, type_ignores=[])


# ---- the mutations: each edits one function in place and returns True when it applied ------------
def _replace(root: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for parent in ast.walk(root):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    if item is old:
                        value[i] = new


def softmax_axis(func: ast.FunctionDef, cls: Optional[ast.ClassDef]) -> bool:
    for call in _calls(func, {"softmax", "log_softmax"}):
        for kw in call.keywords:
            if kw.arg == "dim" and _int(kw.value) == -1:
                kw.value = ast.Constant(1)
                return True
        positional = 1 if isinstance(call.func, ast.Attribute) and _name(call.func.value) in ("F", "functional", "torch") else 0
        if len(call.args) > positional and _int(call.args[positional]) == -1:
            call.args[positional] = ast.Constant(1)
            return True
    return False


def _int(node: ast.AST) -> Optional[int]:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return -node.operand.value if isinstance(node.operand.value, int) else None
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, int) else None


def _is_head_swap(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    dims = [_int(a) for a in node.args]
    return (node.func.attr == "transpose" and sorted(d for d in dims if d is not None) == [1, 2]) or \
        (node.func.attr == "permute" and dims == [0, 2, 1, 3])


def merge_no_transpose(func: ast.FunctionDef, cls: Optional[ast.ClassDef]) -> bool:
    for call in _calls(func, {"view", "reshape"}):
        receiver = call.func.value  # type: ignore[attr-defined]
        holder: ast.AST = call.func
        if isinstance(receiver, ast.Call) and _name(receiver.func) == "contiguous":
            holder, receiver = receiver.func, receiver.func.value  # type: ignore[attr-defined]
        if _is_head_swap(receiver) and not _one_query(call):
            holder.value = receiver.func.value  # type: ignore[attr-defined]
            return True
    return False


def _one_query(merge: ast.Call) -> bool:
    """A merge into one query position (``reshape(B, 1, C)``, ``reshape(B, C)``: class-token and pooling attention):
    the transpose swaps the heads with an axis of size 1, which moves no element, so leaving it out is no bug."""
    args = merge.args
    if any(isinstance(a, ast.Starred) for a in args):
        return False
    return len(args) >= 3 and _int(args[1]) == 1 or len(args) == 2 and _int(args[1]) is None


def split_no_transpose(func: ast.FunctionDef, cls: Optional[ast.ClassDef]) -> bool:
    for call in _calls(func, {"transpose", "permute"}):
        inner = call.func.value  # type: ignore[attr-defined]
        if _is_head_swap(call) and isinstance(inner, ast.Call) and _name(inner.func) in ("view", "reshape") \
                and len(inner.args) == 4 and not any(isinstance(a, ast.Starred) for a in inner.args) \
                and _int(inner.args[1]) != 1:  # view(B, 1, h, d).transpose(1, 2) == view(B, h, 1, d): no bug
            inner.args[1], inner.args[2] = inner.args[2], inner.args[1]
            _replace(func, call, inner)
            return True
    return False


def _scale_factor(func: ast.FunctionDef) -> Optional[tuple[ast.BinOp, ast.expr, ast.expr]]:
    """(the BinOp, the tensor side, the factor side) of the first scaling of scores or queries: one written
    before the (last) softmax or fused call of the attention (an output rescale after it scales no scores)."""
    attends = [c.lineno for c in _calls(func, {"softmax", "Softmax"}) + _fused_calls(func)]
    last = max(attends) if attends else None
    if _fused_default_scale_only(func):
        return None  # the fused call scales by 1/sqrt(d) itself: a factor before it corrects that, scores stay scaled
    outputs = _attention_outputs(func)
    for node in ast.walk(func):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)) \
                and (last is None or node.lineno <= last):
            for tensor, factor in ((node.left, node.right), (node.right, node.left)):
                if any(isinstance(n, ast.Name) and n.id in outputs for n in ast.walk(tensor)):
                    continue  # an attention output rescaled (IP-Adapter's ``* self.scale``): no scores are scaled
                text = ast.unparse(factor).lower()
                if factor is node.left and isinstance(node.op, ast.Div) or any(
                        isinstance(side, (ast.List, ast.Tuple)) for side in (tensor, factor)):
                    continue  # ``[None] * len(self.scale)`` builds a list: no tensor is scaled
                if any(w in text for w in ("scale", "scaling", "sqrt", "** -0.5", "** 0.5", "norm_factor",
                                           "temperature")) and "mask" not in text:
                    return node, tensor, factor
    return None


def _fused_default_scale_only(func: ast.FunctionDef) -> bool:
    """No softmax of its own, a fused call, and no call given a scale (``scale=``/``softmax_scale=``): every
    attention keeps the fused call's default scale."""
    calls = [n for n in ast.walk(func) if isinstance(n, ast.Call)]
    return bool(_fused_calls(func)) and not _calls(func, {"softmax", "Softmax"}) and all(
        kw.arg not in ("scale", "softmax_scale") for n in calls for kw in n.keywords)


def _fused_calls(func: ast.AST) -> list[ast.Call]:
    """SDPA and flash-attn calls (``F.scaled_dot_product_attention``, ``flash_attn_func``, ...) in ``func``."""
    return [n for n in ast.walk(func) if isinstance(n, ast.Call) and ((_name(n.func) or "").endswith(
        "scaled_dot_product_attention") or (_name(n.func) or "").startswith("flash_attn"))]


def _attention_outputs(func: ast.FunctionDef) -> set[str]:
    """Names assigned the output of a fused attention call (SDPA, flash-attn) somewhere in ``func``."""
    fused = _fused_calls(func)
    return {target.id for node in ast.walk(func) if isinstance(node, ast.Assign) and node.value in fused
            for target in node.targets if isinstance(target, ast.Name)}


def scale_removed(func: ast.FunctionDef, cls: Optional[ast.ClassDef]) -> bool:
    found = _scale_factor(func)
    if found is None:
        return False
    node, tensor, _ = found
    _replace(func, node, tensor)
    return True


def scale_by_width(func: ast.FunctionDef, cls: Optional[ast.ClassDef]) -> bool:
    found = _scale_factor(func)
    width = _class_width(cls)
    if found is None or width is None:
        return False
    node, tensor, old = found
    power = -0.5 if isinstance(node.op, ast.Mult) else 0.5
    if _is_width_scale(cls, old, width, power):
        return False  # the scale already is the width's (CvT): the mutation would change nothing
    factor = ast.parse(f"self.{width} ** {power}", mode="eval").body
    _replace(func, node, ast.BinOp(left=tensor, op=node.op, right=factor))
    return True


def _is_width_scale(cls: ast.ClassDef, factor: ast.expr, width: str, power: float) -> bool:
    """``factor`` is ``width ** power`` already: written so, or a ``self.`` attribute the class sets so."""
    sources = {f"self.{width}"} | {ast.unparse(n.value) for n in ast.walk(cls) if isinstance(n, ast.Assign)
                                   and [ast.unparse(t) for t in n.targets] == [f"self.{width}"]}
    same = {ast.unparse(ast.parse(f"({w}) ** {power}", mode="eval").body) for w in sources}
    values = [factor] + [n.value for n in ast.walk(cls) if isinstance(n, ast.Assign)
                         and [ast.unparse(t) for t in n.targets] == [ast.unparse(factor)]]
    return any(ast.unparse(ast.parse(ast.unparse(v), mode="eval").body) in same for v in values)


def _class_width(cls: Optional[ast.ClassDef]) -> Optional[str]:
    """The ``self.`` attribute holding the width the heads split (timm's ``dim_out`` of ``head_dim = dim_out //
    heads``, where ``self.dim`` is the input's width), else the first of WIDTHS the class sets."""
    if cls is None:
        return None
    assigned = [(n.targets[0].attr, n.value) for n in ast.walk(cls) if isinstance(n, ast.Assign)
                and len(n.targets) == 1 and isinstance(n.targets[0], ast.Attribute)
                and isinstance(n.targets[0].value, ast.Name) and n.targets[0].value.id == "self"]
    counts = Counter(attr for attr, _ in assigned)
    stored = {attr: value for attr, value in assigned if counts[attr] == 1}  # set on one path only: maybe not it
    for node in ast.walk(cls):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Div)) \
                and (_name(node.right) or "") in HEAD_COUNTS:
            split = _name(node.left)
            found = [a for a, v in stored.items() if a == split or isinstance(v, ast.Name) and v.id == split]
            if split is not None and found:
                return found[0]
    return next((w for w in WIDTHS if w in counts), None)


def sdpa_dropout(func: ast.FunctionDef, cls: Optional[ast.ClassDef]) -> bool:
    for call in _calls(func, {"scaled_dot_product_attention"}):
        for kw in call.keywords:
            if kw.arg == "dropout_p":
                return _untrain(func, kw)
    return False


def _untrain(func: ast.FunctionDef, kw: ast.keyword) -> bool:
    value = kw.value
    if isinstance(value, ast.IfExp) and "training" in ast.unparse(value.test):
        kw.value = value.body if "not" not in ast.unparse(value.test) else value.orelse
        return True
    if isinstance(value, ast.Name):
        for node in ast.walk(func):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == value.id for t in node.targets) \
                    and isinstance(node.value, ast.IfExp) and "training" in ast.unparse(node.value.test):
                test = ast.unparse(node.value.test)
                node.value = node.value.body if "not" not in test else node.value.orelse
                return True
    return False


def mask_after_softmax(func: ast.FunctionDef, cls: Optional[ast.ClassDef]) -> bool:
    """The masking statement (or the ``if mask is not None:`` block holding it) moved to just after the softmax,
    applied to the probabilities instead of the scores."""
    for body in _bodies(func):
        for i, stmt in enumerate(body):
            scores = _masked_fill_assign(stmt) or _masking_block(stmt)
            if scores is None:
                continue
            for j in range(i + 1, len(body)):
                probs = _softmax_assign(body[j], scores)
                if probs is not None:
                    moved = _Rename(scores, probs).visit(copy.deepcopy(stmt))
                    del body[i]
                    body.insert(j, moved)
                    return True
    return False


class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(self.new, node.ctx) if node.id == self.old else node


def _masking_block(stmt: ast.stmt) -> Optional[str]:
    """``if mask is not None: s = s + mask`` (the scores masked inside an ``if`` with no softmax of its own)."""
    if not isinstance(stmt, ast.If) or _calls(stmt, {"softmax", "Softmax"}):
        return None
    found = [name for sub in stmt.body for name in [_masked_fill_assign(sub)] if name is not None]
    return found[0] if found else None


def _bodies(func: ast.AST) -> Iterator[list[ast.stmt]]:
    for node in ast.walk(func):
        for field in ("body", "orelse"):
            value = getattr(node, field, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                yield value


def _masked_fill_assign(stmt: ast.stmt) -> Optional[str]:
    """``s = s.masked_fill(m, v)`` or ``s = s + mask``: the name masked."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        value, name = stmt.value, stmt.targets[0].id
        if isinstance(value, ast.Call) and _name(value.func) == "masked_fill" and isinstance(value.func, ast.Attribute) \
                and isinstance(value.func.value, ast.Name) and value.func.value.id == name:
            return name
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and isinstance(value.left, ast.Name) \
                and value.left.id == name and "mask" in ast.unparse(value.right).lower():
            return name
    return None


def _softmax_assign(stmt: ast.stmt, scores: str) -> Optional[str]:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        if any(_name(c.func) in ("softmax", "Softmax") or (isinstance(c.func, ast.Attribute) and "softmax" in c.func.attr)
               for c in ast.walk(stmt.value) if isinstance(c, ast.Call)) and scores in ast.unparse(stmt.value):
            return stmt.targets[0].id
    return None


MUTATIONS: dict[str, Callable[[ast.FunctionDef, Optional[ast.ClassDef]], bool]] = {
    "softmax_axis": softmax_axis, "merge_no_transpose": merge_no_transpose,
    "split_no_transpose": split_no_transpose, "scale_removed": scale_removed, "scale_by_width": scale_by_width,
    "sdpa_dropout": sdpa_dropout, "mask_after_softmax": mask_after_softmax,
}


# ---- running ------------------------------------------------------------------------------
CONFIG = LintConfig()  # the defaults; main() adds --extend-select (forked workers inherit it)


def _serious(source: str) -> Counter:
    return Counter((f.code, f.message) for f in lint_source(source, config=CONFIG)
                   if f.severity in ("error", "warning"))


def mutate_file(path: str) -> tuple[str, dict[str, list[int]], int]:
    """(path, bug class -> [applied, detected], findings on the unmodified file)."""
    text = Path(path).read_text(encoding="utf-8")
    unmodified = sum(_serious(text).values())
    tree = ast.parse(text)
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for index, (cls, func) in enumerate(list(attention_functions(tree))):
        module = context_module(tree, cls, func)
        baseline = _serious(ast.unparse(module))
        for name, mutation in MUTATIONS.items():
            copy_module = copy.deepcopy(module)
            target = _same_function(copy_module, cls, func)
            if target is None or not mutation(target, _same_class(copy_module, cls)):
                continue
            counts[name][0] += 1
            try:
                mutated = _serious(ast.unparse(ast.fix_missing_locations(copy_module)))
            except (ValueError, TypeError, RecursionError):
                counts[name][0] -= 1
                continue
            counts[name][1] += bool(mutated - baseline)
    return path, dict(counts), unmodified


def _same_class(module: ast.Module, cls: Optional[ast.ClassDef]) -> Optional[ast.ClassDef]:
    if cls is None:
        return None
    return next(n for n in module.body if isinstance(n, ast.ClassDef) and n.name == cls.name
                and n.lineno == cls.lineno)


def _same_function(module: ast.Module, cls: Optional[ast.ClassDef], func: ast.FunctionDef) -> Optional[ast.FunctionDef]:
    owner = _same_class(module, cls) if cls is not None else module
    for n in owner.body:  # type: ignore[union-attr]
        if isinstance(n, ast.FunctionDef) and n.name == func.name and n.lineno == func.lineno:
            return n
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes (default: CPUs)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N files of each package")
    parser.add_argument("--per-file", action="store_true", help="print the detection per file too")
    parser.add_argument("--extend-select", default="", metavar="CODES",
                        help="opt-in rules to report too, comma-separated (e.g. SC102: scaling removed needs it)")
    args = parser.parse_args()
    global CONFIG
    CONFIG = LintConfig(extend_select=tuple(c for c in args.extend_select.split(",") if c))
    corpus = real_corpus()
    paths = [str(p) for package in corpus.PACKAGES for p in corpus.files(package)[:args.limit]]
    start = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        results = list(pool.map(mutate_file, paths, chunksize=2))
    report(results, args.per_file, time.perf_counter() - start, args.jobs)


def report(results: list[tuple[str, dict[str, list[int]], int]], per_file: bool, seconds: float, jobs: int) -> None:
    total: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    outside: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for path, counts, _ in results:
        for name, (applied, detected) in counts.items():
            for table in (total, outside) if "/transformers/" not in path else (total,):
                table[name][0] += applied
                table[name][1] += detected
    print(f"{len(results)} files, {sum(r[2] for r in results)} errors/warnings on the unmodified files, "
          f"{seconds:.0f} s wall with {jobs} processes (shared machine)")
    print(f"{'bug class':<20} {'all: detected/injected':>24} {'outside transformers':>22}")
    for name in MUTATIONS:
        a, o = total[name], outside[name]
        print(f"{name:<20} {_rate(a):>24} {_rate(o):>22}")
    if per_file:
        for path, counts, unmodified in results:
            if counts:
                shown = ", ".join(f"{k} {d}/{a}" for k, (a, d) in counts.items())
                print(f"{path}: {shown}; unmodified findings {unmodified}")


def _rate(pair: list[int]) -> str:
    applied, detected = pair
    return f"{detected}/{applied} ({100 * detected / applied:.0f}%)" if applied else "-"


if __name__ == "__main__":
    sys.exit(main())
