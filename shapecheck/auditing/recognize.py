"""Say what each submodule is: attention blocks by their projection names, feed-forward pairs, norms, embeddings.

``STYLES`` (in ``shapecheck/projections.py``) is the one table of attention
projection names, shared with ``shapecheck verify``; audit also matches blocks
with a projection *missing*. A module is an attention block when it holds at
least two of a style's q/k/v projections (or its fused or packed projection);
its output projection is looked up in the module, then in its parent (BERT
keeps ``output.dense`` next to ``self``). Multi-head latent attention (``LATENT``: DeepSeek-V2/V3's
low-rank query, latent kv projection and its per-head expansion) is tried first. A feed-forward's up
projection may be packed with its gate (Phi-3's ``gate_up_proj``: d_model -> 2·d_ff, then d_ff -> d_model). Every parameter is claimed once, in
this order: attention projections, norms, embeddings, parameters left inside
an attention block (extras), mixture-of-experts routers and grouped experts,
feed-forward pairs (d_model -> d_ff -> d_model) and gated triples (SwiGLU),
then single projections (pooler, heads, ALBERT's factorised embedding
projection E -> H) and anything else.

Each match says what it is in ``info`` (``describe.py``): an attention block's
``h``, ``h_kv``, ``d_head`` and which of q/k/v/o have a bias (and what its config
or family declares); a feed-forward's ``d_ff`` and ``gated``; a norm's ``type``
(LayerNorm or RMSNorm); an embedding's ``rows``, ``width`` and the projection that
factorises it; a router's and the experts' ``experts`` count.

Kinds: attention | feed_forward | norm | embedding | projection | moe_router |
moe_experts | pooler | head | linear | other.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Optional

from torch import nn

from shapecheck.auditing.describe import describe
from shapecheck.auditing.moe import grouped_expert_info, moe_parts, top_k
from shapecheck.auditing.projections import Projection, as_projection, is_linear, packed_projection
from shapecheck.projections import LATENT, OUTPUT_NAMES, STYLES, Style, lookup
from shapecheck.target import HEAD_NAMES


# Any of these, found in an attention block besides its output projection, duplicates it.


@dataclass
class Match:
    """A recognised submodule: what it is, where, and the parameters it owns (paths relative to ``path``)."""

    kind: str  # attention | feed_forward | norm | embedding | projection | moe_router | moe_experts | pooler | head | linear | other
    path: str
    style: str
    parts: dict[str, Projection] = field(default_factory=dict)  # role -> projection
    params: list[tuple[str, nn.Parameter]] = field(default_factory=list)  # raw parameters (norms, tables, extras)
    duplicates: list[Projection] = field(default_factory=list)  # second output projections
    heads: Optional[int] = None
    module: Optional[nn.Module] = None
    info: dict[str, object] = field(default_factory=dict)  # what it is: see describe.py

    def all_params(self) -> list[tuple[str, nn.Parameter]]:
        """Every parameter of the match as (path relative to the block, parameter)."""
        found = [p for part in self.parts.values() for p in part.params]
        found += [p for dup in self.duplicates for p in dup.params]
        return found + self.params

    def full_name(self, relative: str) -> str:
        return f"{self.path}.{relative}" if self.path else relative


def _projection(module: nn.Module, name: str) -> Optional[Projection]:
    found = lookup(module, name)
    if isinstance(found, nn.Parameter):
        return _packed(module, name, found)
    return as_projection(name, found) if isinstance(found, nn.Module) else None


def _packed(module: nn.Module, name: str, weight: nn.Parameter) -> Optional[Projection]:
    """torch's packed weights; ``in_proj_bias`` (3·d_model) goes with ``in_proj_weight``, or with
    ``q_proj_weight`` when kdim/vdim differ (then k and v have their thirds of it)."""
    bias = getattr(module, "in_proj_bias", None)
    if name in ("in_proj_weight", "q_proj_weight"):
        return packed_projection(name, weight, bias)
    proj = packed_projection(name, weight, None)
    return replace(proj, has_bias=isinstance(bias, nn.Parameter)) if proj else None


def _match_style(module: nn.Module) -> Optional[tuple[Style, dict[str, Projection]]]:
    for style in STYLES:
        found = {role: p for role, name in zip("qkv", style.qkv) if (p := _projection(module, name)) is not None}
        if len(style.qkv) == 1 and found:
            return style, {"qkv": found["q"]}
        if len(found) >= 2:
            return style, found
    return None


def _outputs(module: nn.Module, style: Style, taken: set[int]) -> list[Projection]:
    """Output projections in ``module``: the style's names first, then any other output name."""
    found: list[Projection] = []
    for name in dict.fromkeys(style.outputs + OUTPUT_NAMES):
        proj = _projection(module, name)
        if proj is not None and not any(id(p) in taken for _, p in proj.params):
            found.append(proj)
            taken.update(id(p) for _, p in proj.params)
    return found


