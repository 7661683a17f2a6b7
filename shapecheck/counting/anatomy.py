"""What each submodule of any model is, for counting, as audit's recogniser says it.

``parts(model)`` reads ``shapecheck.auditing.recognize`` (each match's ``info``, filled by
``auditing/describe.py``) and gives each recognised thing a ``Part`` at the module that holds
exactly its parameters, so that the module's measured row can stand next to its closed form
(``shapecheck.counting.closed_forms``). Kinds: attention (separate q/k/v projections; h, h_kv,
d_head; or multi-head latent attention, flag ``latent``, with r_q, r_kv, d_nope, d_rope, d_v), mlp and gated_mlp (a feed-forward pair or SwiGLU/GeGLU triple), moe (a router and E
experts, each token to k), norm (LayerNorm or RMSNorm), embedding (an ``nn.Embedding`` table)
and linear (any other projection). A match whose parameters no single module holds alone
(BERT keeps an attention block's output projection and a feed-forward pair in different
modules) gives its projections ``linear`` parts; a packed qkv projection (GPT-2's ``c_attn``) is an
attention part at its block; fused attention (one kernel holding every weight) gets a measured row only. A module whose weights are tied to another's (audit counts a tensor once) gets the part its own
shape gives. Parts never nest: the outermost wins.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Optional

from torch import nn

from shapecheck.auditing.projections import Projection, as_projection, is_linear
from shapecheck.auditing.recognize import Match, recognize
from shapecheck.projections import lookup


@dataclass(frozen=True)
class Part:
    """A recognised module: its kind and the sizes its formula reads (``d_model``, ``h``, ``h_kv`` ...)."""

    kind: str  # attention | mlp | gated_mlp | moe | norm | embedding | linear
    sizes: dict[str, int] = field(default_factory=dict)
    flags: dict[str, Any] = field(default_factory=dict)  # bias, rms, window, relative, expert

    @property
    def cache_width(self) -> int:
        """Values an attention part caches per token: keys and values, 2·h_kv·d_head; multi-head latent attention
        caches its latent and the shared rotary key, r_kv + d_rope (DeepSeek-V2, Liu et al. 2024, section 2.1.2)."""
        if self.flags.get("latent"):
            return self.sizes["r_kv"] + self.sizes["d_rope"]
        return 2 * self.sizes["h_kv"] * self.sizes["d_head"]

    def describe(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.sizes.items())


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path and name else path or name


def _ids(params: Iterable[tuple[str, nn.Parameter]]) -> set[int]:
    return {id(p) for _, p in params}


def _holds_only(model: nn.Module, path: str, allowed: set[int]) -> bool:
    """The module at ``path`` exists and every parameter it holds is one of ``allowed``."""
    module = model.get_submodule(path) if path else model
    own = {id(p) for p in module.parameters()}
    return bool(own) and own <= allowed


def _linear(model: nn.Module, path: str, projection: Projection) -> Iterator[tuple[str, Part]]:
    """A projection that is a whole module of its own: a ``linear`` part."""
    if isinstance(lookup(model, path) if path else model, nn.Module) and _holds_only(model, path, _ids(projection.params)):
        yield path, Part("linear", {"d_in": projection.d_in, "d_out": projection.d_out}, {"bias": projection.has_bias})


def _split(model: nn.Module, match: Match) -> Iterator[tuple[str, Part]]:
    for projection in match.parts.values():
        yield from _linear(model, _join(match.path, projection.name), projection)


def _attention_home(model: nn.Module, match: Match, allowed: set[int]) -> Optional[tuple[str, str]]:
    """(module path, its prefix inside the match) of the module holding q, k and v and nothing else."""
    names = [match.parts[role].name for role in ("q", "k", "v") if role in match.parts]
    inner = ".".join(_common(n.split(".")[:-1] for n in names))
    for prefix in dict.fromkeys(("", inner)):
        if _holds_only(model, _join(match.path, prefix), allowed):
            return _join(match.path, prefix), prefix
    return None


def _common(lists: Iterable[list[str]]) -> list[str]:
    lists = list(lists)
    found: list[str] = []
    for items in zip(*lists):
        if len(set(items)) != 1:
            break
        found.append(items[0])
    return found


def _packed(model: nn.Module, match: Match) -> Optional[tuple[str, Part]]:
    """One qkv projection (GPT-2's ``c_attn``, nanoGPT's) and an output: the attention part, at the block."""
    info, qkv, out = match.info, match.parts.get("qkv"), match.parts.get("o")
    h, d_head = info.get("h"), info.get("d_head")
    if not (qkv and h and d_head) or (qkv.d_out - h * d_head) % (2 * d_head):
        return None
    if not _holds_only(model, match.path, _ids(match.all_params())):
        return None
    sizes = {"d_model": qkv.d_in, "h": h, "h_kv": (qkv.d_out - h * d_head) // (2 * d_head), "d_head": d_head}
    bias = {role: qkv.has_bias for role in ("q", "k", "v")}
    if out is not None:
        sizes["d_out"], bias["o"] = out.d_out, out.has_bias
    return match.path, Part("attention", sizes, {"bias": bias, "window": info.get("window"), "relative": False})


def _norms_inside(match: Match, matches: list[Match]) -> set[int]:
    """Parameters of the norms audit recognised inside an attention block (q/k norms: Qwen3, Olmo2, Gemma3)."""
    return {id(p) for m in matches if m.kind == "norm" and m.path.startswith(match.path + ".") for _, p in m.params}


def _latent(model: nn.Module, match: Match, matches: list[Match]) -> Iterator[tuple[str, Part]]:
    """Multi-head latent attention (DeepSeek-V2/V3) at its block, with its latents' norms; else its Linear rows."""
    info = match.info
    if not info.get("latent") or not _holds_only(model, match.path, _ids(match.all_params()) | _norms_inside(match, matches)):
        yield from _split(model, match)
        return
    names = ("d_model", "h", "h_kv", "d_head", "r_q", "r_kv", "d_nope", "d_rope", "d_v")
    sizes = {"d_model": match.parts["kv_a"].d_in, **{key: info[key] for key in names[1:] if key in info}}
    flags = {"latent": True, "low_rank": "r_q" in info, "bias": dict(info["bias"]), "window": None}
    yield match.path, Part("attention", sizes, flags)


