"""``model_report(module, settings)``: rows from any model's module tree, measured, with closed forms where recognised.

Every module down to ``depth`` gets a row with its measured parameters (shared tensors once) and
FLOPs in the chosen mode; a module audit's recogniser says is an attention block, MLP, gated MLP, MoE,
norm, embedding or Linear (read through ``anatomy``) also carries its closed form and value
(``closed_forms``), and the tree is not opened below it. Identical layers of a ModuleList (same class
and parameter shapes) fold into one row after the first. Pure data: ``shapecheck.render.report`` draws it.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Optional

import torch
from torch import nn

from shapecheck.counting import closed_forms as cf
from shapecheck.counting import measure, memory
from shapecheck.counting.anatomy import Part, parts as recognised
from shapecheck.counting.experts import ROUTING, routed
from shapecheck.convention import CATALOGUE, Decision, decide
from shapecheck.counting.feed import Feed, signature_feed
from shapecheck.counting.per_token import estimates, mfu
from shapecheck.display import show
from shapecheck.errors import UsageError, first_line

MODES = ("forward", "train", "decode")


@dataclass(frozen=True)
class Settings:
    batch: int = 1
    seq_len: int = 128
    mode: str = "forward"
    context: int = 2048  # decode: tokens already in the cache
    dtype: str = "float32"
    depth: Optional[int] = None
    recompute: bool = False
    causal_flops: str = "full"
    tokens_per_second: Optional[float] = None
    peak_tflops: Optional[float] = None
    fold: bool = True  # identical layers of a ModuleList fold into one row after the first
    device: str = "cpu"  # where the user runs it: cpu or cuda (picks the SDPA kernel, hence activations)
    attention_kernel: Optional[str] = None  # an SDPA kernel forced by --attention-kernel (kernels.KERNELS)
    dtype_source: str = "the default, float32"  # where ``dtype`` came from: --dtype, the config, the default


@dataclass(frozen=True)
class Row:
    path: str
    kind: str  # a recognised kind, "module", or "repeat" (folded identical layers)
    params: int
    flops: int
    detail: str = ""  # recognised sizes, e.g. "d_model=64 h=4 h_kv=2 d_head=16"
    params_formula: Optional[str] = None
    flops_formula: Optional[str] = None
    expected_params: Optional[int] = None
    expected_flops: Optional[int] = None
    count: int = 1  # layers a folded row stands for
    fvcore_macs: Optional[int] = None  # fvcore's count for this module's subtree (MACs), when asked for

    @property
    def agrees(self) -> bool:
        return all(e is None or e == m for e, m in ((self.expected_params, self.params), (self.expected_flops, self.flops)))


@dataclass
class ModelReport:
    name: str
    settings: Settings
    rows: list[Row]
    total: dict[str, Any]
    memory: dict[str, int]
    per_token: dict[str, Any]
    uncounted: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    crossover: dict[str, Any] = field(default_factory=dict)  # where the S² terms overtake the S-linear ones
    sizes: dict[str, Any] = field(default_factory=dict)  # a built-in model's sizes (d_model, heads, ...), for the record
    kernel: dict[str, Any] = field(default_factory=dict)  # train: the attention kernel assumed and what it saves
    convention: dict[str, Any] = field(default_factory=dict)  # how the module was called (``shapecheck.convention``)

    @property
    def agrees(self) -> bool:
        return all(r.agrees for r in self.rows)


def _same(a: nn.Module, b: nn.Module) -> bool:
    shapes = lambda m: [(n, tuple(p.shape)) for n, p in m.named_parameters()]  # noqa: E731
    return type(a) is type(b) and shapes(a) == shapes(b)


def _walk(module: nn.Module, path: str, depth: int, s: Settings, parts: dict[str, Part], out: list) -> None:
    """(path, folded paths) in tree order; identical ModuleList items after the first fold into one entry."""
    out.append((path, ()))
    if path in parts or (s.depth is not None and depth >= s.depth):
        return
    children = [(f"{path}.{name}" if path else name, child) for name, child in module.named_children()]
    i = 0
    while i < len(children):
        child_path, child = children[i]
        _walk(child, child_path, depth + 1, s, parts, out)
        run = 1
        if s.fold and isinstance(module, nn.ModuleList):
            while i + run < len(children) and _same(child, children[i + run][1]):
                run += 1
        if run > 1:
            out.append((child_path, tuple(p for p, _ in children[i + 1:i + run])))
        i += run


def _expected(part: Part, s: Settings, shape: Optional[tuple[int, ...]], factor: int = 1) -> tuple[int, int, int]:
    """The closed forms' values at the input ``shape`` the part was called with (batch·seq tokens)."""
    form = cf.form(part)
    shape = shape or (s.batch, 1 if s.mode == "decode" else s.seq_len, 0)
    batch, seq = math.prod(shape[:-2]), shape[-2]
    keys = s.context + 1 if s.mode == "decode" else seq
    window = part.flags.get("window")
    if s.mode == "decode" and window:
        keys = min(keys, window)
    at = cf.values(part, batch, seq, keys)
    flops = cf.evaluate(form.flops, at)
    return cf.evaluate(form.params, at), cf.evaluate(form.active, at), factor * flops