def _heads(*modules: nn.Module) -> Optional[int]:
    """A head count stored on the block or its config (num_heads, n_head, heads, ...)."""
    for module in modules:
        for owner in (module, getattr(module, "config", None)):
            for name in sorted(HEAD_NAMES):
                value = getattr(owner, name, None)
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    return value
    return None


def _parent(path: str) -> tuple[str, str]:
    parent, _, child = path.rpartition(".")
    return parent, child


def _latent(path: str, module: nn.Module, claimed: set[int]) -> Optional[Match]:
    """Multi-head latent attention (DeepSeek-V2/V3): a latent kv projection narrower than its per-head expansion
    reads (kv_a: d_model -> r_kv + d_rope, kv_b: r_kv -> h·(d_nope + d_v)) and a query (one Linear, or a low-rank pair
    whose inner widths agree); its output projection by the usual names."""
    found = {role: p for role, name in LATENT.items()
             if isinstance(m := lookup(module, name), nn.Module) and is_linear(m) and (p := as_projection(name, m))}
    kv_a, kv_b = found.get("kv_a"), found.get("kv_b")
    low_rank = "q_a" in found and "q_b" in found and found["q_a"].d_out == found["q_b"].d_in
    if not (kv_a and kv_b and kv_b.d_in < kv_a.d_out and ("q" in found or low_rank)):
        return None
    if kv_a.d_in != (found["q_a"] if low_rank else found["q"]).d_in:
        return None
    parts = {role: found[role] for role in (("q_a", "q_b") if low_rank else ("q",))}
    parts.update(kv_a=kv_a, kv_b=kv_b)
    outputs = _outputs(module, STYLES[0], {id(p) for part in parts.values() for _, p in part.params})
    if outputs:
        parts["o"] = outputs[0]
    label = " + ".join(part.name for part in parts.values()) + " (latent, MLA)"
    match = Match("attention", path, label, parts, duplicates=outputs[1:], heads=_heads(module), module=module)
    claimed.update(id(p) for _, p in match.all_params())
    return match


def _attention(model: nn.Module, path: str, module: nn.Module, claimed: set[int]) -> Optional[Match]:
    latent = _latent(path, module, claimed)
    if latent is not None:
        return latent
    matched = _match_style(module)
    if matched is None:
        return None
    style, parts = matched
    taken = {id(p) for part in parts.values() for _, p in part.params}
    outputs, root, root_path, prefix = _outputs(module, style, taken), module, path, ""
    if not outputs and path:  # BERT: the output dense lives in the parent's ``output``
        parent_path, child = _parent(path)
        parent = model.get_submodule(parent_path) if parent_path else model
        outputs = [o for o in _outputs(parent, style, taken) if not o.name.startswith(f"{child}.") and o.name != child]
        if outputs:
            root, root_path, prefix = parent, parent_path, f"{child}."
    parts = {role: _prefixed(part, prefix) for role, part in parts.items()}
    if outputs:
        parts["o"] = outputs[0]
    for role in ("bias_k", "bias_v"):
        if isinstance(getattr(module, role, None), nn.Parameter):
            parts[role] = Projection(prefix + role, 0, 0, ((prefix + role, getattr(module, role)),), False)
    label = style.label if outputs or len(parts) < 2 else style.label.split(" + ")[0]
    match = Match("attention", root_path, label, parts, duplicates=outputs[1:], heads=_heads(module, root), module=root)
    claimed.update(id(p) for _, p in match.all_params())
    return match