def _attention(model: nn.Module, match: Match, matches: list[Match] = ()) -> Iterator[tuple[str, Part]]:
    info, parts = match.info, match.parts
    if "kv_a" in parts:
        yield from _latent(model, match, matches)
        return
    if "qkv" in parts and (packed := _packed(model, match)) is not None:
        yield packed
        return
    h, d_head = info.get("h"), info.get("d_head")
    q, k = parts.get("q"), parts.get("k")
    whole = all(isinstance(lookup(match.module, p.name), nn.Module) for p in parts.values())
    if not (q and k and h and d_head and whole) or q.d_out != h * d_head or k.d_out % d_head:
        yield from _split(model, match)
        return
    table = getattr(match.module, "relative_attention_bias", None)
    tables = {id(p) for p in table.parameters()} if "buckets" in info else set()
    allowed = _ids(match.all_params()) | tables | _norms_inside(match, matches)
    home = _attention_home(model, match, allowed)
    if home is None:
        yield from _split(model, match)
        return
    path, prefix = home
    inside = {role: p for role, p in parts.items() if not prefix or p.name.startswith(prefix + ".")}
    sizes = {"d_model": q.d_in, "h": h, "h_kv": k.d_out // d_head, "d_head": d_head}
    if "o" in inside:
        sizes["d_out"] = inside["o"].d_out
    sizes.update({"buckets": info["buckets"]} if "buckets" in info else {})
    bias = {role: p.has_bias for role, p in inside.items()}
    projected = {id(p) for projection in inside.values() for _, p in projection.params} | tables
    home_module = model.get_submodule(path) if path else model
    norms = {id(p) for sub in home_module.modules() if "norm" in type(sub).__name__.lower() for p in sub.parameters()}
    extra = {id(p): p for p in home_module.parameters() if id(p) not in projected}
    qk_norm = sum(p.numel() for i, p in extra.items() if i in norms)  # q/k norm gains: parameters, no matmul
    table = sum(p.numel() for i, p in extra.items() if i not in norms)  # Swin's relative-position bias table
    sizes.update({"qk_norm": qk_norm} if qk_norm else {})
    sizes.update({"table": table} if table else {})
    yield path, Part("attention", sizes, {"bias": bias, "window": info.get("window"), "relative": "buckets" in info,
                                          "qk_norm": bool(qk_norm), "table": bool(table)})
    for role, projection in parts.items():
        if role not in inside:
            yield from _linear(model, _join(match.path, projection.name), projection)


def _feed_forward(model: nn.Module, match: Match) -> Iterator[tuple[str, Part]]:
    if not _holds_only(model, match.path, _ids(match.all_params())):
        yield from _split(model, match)
        return
    kind = "gated_mlp" if match.info["gated"] else "mlp"
    sizes = {"d_model": match.info["d_model"], "d_ff": match.info["d_ff"]}
    yield match.path, Part(kind, sizes, {"bias": (match.parts.get("up") or match.parts["gate_up"]).has_bias})


def _moe(model: nn.Module, router: Match, matches: list[Match]) -> Iterator[tuple[str, Part]]:
    """The block holding the router and its experts (grouped, or one feed-forward match each)."""
    block = router.path.rpartition(".")[0]
    inside = [m for m in matches if m.path.startswith(block + ".") or not block]
    experts = [m for m in inside if m.kind == "moe_experts" or (m.kind == "feed_forward" and "expert" in m.info)]
    allowed = {i for m in inside for i in _ids(m.all_params())}
    k = router.info.get("top_k")
    if not experts or not k or not _holds_only(model, block, allowed):
        if is_linear(router.module) and (projection := as_projection("", router.module)) is not None:
            yield from _linear(model, router.path, projection)
        return
    first = experts[0].info
    sizes = {"d_model": first["d_model"], "d_ff": first["d_ff"], "E": router.info["experts"], "k": k}
    flags = {"expert": "gated_mlp" if first["gated"] else "mlp", "shared": None}
    shared = [m for m in inside if m.kind == "feed_forward" and m not in experts]  # every token visits these
    if shared and all(m.info["gated"] == shared[0].info["gated"] for m in shared):
        sizes["d_shared"] = sum(m.info["d_ff"] for m in shared)
        flags["shared"] = "gated_mlp" if shared[0].info["gated"] else "mlp"
        gates = [m.parts["linear"] for m in inside if m.kind == "linear" and m is not router
                 and "linear" in m.parts and m.parts["linear"].d_in == sizes["d_model"]]
        if gates:  # Qwen2-MoE's shared_expert_gate: a d_model → 1 Linear scaling the shared expert's output
            sizes["d_gate"] = sum(g.d_out for g in gates)
            flags["gate_bias"] = any(g.has_bias for g in gates)
    yield block, Part("moe", sizes, flags)


def _one(model: nn.Module, match: Match, matches: list[Match]) -> Iterator[tuple[str, Part]]:
    if match.kind == "attention":
        yield from _attention(model, match, matches)
    elif match.kind == "feed_forward":
        yield from _feed_forward(model, match)
    elif match.kind == "moe_router":
        yield from _moe(model, match, matches)
    elif match.kind in ("norm", "embedding") and not _holds_only(model, match.path, _ids(match.params)):
        return
    elif match.kind == "norm":
        yield match.path, Part("norm", {"d_model": match.info["width"]}, {"rms": match.info["type"] == "RMSNorm"})
    elif match.kind == "embedding" and isinstance(match.module, nn.Embedding):  # a gather: no matmul
        yield match.path, Part("embedding", {"rows": match.info["rows"], "d_model": match.info["width"]})
    elif match.kind in ("head", "pooler", "linear", "projection"):
        yield from _linear(model, match.path, match.parts["linear"])


def _within(path: str, owner: str) -> bool:
    return owner == path or not owner or path.startswith(owner + ".")


def _tied(model: nn.Module, matches: list[Match], found: dict[str, Part]) -> Iterator[tuple[str, Part]]:
    """A Linear or embedding whose weights audit counted at another module (a tied LM head, T5's shared
    table): the part its own shape gives, so its row carries a formula too."""
    owner = {id(p): m.path for m in matches for _, p in m.all_params()}
    for path, module in model.named_modules():
        params = list(module.parameters())
        if path in found or not params or any(_within(path, owner.get(id(p), path)) for p in params):
            continue
        if isinstance(module, nn.Embedding):
            yield path, Part("embedding", {"rows": module.num_embeddings, "d_model": module.embedding_dim})
        elif is_linear(module) and (projection := as_projection("", module)) is not None:
            yield path, Part("linear", {"d_in": projection.d_in, "d_out": projection.d_out}, {"bias": projection.has_bias})


def parts(model: nn.Module) -> dict[str, Part]:
    """Every recognised module by path, outermost first (nothing recognised inside a recognised part)."""
    matches = recognize(model)
    found = dict(part for match in matches for part in _one(model, match, matches))
    found.update(_tied(model, matches, found))
    out: dict[str, Part] = {}
    inside: Optional[str] = None  # named_modules is pre-order: a part's submodules follow it
    for path, _ in model.named_modules():
        if inside is not None and (inside == "" or path.startswith(inside + ".")):
            continue
        if path in found:
            out[path], inside = found[path], path
    return out