def train_factor(s: Settings, path: str, recomputed: frozenset[str]) -> int:
    """Training FLOPs per forward FLOP of a matmul: 1 forward + 2 backward (dX, dW), + 1 if its layer is recomputed."""
    if s.mode != "train":
        return 1
    return 4 if any(path.startswith(layer + ".") or path == layer for layer in recomputed) else 3


def _row(module: nn.Module, path: str, folded: tuple, parts: dict[str, Part], measured: measure.Measured,
         s: Settings, shapes: dict[str, tuple[int, ...]], recomputed: frozenset[str] = frozenset()) -> Row:
    """One row: measured parameters (each tensor once within the row: a tied head shows its table) and FLOPs."""
    params = lambda p: measure.unique_numel(module.get_submodule(p))  # noqa: E731
    if folded:
        p = sum(params(g) for g in folded)
        f = sum(measured.at(g) for g in folded)
        label = folded[0] if len(folded) == 1 else f"{folded[0]}..{folded[-1].rpartition('.')[2]}"
        return Row(label, "repeat", p, f, f"{len(folded)} × {path}", count=len(folded))
    part = parts.get(path)
    p, f = params(path), measured.at(path)
    if part is None:
        return Row(path or "(model)", "module", p, f)
    form = cf.form(part)
    factor = train_factor(s, path, recomputed)
    e_params, _, e_flops = _expected(part, s, shapes.get(path) or None, factor)
    if recomputed or path not in shapes:  # never called as a module: its parent uses its weights directly
        e_flops = None  # the checkpoint's recomputation is attributed to the module whose backward asked for it
    flops = form.flops.subs(cf.S, 1) if s.mode == "decode" else form.flops.subs(cf.S_k, cf.S)
    return Row(path or "(model)", part.kind, p, f, part.describe(), show(form.params),
               show(factor * flops), e_params, e_flops)


@contextlib.contextmanager
def input_shapes(module: nn.Module, parts: dict[str, Part]) -> Iterator[dict[str, tuple[int, ...]]]:
    """The shape of the first tensor each recognised part is called with (a pooler sees one token per sequence)."""
    shapes: dict[str, tuple[int, ...]] = {}
    decision = decide(module)  # the model itself: the layout it behaves in, where the probe could tell

    def batch_first(called: nn.Module) -> bool:
        if called is module and decision.runs:
            return decision.batch_first
        return getattr(called, "batch_first", True) is not False

    def hook(path: str):
        def record(called: nn.Module, args: tuple, kwargs: dict) -> None:
            first = next((a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)), None)
            shape = tuple(first.shape) if first is not None and first.dim() >= 2 else ()
            if len(shape) == 3 and not batch_first(called):  # (seq, batch, width): torch's batch_first=False
                shape = (shape[1], shape[0], shape[2])
            shapes.setdefault(path, shape)
        return record

    handles = [module.get_submodule(p).register_forward_pre_hook(hook(p), with_kwargs=True) for p in parts]
    try:
        yield shapes
    finally:
        for handle in handles:
            handle.remove()