def _prefixed(part: Projection, prefix: str) -> Projection:
    if not prefix:
        return part
    params = tuple((prefix + name, p) for name, p in part.params)
    return Projection(prefix + part.name, part.d_in, part.d_out, params, part.has_bias)


def _own_params(module: nn.Module) -> list[tuple[str, nn.Parameter]]:
    return list(module.named_parameters(recurse=False))


def _is_norm(module: nn.Module) -> bool:
    own = _own_params(module)
    has_children = any(True for _ in module.children())
    return "norm" in type(module).__name__.lower() and not has_children and all(p.dim() == 1 for _, p in own)


def _is_embedding(module: nn.Module) -> bool:
    own = _own_params(module)
    return isinstance(module, nn.Embedding) or (
        type(module).__name__.endswith("Embedding") and len(own) == 1 and own[0][1].dim() == 2
    )


def _leaf_matches(modules: list[tuple[str, nn.Module]], claimed: set[int]) -> Iterator[Match]:
    for path, module in modules:
        own = [(n, p) for n, p in _own_params(module) if id(p) not in claimed]
        kind = "norm" if _is_norm(module) else "embedding" if _is_embedding(module) else None
        if kind is None or not own:
            continue
        claimed.update(id(p) for _, p in own)
        yield Match(kind, path, type(module).__name__, params=own, module=module)


def _unclaimed_params(module: nn.Module, claimed: set[int]) -> list[tuple[str, nn.Parameter]]:
    return [(n, p) for n, p in module.named_parameters() if id(p) not in claimed]


def _attach_extras(attention: list[Match], claimed: set[int]) -> None:
    for match in attention:
        extras = _unclaimed_params(match.module, claimed)  # type: ignore[arg-type]
        match.params.extend(extras)
        claimed.update(id(p) for _, p in extras)


def _free_linears(module: nn.Module, claimed: set[int]) -> list[tuple[str, Projection]]:
    """Linear/Conv1D modules under ``module`` whose parameters nobody claimed, with paths relative to it."""
    found = []
    for name, child in module.named_modules():
        proj = as_projection(name, child) if is_linear(child) else None
        if proj is not None and not any(id(p) in claimed for _, p in proj.params):
            found.append((name, proj))
    return found


def _feed_forward(path: str, module: nn.Module, claimed: set[int]) -> Iterator[Match]:
    """d_model -> d_ff (-> gate) -> d_model triples or pairs inside ``module`` (d_ff != d_model)."""
    linears = [proj for _, proj in _free_linears(module, claimed)]
    fits = lambda u, down: u.d_in == down.d_out and u.d_out == down.d_in and u.d_in != u.d_out  # noqa: E731
    for i, down in enumerate(linears):  # the up projections come before the down one, in module order ...
        ups = [u for u in linears[:i] if fits(u, down) and not _taken(u, claimed)][-2:]
        after = linears[i + 1] if i + 1 < len(linears) else None
        if len(ups) == 1 and after is not None and fits(after, down) and not _taken(after, claimed) \
                and after.has_bias == ups[0].has_bias and not any(fits(after, d) for d in linears[i + 2:]):
            ups.append(after)  # ... or, Meta's w1/w2/w3 (Touvron et al. 2023), gate, down, then up
        packed = [u for u in linears[:i] if u.d_in == down.d_out != u.d_out == 2 * down.d_in and not _taken(u, claimed)]
        if _taken(down, claimed) or not (ups or packed):
            continue
        gated = len(ups) == 2 and ups[0].has_bias == ups[1].has_bias
        if not ups:  # Phi-3's gate_up_proj: gate and up in one Linear of 2·d_ff outputs, chunked in two
            gated, parts = True, {"gate_up": packed[-1], "down": down}
        else:
            parts = {"gate": ups[0], "up": ups[1], "down": down} if gated else {"up": ups[-1], "down": down}
        style = " + ".join(p.name for p in parts.values())
        match = Match("feed_forward", path, style + (" (gated)" if gated else ""), parts, module=module)
        claimed.update(id(p) for _, p in match.all_params())
        yield match


