"""Rendering findings: flake8-style lines (``table``), JSON, and SARIF 2.1.0 for code-scanning tools."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path, PurePath
from typing import Sequence
from urllib.parse import quote

import shapecheck
from shapecheck.lint.messages import OPT_IN, RULES, Finding

FORMATS: tuple[str, ...] = ("table", "json", "sarif")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def text(findings: Sequence[Finding], hints: bool = False) -> str:
    """``path:line:col: CODE message``, one line per finding (and an indented hint line with ``hints``)."""
    lines = []
    for f in findings:
        lines.append(f"{f.path}:{f.line}:{f.col}: {f.code} {f.message}")
        if hints:
            lines.append(f"    hint: {f.hint}")
    return "\n".join(lines)


def statistics(findings: Sequence[Finding]) -> str:
    """ruff's ``--statistics``: one line per code, most frequent first: count, code, rule name."""
    names = {rule.code: rule.name for rule in RULES}
    counts = Counter(f.code for f in findings)
    width = len(str(max(counts.values(), default=0)))
    return "\n".join(f"{n:>{width}}\t{code}\t{names.get(code, '')}"
                     for code, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def as_json(files: int, findings: Sequence[Finding], exit_code: int) -> str:
    """The findings with the verdict every command's JSON carries: ``ok`` and ``exit_code``."""
    data = {"ok": exit_code == 0, "exit_code": exit_code, "files": files, "findings": [f.to_dict() for f in findings]}
    return json.dumps(data, indent=2, ensure_ascii=False)


def rules_table() -> str:
    """Every rule: code, severity, name, then its message and hint with readable placeholders."""
    lines = []
    for rule in RULES:
        message, hint = rule.described()
        opt_in = "  (opt-in: --extend-select " + rule.code + ")" if rule.code in OPT_IN else ""
        lines += [f"{rule.code}  {rule.severity:<7}  {rule.name}{opt_in}", f"    message: {message}", f"    hint: {hint}"]
    return "\n".join(lines)


def artifact_uri(path: str) -> str:
    """A SARIF ``uri``: absolute paths as ``file://`` URIs, relative ones percent-encoded (spaces, non-ASCII)."""
    pure = PurePath(path)
    if pure.is_absolute():
        return Path(path).as_uri()
    return quote(pure.as_posix(), safe="/")


def sarif(findings: Sequence[Finding]) -> str:
    """A SARIF 2.1.0 log with one run; every rule is described, results point at 1-based regions."""
    index = {rule.code: i for i, rule in enumerate(RULES)}
    rules = [
        {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.name.replace("-", " ")},
            "help": {"text": rule.hint},
            "defaultConfiguration": {"level": _SARIF_LEVEL[rule.severity]},
        }
        for rule in RULES
    ]
    results = [
        {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": _SARIF_LEVEL[f.severity],
            "message": {"text": f"{f.message} (hint: {f.hint})"},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": artifact_uri(f.path)},
                "region": {"startLine": f.line, "startColumn": f.col},
            }}],
        }
        for f in findings
    ]
    driver = {"name": "shapecheck", "version": shapecheck.__version__, "rules": rules,
              "informationUri": "https://github.com/shapecheck/shapecheck"}
    log = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{"tool": {"driver": driver}, "results": results}]}
    return json.dumps(log, indent=2, ensure_ascii=False)
