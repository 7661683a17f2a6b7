"""The transformers models of issue 11, each built from a small config (no weights downloaded).

``ZOO[name](layers=2)`` returns a fresh model in eval mode; ``TIMM`` builds timm's ViT
when timm imports. Sizes are tiny so a forward runs in milliseconds; each
config keeps its family's structure (biases, gating, grouped-query heads,
ALBERT's factorised embedding E != H, position tables).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import transformers as T

D, HEADS, FF, VOCAB, POS, LAYERS = 32, 4, 64, 97, 24, 2


def _eval(model: torch.nn.Module) -> torch.nn.Module:
    return model.eval()


def _decoder(config_class: type, model_class: type, **extra: object) -> Callable[[], torch.nn.Module]:
    def build(layers: int = LAYERS) -> torch.nn.Module:
        config = config_class(vocab_size=VOCAB, hidden_size=D, intermediate_size=FF, num_hidden_layers=layers,
                              num_attention_heads=HEADS, max_position_embeddings=POS, **extra)
        return _eval(model_class(config))
    return build


def bert(layers: int = LAYERS) -> torch.nn.Module:
    return _eval(T.BertModel(T.BertConfig(vocab_size=VOCAB, hidden_size=D, num_hidden_layers=layers, num_attention_heads=HEADS,
                                          intermediate_size=FF, max_position_embeddings=POS)))


def roberta(layers: int = LAYERS) -> torch.nn.Module:
    return _eval(T.RobertaModel(T.RobertaConfig(vocab_size=VOCAB, hidden_size=D, num_hidden_layers=layers, num_attention_heads=HEADS,
                                                intermediate_size=FF, max_position_embeddings=POS)))


def distilbert(layers: int = LAYERS) -> torch.nn.Module:
    return _eval(T.DistilBertModel(T.DistilBertConfig(vocab_size=VOCAB, dim=D, n_layers=layers, n_heads=HEADS, hidden_dim=FF,
                                                      max_position_embeddings=POS)))


def albert(layers: int = LAYERS) -> torch.nn.Module:
    return _eval(T.AlbertModel(T.AlbertConfig(vocab_size=VOCAB, embedding_size=16, hidden_size=D, num_hidden_layers=layers,
                                              num_attention_heads=HEADS, intermediate_size=FF, max_position_embeddings=POS)))


def gpt2(layers: int = LAYERS) -> torch.nn.Module:
    return _eval(T.GPT2Model(T.GPT2Config(vocab_size=VOCAB, n_positions=POS, n_embd=D, n_layer=layers, n_head=HEADS, bos_token_id=0, eos_token_id=0)))


def opt(layers: int = LAYERS) -> torch.nn.Module:
    return _eval(T.OPTModel(T.OPTConfig(vocab_size=VOCAB, hidden_size=D, num_hidden_layers=layers, num_attention_heads=HEADS,
                                        ffn_dim=FF, max_position_embeddings=POS, word_embed_proj_dim=D)))


def bloom(layers: int = LAYERS) -> torch.nn.Module:
    return _eval(T.BloomModel(T.BloomConfig(vocab_size=VOCAB, hidden_size=D, n_layer=layers, n_head=HEADS)))


def falcon(layers: int = LAYERS) -> torch.nn.Module:
    return _eval(T.FalconModel(T.FalconConfig(vocab_size=VOCAB, hidden_size=D, num_hidden_layers=layers, num_attention_heads=HEADS)))


def t5(layers: int = LAYERS) -> torch.nn.Module:
    return _eval(T.T5Model(T.T5Config(vocab_size=VOCAB, d_model=D, d_kv=8, d_ff=FF, num_layers=layers, num_heads=HEADS)))


def bart(layers: int = LAYERS) -> torch.nn.Module:
    return _eval(T.BartModel(T.BartConfig(vocab_size=VOCAB, d_model=D, encoder_layers=layers, decoder_layers=layers,
                                          encoder_attention_heads=HEADS, decoder_attention_heads=HEADS, encoder_ffn_dim=FF,
                                          decoder_ffn_dim=FF, max_position_embeddings=POS)))


def whisper(layers: int = LAYERS) -> torch.nn.Module:
    return _eval(T.WhisperModel(T.WhisperConfig(vocab_size=VOCAB, d_model=D, encoder_layers=layers, decoder_layers=layers,
                                                encoder_attention_heads=HEADS, decoder_attention_heads=HEADS, encoder_ffn_dim=FF,
                                                decoder_ffn_dim=FF, num_mel_bins=8, max_source_positions=16,
                                                max_target_positions=POS, pad_token_id=1, bos_token_id=1, eos_token_id=2,
                                                decoder_start_token_id=1, suppress_tokens=[], begin_suppress_tokens=[])))


def vit(layers: int = LAYERS) -> torch.nn.Module:
    return _eval(T.ViTModel(T.ViTConfig(hidden_size=D, num_hidden_layers=layers, num_attention_heads=HEADS, intermediate_size=FF,
                                        image_size=16, patch_size=4, num_channels=3)))


def clip_text(layers: int = LAYERS) -> torch.nn.Module:
    return _eval(T.CLIPTextModel(T.CLIPTextConfig(vocab_size=VOCAB, hidden_size=D, num_hidden_layers=layers, num_attention_heads=HEADS,
                                                  intermediate_size=FF, max_position_embeddings=POS, bos_token_id=0, eos_token_id=2)))


ZOO: dict[str, Callable[[], torch.nn.Module]] = {
    "bert": bert, "roberta": roberta, "distilbert": distilbert, "albert": albert, "gpt2": gpt2, "opt": opt, "bloom": bloom,
    "llama": _decoder(T.LlamaConfig, T.LlamaModel, num_key_value_heads=2),
    "mistral": _decoder(T.MistralConfig, T.MistralModel, num_key_value_heads=2),
    "mixtral": _decoder(T.MixtralConfig, T.MixtralModel, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2),
    "qwen2": _decoder(T.Qwen2Config, T.Qwen2Model, num_key_value_heads=2),
    "gemma": _decoder(T.GemmaConfig, T.GemmaModel, num_key_value_heads=2, head_dim=8),
    "phi": _decoder(T.PhiConfig, T.PhiModel),
    "falcon": falcon, "t5": t5, "bart": bart, "whisper": whisper, "vit": vit, "clip_text": clip_text,
}

# Models whose learned position table caps the sequence: name -> the largest length that runs
# (RoBERTa's table reserves padding_idx + 1 = 2 rows before the first position; OPT's and BART's tables add 2 rows).
POSITION_BOUND = {"bert": POS, "roberta": POS - 2, "distilbert": POS, "albert": POS, "gpt2": POS, "opt": POS, "bart": POS,
                  "whisper": POS, "clip_text": POS}


def timm_vit(layers: int = LAYERS) -> torch.nn.Module:
    import timm  # raises when timm (or its torchvision dependency) does not import

    return _eval(timm.models.vision_transformer.VisionTransformer(img_size=16, patch_size=4, embed_dim=D, depth=layers,
                                                                  num_heads=HEADS, num_classes=0))