def _attention_keys(parts: dict[str, Part], s: Settings) -> dict[str, int]:
    keys = {}
    for path, part in parts.items():
        if part.kind == "attention":
            window = part.flags.get("window")
            keys[path] = min(s.context + 1, window) if window else s.context + 1
    return keys


def device_of(module: nn.Module) -> str:
    """Where the module lives: "meta" normally, "cpu" for a target that could only be built there."""
    first = next(module.parameters(), None)
    return first.device.type if first is not None else "meta"


def _measure(module: nn.Module, parts: dict[str, Part], s: Settings, feed: Feed) -> measure.Measured:
    moe = {module.get_submodule(p): part.sizes["k"] for p, part in parts.items() if part.kind == "moe"}
    device = device_of(module)
    with routed(moe):
        if s.mode == "train":
            layers = _stacked_layers(module) if s.recompute else []
            return measure.train(module, feed.runner(module, s.batch, s.seq_len, device, grad=True), layers,
                                 s.device, s.attention_kernel)
        if s.mode == "decode":
            return measure.decode(module, feed.runner(module, s.batch, 1, device), _attention_keys(parts, s), not moe)
        attention = [p for p, part in parts.items() if part.kind == "attention"]
        return measure.forward(module, feed.runner(module, s.batch, s.seq_len, device), attention, not moe)


def _stacked_layers(module: nn.Module) -> list[nn.Module]:
    """The items of every ModuleList that holds the model's layers (what activation recomputation checkpoints)."""
    lists = [m for m in module.modules() if isinstance(m, nn.ModuleList) and len(m) > 1
             and all(_same(m[0], item) or type(m[0]) is type(item) for item in m)]
    outer = [m for m in lists if not any(m is not o and any(m is x for x in o.modules()) for o in lists)]
    return [layer for m in outer for layer in m]


def _active(module: nn.Module, parts: dict[str, Part], total: int) -> int:
    idle = 0
    for path, part in parts.items():
        if part.kind == "moe":
            form = cf.form(part)
            at = cf.values(part, 1, 1, 1)
            idle += cf.evaluate(form.params - form.active, at)
    return total - idle


def _non_embedding(module: nn.Module, parts: dict[str, Part], total: int) -> int:
    tables = {id(p) for path, part in parts.items() if part.kind == "embedding"
              for p in module.get_submodule(path).parameters()}
    return total - sum(p.numel() for p in {id(p): p for p in module.parameters() if id(p) in tables}.values())


