"""The per-file node lists the checks read: ast.walk's nodes in ast.walk's order, made once, never stale; and the
cycle collector paused only while one file is analysed."""

from __future__ import annotations

import ast
import gc
import textwrap

import pytest

from shapecheck.lint import lint_source
from shapecheck.lint import nodes

from .helpers import CORPUS

FILES = sorted((CORPUS / "buggy").glob("*.py"))[:40]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_lists_what_ast_walk_yields_in_its_order(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    wholes = [n for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))]
    for whole in wholes:
        expected = [n for n in ast.walk(whole) if not isinstance(n, ast.expr_context)]
        assert list(nodes.walk(whole)) == expected
    nodes.forget()


@pytest.mark.parametrize("path", FILES[::4], ids=lambda p: p.name)
def test_every_gives_the_nodes_of_walk_and_children_those_of_iter_child_nodes(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.Lambda, ast.IfExp, ast.Dict)):
            expected = [n for n in ast.walk(node) if not isinstance(n, ast.expr_context)]
            assert sorted(map(id, nodes.every(node))) == sorted(map(id, expected))
        assert list(nodes.children(node)) == [c for c in ast.iter_child_nodes(node)
                                               if not isinstance(c, ast.expr_context)]
    nodes.forget()


def test_a_list_is_made_once_and_a_small_node_is_walked_afresh():
    tree = ast.parse("def f(x):\n    return x + 1\n")
    func = tree.body[0]
    assert nodes.walk(func) is nodes.walk(func)
    ret = func.body[0]
    assert [type(n) for n in nodes.walk(ret)] == [type(n) for n in ast.walk(ret)]  # markers kept for small nodes
    nodes.forget()


def test_a_new_tree_in_a_reused_slot_is_listed_anew():
    first = ast.parse("def f(x):\n    return x\n").body[0]
    listed = nodes.walk(first)
    second = ast.parse("def g(y, z):\n    return y * z\n").body[0]
    nodes._LISTED[id(second)] = (first, listed)  # what a freed node's reused id would leave behind
    assert [getattr(n, "name", None) for n in nodes.walk(second)][0] == "g"
    nodes.forget()


def test_lint_forgets_the_lists_when_a_file_is_done():
    lint_source("import torch\n\ndef f(q, k):\n    return (q @ k.transpose(-2, -1)).softmax(-1)\n", "f.py")
    assert nodes._LISTED == {}


@pytest.mark.parametrize("enabled", [True, False])
def test_the_cycle_collector_is_left_as_it_was(enabled):
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        lint_source("def f(:\n", "bad.py")
        lint_source("import torch\n\ndef f(q, k):\n    return (q @ k.transpose(-2, -1)).softmax(-1)\n", "f.py")
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()



def test_unreachable_spans_are_the_statements_after_an_exit_of_their_list():
    tree = ast.parse(textwrap.dedent("""\
        def f(x, flag):
            if flag:
                raise NotImplementedError
                y = x + 1
                z = y * 2
            for i in range(3):
                if i:
                    continue
                    x = -x
                break
            return x
            print(x)
        def g(x):
            return x
        """))
    assert nodes.unreachable_spans(tree) == [(4, 5), (9, 9), (12, 12)]
