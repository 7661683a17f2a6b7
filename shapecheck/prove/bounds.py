"""Upper bounds on the sequence axes from the tables the code indexes by position, each confirmed by running.

Export sees a bound only when the code slices a table by the length (BERT's
``position_ids[:, :seq]``). Code that builds positions itself (GPT-2's
``arange``, RoBERTa's and OPT's padding offsets) indexes a table export cannot
bound, and crashes one token past it. So the candidates come from the module
tree too: every learned position table (its rows, less the offsets 0-2 that
RoBERTa, OPT and BART add), every square causal-mask buffer (GPT-2's and
nanoGPT's ``bias[:, :, :T, :T]``), every fixed rotary cache or ALiBi bias buffer,
every position tensor ``forward`` builds for a fixed number of positions whatever
the length (``traced``: an ``arange`` of the same size at two lengths, as MPT's
ALiBi bias for ``max_seq_len`` positions or a rotary cache built to a maximum
length), and export's own range. A candidate N is a bound only when the exported
program runs at N and eager ``forward`` fails at N + 1 and N + 2; ``N`` is the
largest length that runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Optional

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from shapecheck.prove.inputs import InputPlan
from shapecheck.vocabulary import SEQUENCE_AXES

POSITION_WORDS = ("pos", "wpe")
CACHE_WORDS = ("cos", "sin", "freqs", "rotary", "rope", "alibi")
MASK_WORDS = ("bias", "mask", "causal", "tril")
OFFSETS = (0, 1, 2)  # rows a position table reserves before the first position (padding_idx + 1 for RoBERTa)


@dataclass(frozen=True)
class Candidate:
    size: int
    source: str  # "position table embeddings.position_embeddings (24 rows)"


@dataclass(frozen=True)
class Bound:
    """``axis <= size``: the program runs at ``size`` and forward fails at ``size + 1``."""

    axis: str
    size: int
    source: str
    failure: str  # what forward raised one past the bound

    @property
    def constraint(self) -> str:
        return f"{self.axis} <= {self.size}"


def _is_position_table(path: str, module: nn.Module) -> bool:
    last = path.rpartition(".")[2].lower()
    weight = getattr(module, "weight", None)
    return isinstance(weight, torch.Tensor) and weight.dim() == 2 and "relative" not in last and any(w in last for w in POSITION_WORDS)


def _tables(model: nn.Module) -> Iterator[Candidate]:
    for path, module in model.named_modules():
        if isinstance(module, nn.Embedding) and _is_position_table(path, module):
            rows = module.num_embeddings
            for offset in OFFSETS:
                yield Candidate(rows - offset, f"position table {path} ({rows} rows)")


def _buffers(model: nn.Module) -> Iterator[Candidate]:
    for path, buffer in model.named_buffers():
        last = path.rpartition(".")[2].lower()
        if buffer.dim() < 2:
            continue
        square = buffer.shape[-1] == buffer.shape[-2] and buffer.shape[-1] > 1
        if square and any(w in last for w in MASK_WORDS):
            yield Candidate(int(buffer.shape[-1]), f"causal mask {path} ({buffer.shape[-1]}×{buffer.shape[-1]})")
        elif any(w in last for w in CACHE_WORDS):
            rows = _position_buffer_rows(buffer)
            kind = "ALiBi bias" if "alibi" in last else "rotary cache"
            yield Candidate(rows, f"{kind} {path} ({rows} positions)")


def _position_buffer_rows(buffer: torch.Tensor) -> int:
    """Positions a cache buffer holds: rows of a (positions, width) table, else its last axis (ALiBi's (h, 1, N))."""
    return int(buffer.shape[0] if buffer.dim() == 2 else buffer.shape[-1] if buffer.shape[-2] == 1 else buffer.shape[-2])


class _Aranges(TorchDispatchMode):
    """The length of every ``arange`` a forward builds."""

    def __init__(self) -> None:
        super().__init__()
        self.lengths: set[int] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        out = func(*args, **(kwargs or {}))
        if func.overloadpacket is torch.ops.aten.arange and isinstance(out, torch.Tensor) and out.dim() == 1:
            self.lengths.add(int(out.numel()))
        return out


def traced(run: Callable[[int], None], lengths: tuple[int, int] = (2, 3)) -> list[Candidate]:
    """Position tensors ``forward`` builds for a fixed number of positions: an ``arange`` of the same length
    at two sequence lengths, longer than both (``run(n)`` runs forward at length n)."""
    seen = []
    for n in lengths:
        mode = _Aranges()
        try:
            with mode:
                run(n)
        except Exception:  # noqa: BLE001 - the user's forward may fail at a small length: no candidates from it
            return []
        seen.append(mode.lengths)
    fixed = set.intersection(*seen) if seen else set()
    return [Candidate(n, f"position tensor of {n} built in forward") for n in sorted(fixed) if n > max(lengths)]


def candidates(model: nn.Module, exported_upper: Optional[int], built: list[Candidate] = ()) -> list[Candidate]:
    """Every candidate bound, largest first, one per size (the first source found names it)."""
    found: dict[int, list[str]] = {}
    if exported_upper is not None:
        found[exported_upper] = ["export's range"]
    for candidate in list(_tables(model)) + list(_buffers(model)) + list(built):
        if candidate.size >= 1 and candidate.source not in found.setdefault(candidate.size, []):
            found[candidate.size].append(candidate.source)
    return [Candidate(size, " / ".join(found[size])) for size in sorted(found, reverse=True)]


Runner = Callable[[dict[str, int]], Optional[str]]  # sizes -> None when it runs, else the one-line error


def confirm(axis: str, options: list[Candidate], base: dict[str, int], program: Runner, eager: Runner) -> Optional[Bound]:
    """The largest candidate N at which the program runs and past which forward fails; None when none is a bound.

    Forward must fail at N + 1 and at N + 2, so code that only rejects odd lengths is not taken for a bound.
    """
    for candidate in options:
        if program({**base, axis: candidate.size}) is not None:
            continue
        failure = eager({**base, axis: candidate.size + 1})
        if failure is None or eager({**base, axis: candidate.size + 2}) is None:
            return None
        return Bound(axis, candidate.size, candidate.source, failure)
    return None


def sequence_axes(plan: InputPlan, free: list[str]) -> list[str]:
    return [a for a in free if a in SEQUENCE_AXES]