def model_report(module: nn.Module, name: str, s: Settings, feed: Optional[Feed] = None,
                 fvcore: bool = False) -> ModelReport:
    """The report of ``module`` (built on meta, in ``s.dtype``) under ``s``; see the module docstring.

    ``feed`` says how to call it (default: from its forward signature); ``fvcore`` adds fvcore's count per row.
    """
    module = module.to(memory.DTYPES[s.dtype]).train(s.mode == "train")
    given_feed, feed = feed, feed or signature_feed(module)
    parts = recognised(module)
    params = measure.owners(module)
    fallback: list[str] = []
    with input_shapes(module, parts) as shapes:
        try:
            try:
                measured = _measure(module, parts, s, feed)
            except RuntimeError as error:
                if not _eager_instead(module, error):
                    raise
                fallback.append("attention: transformers' SDPA mask preparation reads tensor values (.item()), "
                                "which the meta device cannot give; counted with the class's eager attention "
                                "(the same matmul FLOPs; activations keep the S×S probabilities unless "
                                "--attention-kernel says otherwise)")
                shapes.clear()
                measured = _measure(module, parts, s, feed)
        except UsageError:
            raise
        except Exception as error:  # noqa: BLE001 - the user's forward raises anything
            raise UsageError(f"{name}: its forward pass fails on {device_of(module)} in --mode {s.mode} "
                             f"(batch {s.batch}, seq_len {s.seq_len}): {first_line(error)}") from None
    entries: list = []
    _walk(module, "", 0, s, parts, entries)
    names = {id(m): p for p, m in module.named_modules()}
    layers = [names[id(m)] for m in _stacked_layers(module)]
    recomputed = frozenset(layers) if s.recompute and s.mode == "train" else frozenset()
    rows = [_row(module, p, folded, parts, measured, s, shapes, recomputed) for p, folded in entries]
    total_params = sum(params.values())
    tokens = s.batch * (1 if s.mode == "decode" else s.seq_len)
    flops = measured.at("")
    attention = [part for part in parts.values() if part.kind == "attention"]
    cached = kv_tokens(s)
    kv = memory.kv_cache_bytes([a.cache_width for a in attention], cached, s.batch, s.dtype)
    trainable = sum(p.numel() for p in {id(p): p for p in module.parameters() if p.requires_grad}.values())
    total = {"params": total_params, "active_params": _active(module, parts, total_params), "flops": flops,
             "macs": flops // 2, "flops_per_token": flops // tokens, "tokens": tokens}
    per_token = _per_token(module, parts, s, total_params, flops // tokens, measured.kernel)
    notes = _notes(parts, s) + tied_notes(module) + fallback
    decision = decide(module) if given_feed is None else Decision(CATALOGUE)
    notes += [decision.note()] if decision.note() else []
    notes.append(f"defaults: dtype {s.dtype} ({s.dtype_source}); kv_cache holds {cached} tokens per sequence "
                 + ("(--context, the cache decode attends to)" if s.mode == "decode" else
                    f"(--seq-len in --mode {s.mode}; --mode decode sizes it by --context)"))
    unused = [p for p, _ in entries if p in parts and p not in shapes]
    if unused:
        notes.append("not called as modules, so not compared with their formulas (their parent uses the weights "
                     f"directly, and its FLOPs hold theirs): {', '.join(unused[:5])}{' ...' if len(unused) > 5 else ''}")
    if s.mode == "train" and attention and not s.recompute:
        a = attention[0]
        estimate = memory.korthikanti(s.seq_len, s.batch, a.sizes["d_model"], a.sizes["h"], len(attention))
        notes.append(f"activations by Korthikanti et al. 2022 eq. 1 (16-bit GPT layers, no recomputation, "
                     f"s·b·h·(34 + 5·a·s/h) per layer): {estimate:,} bytes; measured: {measured.activations:,}")
    if fvcore:
        rows = with_fvcore(module, feed, s, rows, notes)
    kernel = _kernel(measured, s)
    if kernel:
        notes.append(f"memory: attention kernel assumed: {kernel['name']} ({kernel['source']}); it saves "
                     f"{kernel['saves']}; train_peak = weights + optimizer + the most bytes the step's tensors hold "
                     "at once (activations, transients, the loss's float copies, gradients)")
    return ModelReport(name, s, rows, total,
                       memory.memory(total_params, trainable, s.dtype, measured.activations, kv, measured.peak),
                       per_token, _uncounted(measured.uncounted), notes,
                       cf.crossovers(parts, layers) if s.mode == "forward" else {}, kernel=kernel, convention=decision.as_json())


def _eager_instead(module: nn.Module, error: RuntimeError) -> bool:
    """A transformers model on meta whose SDPA path read a tensor's value: switched to eager attention (True)."""
    config = getattr(module, "config", None)
    switch = getattr(module, "set_attn_implementation", None)
    if "on meta tensors" not in str(error) or getattr(config, "_attn_implementation", None) != "sdpa" or switch is None:
        return False
    switch("eager")
    return True


def kv_tokens(s: Settings) -> int:
    """Tokens the KV cache holds: the context asked about (--context in decode, the sequence otherwise)."""
    return s.context if s.mode == "decode" else s.seq_len


def _kernel(measured: measure.Measured, s: Settings) -> dict[str, Any]:
    """The kernel the training step's activations assume, and why (train only)."""
    from shapecheck.counting.kernels import SAVES

    if measured.kernel is None:
        return {}
    if measured.kernel == "eager":
        source = "the model computes softmax(QKᵀ) itself, no SDPA call"
    elif s.attention_kernel:
        source = "--attention-kernel"
    else:
        source = f"what torch picks for the model's SDPA calls on --device {s.device}"
    return {"name": measured.kernel, "device": s.device, "source": source, "saves": SAVES[measured.kernel]}


def with_fvcore(module: nn.Module, feed: Feed, s: Settings, rows: list[Row], notes: list[str]) -> list[Row]:
    """Each row with fvcore's count for its module (fvcore: MACs, children included; SDPA counted as 0)."""
    from dataclasses import replace

    from shapecheck.counting.peers import fvcore_macs

    args, kwargs = feed.inputs(s.batch, 1 if s.mode == "decode" else s.seq_len, device_of(module), False)
    if kwargs:
        notes.append("fvcore: the forward needs keyword inputs, which fvcore cannot pass; column left out")
        return rows
    with torch.no_grad():
        counts = fvcore_macs(module.eval(), args)
    if isinstance(counts, str):
        notes.append(f"fvcore: {counts}; column left out")
        return rows
    notes.append(f"fvcore: counts one multiply-add as one flop (MACs); its total {counts.get('', 0):,} MACs "
                 f"= {2 * counts.get('', 0):,} FLOPs; fvcore has no handle for scaled_dot_product_attention, "
                 "which it then counts as 0")
    return [r if r.kind == "repeat" else replace(r, fvcore_macs=counts.get("" if r.path == "(model)" else r.path, 0))
            for r in rows]


def tied_notes(module: nn.Module) -> list[str]:
    from shapecheck.counting.params import tied_parameters

    return [f"tied: {' = '.join(group)} are one tensor, counted once (in the first module that holds it)"
            for group in tied_parameters(module)]


ROUTING_OPS = ("topk", "sort", "argsort", "cumsum", "histc", "bincount", "one_hot", "nonzero", "scatter", "scatter_add",
               "index_add", "index_put", "index_copy", "masked_scatter", "argmax", "multinomial")


def _uncounted(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Routing bookkeeping and index arithmetic are not model-sized arithmetic: left out of ``uncounted``."""
    return [e for e in entries if e["op"].split(".")[-1].rstrip("_") not in ROUTING_OPS]


def _per_token(module: nn.Module, parts: dict[str, Part], s: Settings, total: int, measured: int,
               kernel: Optional[str] = None) -> dict[str, Any]:
    attention = [p for p in parts.values() if p.kind == "attention"]
    embeddings = [p for p in parts.values() if p.kind == "embedding"]
    n = _non_embedding(module, parts, total)
    d_model = attention[0].sizes["d_model"] if attention else 0
    d_attn = attention[0].sizes["h"] * attention[0].sizes["d_head"] if attention else 0
    vocab = max((e.sizes["rows"] for e in embeddings), default=0)
    mlps = [p for p in parts.values() if p.kind in ("mlp", "gated_mlp", "moe")]
    d_ff = mlps[0].sizes["d_ff"] if mlps else 0
    heads = attention[0].sizes["h"] if attention else 0
    result: dict[str, Any] = {"measured": measured, "mode": s.mode, "non_embedding_params": n,
                              "estimates": estimates(n, len(attention), s.seq_len, d_attn, d_model, vocab, heads, d_ff)}
    if s.causal_flops == "half" and s.mode != "decode":
        core = sum(cf.evaluate(cf.form(p).core, cf.values(p, 1, s.seq_len, s.seq_len)) for p in attention)
        result["measured_causal_half"] = measured - (core // 2) * (3 if s.mode == "train" else 1) // s.seq_len
    if s.tokens_per_second and s.peak_tflops:
        result["utilisation"] = utilisation(attention, s, measured, kernel)
        result["mfu"] = result["utilisation"]["mfu"]
    return result


FUSED_RESCORE = ("cpu_flash", "flash", "efficient", "cudnn")


def utilisation(attention: list[Part], s: Settings, measured: int, kernel: Optional[str]) -> dict[str, Any]:
    """MFU from the FLOPs of the mode measured, and HFU beside it (what the hardware runs, recomputation included).

    Model FLOPs (Chowdhery et al. 2022, App. B): forward, decode (one token against its cache) or train
    (forward + backward) per token, as measured in that mode. Hardware FLOPs add what kernels recompute: a fused
    attention kernel's backward (flash, memory-efficient, cuDNN, CPU flash) computes QKᵀ again, one more
    S×S_k product per attention (Dao et al. 2022, Algorithm 4); --recompute's second forward is in the
    measured count already, so MFU is not separated from it there.
    """
    rescore = 0
    if s.mode == "train" and kernel in FUSED_RESCORE:
        rescore = sum(cf.evaluate(cf.form(p).core, cf.values(p, 1, s.seq_len, s.seq_len)) for p in attention) // 2
        rescore //= s.seq_len
    hardware = measured + rescore
    conventions = {
        "mfu": f"model FLOPs of --mode {s.mode} per token × tokens/s / peak (Chowdhery et al. 2022, App. B)"
               + ("; --recompute: the measured FLOPs include the recomputed forward" if s.recompute else ""),
        "hfu": "hardware FLOPs: model FLOPs plus the scores a fused attention backward recomputes (one QKᵀ per "
               "attention layer)" + ("" if rescore or s.mode != "train" else f"; kernel {kernel}: none recomputed"),
    }
    return {"mode": s.mode, "flops_per_token": measured, "hardware_flops_per_token": hardware,
            "tokens_per_second": s.tokens_per_second, "peak_tflops": s.peak_tflops, "kernel": kernel,
            "mfu": mfu(measured, s.tokens_per_second, s.peak_tflops),
            "hfu": mfu(hardware, s.tokens_per_second, s.peak_tflops), "conventions": conventions}


def _notes(parts: dict[str, Part], s: Settings) -> list[str]:
    notes = ["flops: matmul FLOPs, 2 per multiply-add (macs = flops / 2), measured on the meta device; "
             "parameters shared between modules are counted once, in the first module that holds them"]
    if s.mode == "train":
        notes.append("train: forward + backward of the sum of every floating-point output (a model's inputs "
                     "of hidden states need a gradient, as after a trained embedding), counted with shapecheck's "
                     "formulas, each backward op at the module whose forward created its autograd node; a "
                     "formula's value is 3 × its forward (backward = dX + dW)"
                     + ("; --recompute: each layer runs under torch.utils.checkpoint (non-reentrant) and saves only "
                        "its input; its forward runs again in backward, stopping once the saved tensors are rebuilt "
                        "(a layer's last matmul is not rerun), so the total is below the 4 × forward convention; "
                        "formulas show the 4 × convention, rows are not compared" if s.recompute else ""))
        notes.append("memory: activations are the tensors autograd saves for backward, measured on meta "
                     "(deduplicated by storage, weights excluded) with each SDPA call run by the kernel assumed; "
                     "optimizer: Adam, two float32 moments (8 bytes/param) + a float32 master copy (4) when the "
                     "dtype is 16-bit")
    else:
        notes.append("memory: activations are measured with --mode train (null here)")
    if s.mode == "decode":
        notes.append(f"decode: one new token per sequence against a KV cache of {s.context} tokens "
                     f"(it attends to {s.context + 1} keys; S = 1, S_k = keys); attention scores and values "
                     "counted at one key and scaled to the keys")
    if any(p.kind == "moe" for p in parts.values()):
        notes.append(f"MoE routing assumption: {ROUTING}; active_params counts k of E experts")
    if any(p.flags.get("window") for p in parts.values()):
        notes.append("sliding window: the full S×S_k scores are counted as the kernel computes them; "
                     "in decode a query attends to min(keys, window) keys")
    notes.append("causal attention: the full S×S score matrix is counted (as torch.utils.flop_counter); "
                 "--causal-flops half gives the half flash kernels compute")
    return notes


__all__ = ["MODES", "ModelReport", "Row", "Settings", "model_report", "recognised"]
