"""One message class per lint rule: a stable code, a severity, a one-line template and a fix hint.

Templates and hints are ``str.format`` strings over the positional arguments the
checker passes to ``report``; axis names in them come from ``shapecheck.axes``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

SEVERITIES: tuple[str, ...] = ("info", "warning", "error")  # in increasing order


@dataclass(frozen=True)
class Finding:
    """One reported problem, 1-based line and column."""

    path: str
    line: int
    col: int
    code: str
    severity: str
    message: str
    hint: str

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path, "line": self.line, "col": self.col, "code": self.code,
            "severity": self.severity, "message": self.message, "hint": self.hint,
        }


class Message:
    """Base of every rule; subclasses set the class attributes only."""

    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    severity: ClassVar[str] = "error"
    template: ClassVar[str] = ""
    hint: ClassVar[str] = ""

    @classmethod
    def finding(cls, path: str, line: int, col: int, *args: object) -> Finding:
        text = [str(a) for a in args]
        return Finding(path, line, col, cls.code, cls.severity, cls.template.format(*text), cls.hint.format(*text))


class FileNotParsed(Message):
    code, name = "SC001", "file-not-parsed"
    template = "cannot analyse: {0}"
    hint = "lint reads Python source; fix the file or exclude it"


class EmptyFile(Message):
    code, name, severity = "SC002", "empty-file", "info"
    template = "empty file: nothing to analyse"
    hint = "nothing to do; ignore SC002 in [tool.shapecheck] to hide this"


class AnalysisStopped(Message):
    code, name, severity = "SC003", "analysis-stopped", "info"
    template = "analysis stopped: {0}"
    hint = "split the expression so it nests less deeply"


class SoftmaxAxis(Message):
    code, name = "SC101", "softmax-axis"
    template = "softmax over {0} of attention scores {1}; the key axis is {2}"
    hint = "normalise over the keys: softmax(dim=-1) on (..., seq_q, seq_k) scores"


class UnscaledScores(Message):
    code, name, severity = "SC102", "unscaled-scores", "warning"
    template = "attention scores Q·Kᵀ reach softmax without scaling by 1/√d_head"
    hint = "divide the scores (or the queries) by math.sqrt(d_head) before the softmax"


class WidthScaledScores(Message):
    code, name = "SC103", "width-scaled-scores"
    template = "attention scores scaled by the model width ({0}) instead of the head size d_head"
    hint = "scale by 1/√d_head (d_model // heads), not 1/√d_model"


class MergeWithoutTranspose(Message):
    code, name = "SC104", "merge-without-transpose"
    template = "heads merged by {0}({1}) from [{2}]: heads and d_head are not adjacent"
    hint = "move heads next to d_head first: .transpose(1, 2).contiguous().view(batch, seq, heads * d_head)"


class SplitWithoutTranspose(Message):
    code, name = "SC105", "split-without-transpose"
    template = "heads split by {0}({1}) from [{2}]: {3} lies in memory before the heads it is placed after"
    hint = "split the last axis in place, then move heads: .view(batch, seq, heads, d_head).transpose(1, 2)"


class ViewNotContiguous(Message):
    code, name = "SC106", "view-not-contiguous"
    template = "view({0}) on a transposed/permuted [{1}] tensor merges axes that are not adjacent in memory"
    hint = "call .contiguous() before .view(...), or use .reshape(...)"


class MaskedFillDiscarded(Message):
    code, name = "SC107", "masked-fill-discarded"
    template = "result of masked_fill is discarded: {0} stays unmasked"
    hint = "assign it back ({0} = {0}.masked_fill(...)) or use the in-place masked_fill_"


class MaskedFillWrongName(Message):
    code, name = "SC108", "masked-fill-wrong-name"
    template = "masked scores stored in '{0}'{1}, but the softmax on line {2} reads {3}"
    hint = "assign the masked scores back to the name the softmax reads: {4} = {4}.masked_fill(...)"


class MaskConvention(Message):
    code, name, severity = "SC109", "mask-convention", "warning"
    template = "'{0}' is {1}, but it is used as the positions to fill"
    hint = "{2}"


class DropoutAlwaysOn(Message):
    code, name, severity = "SC110", "dropout-always-on", "warning"
    template = "{0}(...) in {1}() without training=: dropout stays on in eval mode"
    hint = "pass training=self.training, or use an nn.Dropout module"


class UndefinedName(Message):
    code, name = "SC111", "undefined-name"
    template = "{0}"
    hint = "define it, or take it as an argument (e.g. a config field)"


class ReshapeOrder(Message):
    code, name = "SC112", "reshape-order"
    template = "{0}({1}) on a [{2}] tensor puts {3} before {4}: view/reshape never moves data, so axes get mixed"
    hint = "permute/transpose to the target order first, then .contiguous().view(...)"


class KeyQueryLength(Message):
    code, name = "SC113", "key-query-length"
    template = "keys/values reshaped with the query length ({0}, seq_q) in {1}({2})"
    hint = "keys and values have the key length seq_k ({3}); use it (or -1) in cross-attention"


RULES: tuple[type[Message], ...] = (
    FileNotParsed, EmptyFile, AnalysisStopped, SoftmaxAxis, UnscaledScores, WidthScaledScores,
    MergeWithoutTranspose, SplitWithoutTranspose, ViewNotContiguous, MaskedFillDiscarded,
    MaskedFillWrongName, MaskConvention, DropoutAlwaysOn, UndefinedName, ReshapeOrder, KeyQueryLength,
)
CODES: tuple[str, ...] = tuple(rule.code for rule in RULES)
