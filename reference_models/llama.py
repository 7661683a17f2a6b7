"""Llama-style decoders (Touvron et al. 2023): RMSNorm, rotary positions, grouped-query attention, SwiGLU, optional MoE.

One model covers the family ``shapecheck report``'s presets name: Llama 2 and 3, Mistral (a sliding
window, Jiang et al. 2023), Mixtral (a mixture of experts, Jiang et al. 2024) and Qwen2 (q/k/v biases,
tied embeddings). Module names follow transformers' ``LlamaForCausalLM`` (``model.embed_tokens``,
``model.layers.{i}.self_attn.q_proj`` ...), so parameter counts line up name by name.

    h   = embed_tokens(ids)
    h   = h + self_attn(input_layernorm(h))         (rotary q and k; h_kv key/value heads shared by h/h_kv queries)
    h   = h + mlp(post_attention_layernorm(h))      (down(silu(gate(h)) * up(h)), or k of E such experts)
    out = lm_head(norm(h))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor, nn

from shapecheck import checked
from shapecheck.config import require_divisible, require_positive


@dataclass(frozen=True)
class LlamaConfig:
    """Sizes of one Llama-style model; the defaults are Llama-2-7B's published config."""

    vocab: int = 32000  # vocab_size
    d_model: int = 4096  # hidden_size
    layers: int = 32  # num_hidden_layers
    heads: int = 32  # num_attention_heads
    kv_heads: int = 32  # num_key_value_heads (GQA when < heads, MQA when 1)
    d_ff: int = 11008  # intermediate_size
    eps: float = 1e-5  # rms_norm_eps
    rope_theta: float = 10000.0
    window: Optional[int] = None  # sliding_window (Mistral)
    experts: int = 0  # num_local_experts (0: a dense SwiGLU MLP)
    top_k: int = 2  # num_experts_per_tok
    qkv_bias: bool = False  # Qwen2's q/k/v biases
    tie_embeddings: bool = False  # tie_word_embeddings

    def __post_init__(self) -> None:
        require_positive(self, "vocab", "d_model", "layers", "heads", "kv_heads", "d_ff")
        require_divisible(self, "d_model", "heads")
        require_divisible(self, "heads", "kv_heads")

    @property
    def d_head(self) -> int:
        return self.d_model // self.heads


class RMSNorm(nn.Module):
    """x / sqrt(mean(x²) + eps) · g (Zhang & Sennrich 2019): a gain, no bias, no mean subtraction."""

    def __init__(self, d_model: int, eps: float) -> None:
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(d_model)), eps

    def forward(self, x: Tensor) -> Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary(x: Float[Tensor, "batch heads seq d_head"], theta: float) -> Tensor:
    """Rotate pairs (i, i + d_head/2) by position · theta^(-2i/d_head) (Su et al. 2021, RoFormer, 3.4)."""
    half = x.shape[-1] // 2
    inv_freq = theta ** (-torch.arange(half, device=x.device, dtype=torch.float32) / half)
    angles = torch.arange(x.shape[-2], device=x.device, dtype=torch.float32)[:, None] * inv_freq  # (seq, half)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    first, second = x[..., :half], x[..., half:]
    return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)


class Attention(nn.Module):
    """Causal grouped-query self-attention (Ainslie et al. 2023), optionally within a sliding window."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        c = self.config = config
        self.num_heads, self.num_key_value_heads, self.head_dim = c.heads, c.kv_heads, c.d_head
        self.sliding_window = c.window
        self.q_proj = nn.Linear(c.d_model, c.heads * c.d_head, bias=c.qkv_bias)
        self.k_proj = nn.Linear(c.d_model, c.kv_heads * c.d_head, bias=c.qkv_bias)
        self.v_proj = nn.Linear(c.d_model, c.kv_heads * c.d_head, bias=c.qkv_bias)
        self.o_proj = nn.Linear(c.heads * c.d_head, c.d_model, bias=False)

    def _mask(self, seq: int, device: torch.device) -> Optional[Tensor]:
        if self.sliding_window is None or self.sliding_window >= seq:
            return None
        i = torch.arange(seq, device=device)
        return (i[None, :] <= i[:, None]) & (i[:, None] - i[None, :] < self.sliding_window)  # (seq, seq)

    @checked
    def forward(self, x: Float[Tensor, "batch seq d_model"]) -> Float[Tensor, "batch seq d_model"]:
        c = self.config
        batch, seq, _ = x.shape
        # 1) project: (batch, seq, d_model) -> (batch, heads | kv_heads, seq, d_head); rotate q and k
        q = rotary(self.q_proj(x).view(batch, seq, c.heads, c.d_head).transpose(1, 2), c.rope_theta)
        k = rotary(self.k_proj(x).view(batch, seq, c.kv_heads, c.d_head).transpose(1, 2), c.rope_theta)
        v = self.v_proj(x).view(batch, seq, c.kv_heads, c.d_head).transpose(1, 2)
        # 2) share each key/value head with heads/kv_heads query heads: (batch, heads, seq, d_head)
        k, v = (t.repeat_interleave(c.heads // c.kv_heads, dim=1) for t in (k, v))
        # 3) attend: (batch, heads, seq, seq) x (batch, heads, seq, d_head) -> (batch, heads, seq, d_head)
        mask = self._mask(seq, x.device)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None)
        # 4) merge heads and project back: (batch, seq, heads * d_head) -> (batch, seq, d_model)
        return self.o_proj(out.transpose(1, 2).reshape(batch, seq, c.heads * c.d_head))


class MLP(nn.Module):
    """SwiGLU (Shazeer 2020): down(silu(gate(x)) * up(x))."""

    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class MoE(nn.Module):
    """Each token to its top_k of E SwiGLU experts, weighted by the renormalised router softmax (Mixtral)."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.top_k = config.top_k
        self.gate = nn.Linear(config.d_model, config.experts, bias=False)
        self.experts = nn.ModuleList(MLP(config.d_model, config.d_ff) for _ in range(config.experts))

    def forward(self, x: Tensor) -> Tensor:
        flat = x.reshape(-1, x.shape[-1])  # (tokens, d_model)
        weights, chosen = torch.topk(self.gate(flat).softmax(-1), self.top_k, dim=-1)  # (tokens, top_k)
        weights = weights / weights.sum(-1, keepdim=True)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            token, slot = torch.where(chosen == e)
            out.index_add_(0, token, expert(flat[token]) * weights[token, slot, None])
        return out.reshape(x.shape)


class DecoderLayer(nn.Module):
    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(config.d_model, config.eps)
        self.self_attn = Attention(config)
        self.post_attention_layernorm = RMSNorm(config.d_model, config.eps)
        self.mlp = MoE(config) if config.experts else MLP(config.d_model, config.d_ff)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab, config.d_model)
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.layers))
        self.norm = RMSNorm(config.d_model, config.eps)

    def forward(self, input_ids: Int[Tensor, "batch seq"]) -> Float[Tensor, "batch seq d_model"]:
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    """The decoder and its language-model head (tied to the token embedding when ``tie_embeddings``)."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.config = config
        self.model = LlamaModel(config)
        self.lm_head = nn.Linear(config.d_model, config.vocab, bias=False)
        if config.tie_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, input_ids: Int[Tensor, "batch seq"]) -> Float[Tensor, "batch seq vocab"]:
        return self.lm_head(self.model(input_ids))
