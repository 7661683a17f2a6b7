"""Run every property under hypothesis and collect passed / failed / skipped / warning with the shrunk counterexample.

    report = verify(MultiHeadAttention, VerifyOptions(seed=0))
    report.passed, [r.status for r in report.results]

``check_attention(factory, ...)`` is the pytest entry: it raises an AssertionError
whose message lists each failing property with its minimal configuration.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Optional

import torch
from hypothesis import HealthCheck, Phase, Verbosity, configuration, given, seed, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException
from hypothesis.reporting import with_reporter

from shapecheck.convention import TOKENS, Decision, convention_json
from shapecheck.errors import UsageError, first_line
from shapecheck.testing.compare import Skip
from shapecheck.testing.hints import hint
from shapecheck.testing.properties import PROPERTIES, PROPERTY_NAMES, WARNING, Property, describe_mask
from shapecheck.testing.strategies import AttentionCase, attention_cases
from shapecheck.target import Target
from shapecheck.testing.models import ModelSubject, model_properties, takes_token_ids
from shapecheck.testing.subject import Subject, VerifyOptions, as_target

Status = Literal["passed", "failed", "skipped", "warning"]
Progress = Callable[[str, int, int], None]  # (property name, examples run, examples planned), called per example


@dataclass(frozen=True)
class PropertyResult:
    name: str
    status: Status
    message: str = ""
    counterexample: Optional[dict[str, Any]] = None
    hint: str = ""

    @property
    def reason(self) -> str:
        """Why it did not pass: the failure, the warning, or why it was skipped ('' when it passed)."""
        return "" if self.status == "passed" else self.message

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "reason": self.reason, "counterexample": self.counterexample,
                "message": self.message, "hint": self.hint}


IMPORTANT = ("reference",)  # a skip of these is named in the verdict line: the float64 reference is the strongest check


@dataclass(frozen=True)
class VerifyReport:
    target: str
    construction: str  # the constructor call with the mapping chosen
    notes: tuple[str, ...]  # calling convention and reference choices
    results: tuple[PropertyResult, ...] = field(default_factory=tuple)
    interrupted: bool = False  # Ctrl-C: ``results`` holds the properties that finished
    selected: tuple[str, ...] = ()  # the properties the user named (--property), if any
    convention: dict[str, Any] = field(default_factory=dict)  # what the probe decided (``shapecheck.convention``)

    @property
    def passed(self) -> bool:
        return not any(r.status == "failed" for r in self.results)

    @property
    def checked(self) -> bool:
        """Some property ran (passed, failed or warned): a verdict says something."""
        return any(r.status != "skipped" for r in self.results)

    @property
    def not_run(self) -> tuple[PropertyResult, ...]:
        """Skipped properties the verdict must name: the reference, those named with --property, those verify could not drive."""
        return tuple(r for r in self.results if r.status == "skipped"
                     and (r.name in IMPORTANT or r.name in self.selected or "could not" in r.message))

    @property
    def exit_code(self) -> int:
        """0 what ran passed, 1 a property failed, 2 nothing was checked (every property skipped), 130 interrupted."""
        if self.interrupted:
            return 130
        if not self.passed:
            return 1
        return 0 if self.checked else 2

    @property
    def coverage(self) -> dict[str, Any]:
        ran = [r.name for r in self.results if r.status != "skipped"]
        return {"ran": ran, "skipped": {r.name: r.reason for r in self.results if r.status == "skipped"},
                "not_run": {r.name: r.reason for r in self.not_run}, "checked": self.checked}

    def as_dict(self) -> dict[str, Any]:
        return {"target": self.target, "passed": self.passed, "checked": self.checked,
                "interrupted": self.interrupted, "construction": self.construction, "coverage": self.coverage,
                "notes": list(self.notes), "convention": self.convention, "properties": [r.as_dict() for r in self.results]}


class _Failed(Exception):
    """Raised inside the hypothesis test so it shrinks; carries the reason."""


def counterexample(case: Any, extras: dict[str, Any], has_mask: bool = True) -> dict[str, Any]:
    """The minimal configuration as plain data: sizes, mask rows, dtype and anything else the property drew."""
    if hasattr(case, "describe"):  # a whole model's case
        return {**case.describe(), **extras}
    shape = case.shape
    found = {"heads": shape.heads, "d_head": shape.d_head, "d_model": shape.d_model, "batch": shape.batch,
             "seq_q": shape.seq_q, "seq_k": shape.seq_k, "mask": describe_mask(case.keep), "dtype": "float32"}
    if extras.pop("with_mask", True) is False or not has_mask:
        found["mask"] = "none"
    for name, value in extras.items():
        found[name] = str(value).replace("torch.", "") if isinstance(value, torch.dtype) else value
    return found


def _strategy(subject: Any, prop: Property) -> st.SearchStrategy[Any]:
    if isinstance(subject, ModelSubject):
        return subject.cases(prop)
    o = subject.options
    return attention_cases(
        cross=subject.conv.cross, mask=prop.mask, fully_masked=prop.fully_masked,
        max_heads=o.max_heads, max_d_head=o.max_d_head, min_batch=min(prop.min_batch, o.max_batch), max_batch=o.max_batch,
        min_seq=min(prop.min_seq, o.max_seq), max_seq=o.max_seq, d_head_multiple=subject.d_head_multiple, grouped=subject.grouped,
        fewer_kv_heads=prop.fewer_kv_heads,
    )


def _reason(subject: Subject, prop: Property, case: AttentionCase, draw: Any) -> Optional[str]:
    try:
        with torch.random.fork_rng(devices=[]):
            torch.default_generator.manual_seed(case.seed)  # dropout left on in eval fails the same way on replay
            return prop.check(subject, case, draw)
    except (UsageError, Skip):
        raise
    except Exception as error:  # noqa: BLE001 - the module under test may raise anything
        refused = subject.refuses(case.shape) if isinstance(subject, Subject) else None
        if refused:  # these head sizes are the module's constraint, not a finding
            raise _Refused(refused) from None
        return f"raised {first_line(error)}"[:300]


class _Refused(Exception):
    """The module refuses a plain call at the drawn head sizes: the example is discarded."""


def run_property(subject: Subject, prop: Property, passed: frozenset[str] = frozenset(),
                 tick: Callable[[], None] = lambda: None) -> PropertyResult:
    """One property under hypothesis: passed, skipped, or failed/warning with the shrunk counterexample; ``tick`` per example."""
    skip = prop.applies(subject)
    if skip:
        return PropertyResult(prop.name, "skipped", skip)
    last: dict[str, Any] = {}
    skipped: list[str] = []  # reasons from checks that could not drive the module (``Skip``)
    refused: list[str] = []  # head sizes the module refuses even in a plain call (its constraints)
    completed = [0]

    @given(st.data())
    def test(data: st.DataObject) -> None:
        tick()
        case = data.draw(_strategy(subject, prop))
        if isinstance(subject, Subject) and subject.conv.memory_name is not None:
            case = case._replace(value=case.key)  # one memory tensor gives keys and values
        extras: dict[str, Any] = {}

        def draw(strategy: st.SearchStrategy, label: str) -> Any:
            extras[label] = value = data.draw(strategy)
            return value

        try:
            reason = _reason(subject, prop, case, draw)
        except Skip as why:
            skipped.append(str(why))
            return
        except _Refused as why:
            refused.append(str(why))
            return
        completed[0] += 1
        if reason:
            last.update(case=case, extras=extras, reason=reason)
            raise _Failed(reason)

    o = subject.options
    configured = settings(
        max_examples=o.max_examples, deadline=None, database=None, derandomize=False, verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck), phases=(Phase.explicit, Phase.generate, Phase.shrink),
        report_multiple_bugs=False,
    )(seed(o.seed)(test))
    try:
        with with_reporter(lambda _message: None):
            configured()
    except (_Failed, HypothesisException, AssertionError):
        if not last:
            raise
        return _failure(subject, prop, last, passed)
    if (skipped or refused) and not completed[0]:
        why = skipped[0] if skipped else f"the module could not be driven at any drawn head size ({refused[0]})"[:300]
        return PropertyResult(prop.name, "skipped", why)
    return PropertyResult(prop.name, "passed", prop.doc)


def _failure(subject: Subject, prop: Property, last: dict[str, Any], passed: frozenset[str]) -> PropertyResult:
    found = counterexample(last["case"], dict(last["extras"]), getattr(subject, "has_mask", False))
    reason: str = last["reason"]
    if reason.startswith(WARNING):  # a declared deviation (a module that does not scale by 1/√d_head): never a failure
        return PropertyResult(prop.name, "warning", reason[len(WARNING):], found, "")
    status: Status = "warning" if prop.warning and not subject.options.strict else "failed"
    return PropertyResult(prop.name, status, reason, found, hint(prop.name, found, reason, passed))


def verify(factory: Any, options: Optional[VerifyOptions] = None, *, progress: Optional[Progress] = None) -> VerifyReport:
    """Run the properties on ``factory`` (nn.Module class, factory function or ``shapecheck.target.Target``)."""
    options = options or VerifyOptions()
    _validate(options)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: thread hand-offs cost more than the arithmetic
    try:
        with _scratch_storage():
            return _verify(as_target(factory), options, progress)
    finally:
        torch.set_num_threads(threads)


@contextmanager
def _scratch_storage() -> Iterator[None]:
    """Hypothesis's storage (no example database: ``database=None``; its cache of constants read from the user's
    source) in a temporary directory removed afterwards, so a run leaves no ``.hypothesis/`` in the working directory."""
    previous = vars(configuration).get("__hypothesis_home_directory")  # None: the environment's, else ./.hypothesis
    with tempfile.TemporaryDirectory(prefix="shapecheck-verify-") as scratch:
        configuration.set_hypothesis_home_dir(scratch)
        try:
            yield
        finally:
            configuration.set_hypothesis_home_dir(previous)


def _verify(target: Target, options: VerifyOptions, progress: Optional[Progress]) -> VerifyReport:
    model = takes_token_ids(target)
    subject: Any = ModelSubject(target, options) if model else Subject(target, options)
    suite = model_properties() if model else PROPERTIES
    chosen = [p for p in suite if options.properties is None or p.name in options.properties]
    if not chosen:
        kind = "a whole model (forward takes input_ids)" if model else "an attention module"
        raise UsageError(f"{target.spec} is {kind}: none of {', '.join(options.properties or ())} applies "
                         f"(choose from {', '.join(p.name for p in suite)})")
    results: list[PropertyResult] = []
    planned, done = len(chosen) * options.max_examples, [0]
    interrupted = False
    for index, prop in enumerate(chosen):
        def tick(name: str = prop.name) -> None:
            done[0] += 1
            if progress:
                progress(name, min(done[0], planned), planned)

        try:
            results.append(run_property(subject, prop, frozenset(r.name for r in results if r.status == "passed"), tick))
        except KeyboardInterrupt:
            interrupted = True
            break
        done[0] = (index + 1) * options.max_examples  # shrinking and early stops: resynchronise per property
        if options.fail_fast and results[-1].status == "failed":
            break
    construction = subject.construction.describe() if subject.construction else target.name
    notes = subject.notes if model else subject.notes + subject.conv.notes + (subject.reference_note,)
    convention = Decision(TOKENS).as_json() if model else convention_json(subject.conv, subject.heads)
    return VerifyReport(target.spec, construction, notes, tuple(results), interrupted, tuple(options.properties or ()), convention)


def _validate(options: VerifyOptions) -> None:
    if options.max_examples < 1:
        raise UsageError(f"max_examples={options.max_examples} must be at least 1")
    unknown = sorted(set(options.properties or ()) - set(PROPERTY_NAMES))
    if unknown:
        raise UsageError(f"unknown properties {', '.join(unknown)} (choose from {', '.join(PROPERTY_NAMES)})")
    for name in ("max_heads", "max_d_head", "max_batch", "max_seq"):
        if getattr(options, name) < 1:
            raise UsageError(f"{name}={getattr(options, name)} must be at least 1")


def format_failure(result: PropertyResult) -> str:
    """'reference: <message>\\n  minimal: heads=2, d_head=1, ...\\n  hint: ...'."""
    sizes = ", ".join(f"{k}={v}" for k, v in (result.counterexample or {}).items())
    return f"{result.name}: {result.message}\n  minimal: {sizes}\n  hint: {result.hint}"


def check_attention(factory: Any, **options: Any) -> VerifyReport:
    """Verify ``factory`` (class or function taking d_model/heads by any mapped name); raise AssertionError on failure.

    Keyword options are ``VerifyOptions`` fields (``mask``, ``causal``, ``max_examples``,
    ``seed``, ``strict``, ``layout``, ``fail_fast``, ``properties``, ``max_seq`` ...).
    Returns the report when nothing failed (warnings allowed unless ``strict``); a run in which every selected
    property was skipped raises too (nothing was checked).
    """
    report = verify(factory, replace(VerifyOptions(), **options))
    if not report.checked and not report.interrupted:
        why = "; ".join(f"{r.name}: {r.reason}" for r in report.results)
        raise AssertionError(f"{report.target}: nothing was checked: every selected property was skipped ({why})")
    failed = [r for r in report.results if r.status == "failed"]
    if failed:
        body = "\n".join(format_failure(r) for r in failed)
        raise AssertionError(f"{report.target}: {len(failed)} attention propert{'y' if len(failed) == 1 else 'ies'} failed\n{body}")
    return report