def _taken(proj: Projection, claimed: set[int]) -> bool:
    return any(id(p) in claimed for _, p in proj.params)


def _singles(modules: list[tuple[str, nn.Module]], claimed: set[int]) -> Iterator[Match]:
    for path, module in modules:
        proj = as_projection("", module) if is_linear(module) else None
        if proj is not None and not any(id(p) in claimed for _, p in proj.params):
            params = tuple((name.lstrip("."), p) for name, p in proj.params)
            kind = _single_kind(path)
            claimed.update(id(p) for _, p in params)
            yield Match(kind, path, type(module).__name__, {"linear": Projection("", proj.d_in, proj.d_out, params, proj.has_bias)}, module=module)


HEAD_WORDS = ("head", "classifier", "score", "qa_outputs", "proj_out")


def _single_kind(path: str) -> str:
    parts = path.split(".")
    if "pooler" in parts:
        return "pooler"
    return "head" if any(w in parts[-1] for w in HEAD_WORDS) else "linear"


def _moe(path: str, module: nn.Module, claimed: set[int]) -> Iterator[Match]:
    """The router and grouped experts of a mixture-of-experts block (a ModuleList of experts is left to the feed-forward pass)."""
    found = moe_parts(module)
    if found is None:
        return
    name, router, experts = found
    router_path = f"{path}.{name}" if path else name
    own = [(n, p) for n, p in router.named_parameters() if id(p) not in claimed]
    if own:
        claimed.update(id(p) for _, p in own)
        k = top_k(module)
        yield Match("moe_router", router_path, type(router).__name__, params=own, module=router,
                    info={"top_k": k} if k else {})
    info = grouped_expert_info(experts)
    params = [(n, p) for n, p in experts.named_parameters() if id(p) not in claimed]
    if info is not None and params:
        claimed.update(id(p) for _, p in params)
        experts_path = f"{path}.experts" if path else "experts"
        yield Match("moe_experts", experts_path, type(experts).__name__, params=params, module=experts, info=info)


def _others(modules: list[tuple[str, nn.Module]], claimed: set[int]) -> Iterator[Match]:
    for path, module in modules:
        own = [(n, p) for n, p in _own_params(module) if id(p) not in claimed]
        if own:
            claimed.update(id(p) for _, p in own)
            yield Match("other", path, type(module).__name__, params=own, module=module)


def recognize(model: nn.Module) -> list[Match]:
    """Every parameter of ``model`` in exactly one match, attention blocks first (module order within a kind)."""
    modules = list(model.named_modules())  # each module once, parents before children
    claimed: set[int] = set()
    attention = [m for path, module in modules if (m := _attention(model, path, module, claimed)) is not None]
    leaves = list(_leaf_matches(modules, claimed))
    _attach_extras(attention, claimed)
    experts = [m for path, module in modules for m in _moe(path, module, claimed)]
    deepest_first = sorted(modules, key=lambda item: -item[0].count(".") - bool(item[0]))
    ffn = [m for path, module in deepest_first for m in _feed_forward(path, module, claimed)]
    singles = list(_singles(modules, claimed))
    found = _in_model_order(model, attention + leaves + experts + ffn + singles + list(_others(modules, claimed)))
    return describe(model, found)


def _in_model_order(model: nn.Module, matches: list[Match]) -> list[Match]:
    """By the position of each match's first parameter in ``model.named_parameters()``."""
    order = {id(p): i for i, p in enumerate(model.parameters())}
    return sorted(matches, key=lambda m: min((order.get(id(p), 0) for _, p in m.all_params()), default=0))
