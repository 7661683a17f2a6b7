"""The real corpus (installed packages' attention code, read in place) gives no error or warning, except the
real bugs listed here; a package that is not installed is skipped."""

from __future__ import annotations

import pytest

from shapecheck.lint import lint_file

from .real_corpus import PACKAGES, files, package_dir

# Findings on the installed sources that are real bugs, each checked by reading the code:
# (package, path inside it, code, why it is right).
KNOWN_BUGS = {
    ("vit_pytorch", "simple_flash_attn_vit.py", "SC111"): "einsum is called but never imported (non-flash path)",
    ("vit_pytorch", "simple_flash_attn_vit_3d.py", "SC111"): "einsum is called but never imported",
    ("x_transformers", "continuous.py", "SC111"): "'inp' is read but never assigned when lens is given",
    ("vit_pytorch", "vivit.py", "SC114"): "SDPA's dropout_p=self.dropout_p has no training check",
    ("vit_pytorch", "vivit_with_moss.py", "SC114"): "SDPA's dropout_p=self.dropout_p has no training check",
    ("vit_pytorch", "sep_vit.py", "SC156"):
        "SepViT takes dim_head and never uses it: its Transformer stages are built without it and keep dim_head=32",
    ("transformers", "models/gpt_bigcode/modeling_gpt_bigcode.py", "SC127"):
        "encoder_attention_mask.unsqueeze(1) is a statement: a 2-D mask stays 2-D and the assert below fails",
    ("transformers", "models/evolla/modeling_evolla.py", "SC122"):
        "the aligner's cross-attention scales queries by num_attention_heads ** -0.5, its head size is hidden / heads",
    ("transformers", "models/paddleocr_vl/modeling_paddleocr_vl.py", "SC173"):
        "the vision encoder builds its bidirectional attention_mask and never passes it to its layers",
    ("transformers", "models/wav2vec2/modeling_wav2vec2.py", "SC173"):
        "pre-training reduces attention_mask to the feature vectors 'so padded vectors cannot be sampled', then never "
        "uses it",
    ("transformers", "models/wav2vec2_conformer/modeling_wav2vec2_conformer.py", "SC173"):
        "the same reduced attention_mask, computed and never used",
    ("x_transformers", "continuous.py", "SC173"): "forward_rollout pops the caller's mask, keeps its valid rows and "
                                                  "never passes it on: the rollout attends to padding",
    ("x_transformers", "continuous.py", "SC183"): "the same 'inp', read on the lens path where nothing binds it",
    ("transformers", "models/visual_bert/modeling_visual_bert.py", "SC183"):
        "with bypass_transformer the text branch binds encoded_outputs, and the return reads encoder_outputs, which "
        "only the other branch binds: UnboundLocalError",
    ("transformers", "models/dab_detr/modeling_dab_detr.py", "SC183"):
        "the attention binds hidden_states_original only when object_queries is given, and its default is None: the "
        "value projection then reads an unbound name",
    ("diffusers", "models/transformers/transformer_sana_video.py", "SC183"):
        "query_rotate and key_rotate are made only when rotary_emb is given (default None), then permuted regardless",
    ("diffusers", "models/transformers/transformer_hunyuan_video_framepack.py", "SC183"):
        "the clean and history rotary embeddings are made only when their indices are given (default None), then "
        "all passed on: a call that leaves them out raises UnboundLocalError",
    ("transformers", "models/deberta/modeling_deberta.py", "SC186"):
        "build_relative_position(query_layer, key_layer) is called with the device as a third argument where the "
        "caller gives no relative_pos: TypeError",
    ("diffusers", "models/transformers/transformer_qwenimage.py", "SC186"):
        "with guidance the time embedding's forward(timestep, hidden_states, addition_t_cond) is given four arguments",
    ("diffusers", "models/transformers/transformer_bria.py", "SC186"):
        "with guidance_embeds the guidance embedding is built without time_theta, which its __init__ requires",
    ("transformers", "models/rwkv/modeling_rwkv.py", "SC186"):
        "the CUDA kernel's state is made with torch.zeros(..., memory_format=...), a keyword torch.zeros does not "
        "take: TypeError where a state is asked for and none given",
    ("transformers", "models/cvt/modeling_cvt.py", "SC103"):
        "CvT scales the scores by embed_dim ** -0.5, the width, not the head size (as the original CvT code does, "
        "whose weights rely on it); read since lint follows torch.einsum(equation, [q, k])",
}
ALLOWED_INFO = {"SC002"}  # an empty module is not a problem


SHARDS = 6  # each package's files are split so that the workers share the large ones


def _findings(package: str, shard: int) -> list[tuple[str, int, str, str]]:
    root = package_dir(package)
    found = []
    for path in files(package)[shard::SHARDS]:
        for f in lint_file(str(path)):
            if f.severity != "info" or f.code not in ALLOWED_INFO:
                found.append((str(path.relative_to(root)), f.line, f.code, f.message))  # type: ignore[union-attr]
    return found


@pytest.mark.parametrize("shard", range(SHARDS))
@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_installed_attention_code_has_no_finding_but_its_known_bugs(package, shard):
    if not files(package)[shard::SHARDS]:
        pytest.skip(f"{package} is not installed (or has fewer than {shard + 1} files)")
    unexpected = [f for f in _findings(package, shard) if (package, f[0], f[2]) not in KNOWN_BUGS]
    assert unexpected == []


def test_the_corpus_is_large_enough_to_mean_something():
    installed = [p for p in PACKAGES if files(p)]
    if "transformers" not in installed:
        pytest.skip("transformers is not installed")
    assert len(files("transformers")) > 300 and sum(len(files(p)) for p in installed) > 400
