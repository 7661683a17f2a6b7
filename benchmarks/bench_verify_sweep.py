"""Correct third-party attention classes that no test names: does ``shapecheck verify`` pass them with default flags?

Each class is built the way the command line builds it (``load_target`` with default options; transformers
classes from small configs, never from the hub). Per class it prints passed / failed (the properties that
failed: each is a false alarm unless reading it shows a real bug) / could not run / nothing checked (every
property skipped: exit 2), and whether the float64
reference comparison ran (passed or warned) or was skipped and why. Totals: classes passing by default,
false alarms, and the share of passing classes on which the reference ran.

    python benchmarks/bench_verify_sweep.py [--examples 8] [--json]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from shapecheck.errors import ShapecheckError  # noqa: E402
from shapecheck.target import load_target  # noqa: E402
from shapecheck.testing import VerifyOptions, verify  # noqa: E402

T = "transformers.models."
TRANSFORMERS = """marian:MarianAttention pegasus:PegasusAttention m2m_100:M2M100Attention mbart:MBartAttention longt5:LongT5Attention
umt5:UMT5Attention blenderbot:BlenderbotAttention plbart:PLBartAttention gemma2:Gemma2Attention gemma3:Gemma3Attention
qwen3:Qwen3Attention olmo2:Olmo2Attention olmo:OlmoAttention phi3:Phi3Attention gpt_neox:GPTNeoXAttention
persimmon:PersimmonAttention stablelm:StableLmAttention cohere:CohereAttention starcoder2:Starcoder2Attention
granite:GraniteAttention gpt_bigcode:GPTBigCodeAttention mpt:MptAttention mixtral:MixtralAttention codegen:CodeGenAttention
glm:GlmAttention helium:HeliumAttention smollm3:SmolLM3Attention deit:DeiTAttention beit:BeitAttention dinov2:Dinov2Attention
wav2vec2:Wav2Vec2Attention siglip:SiglipAttention xlm_roberta:XLMRobertaSelfAttention camembert:CamembertSelfAttention
mpnet:MPNetSelfAttention hubert:HubertAttention speecht5:SpeechT5Attention qwen2_moe:Qwen2MoeAttention
deepseek_v3:DeepseekV3Attention swin:SwinAttention sam:SamAttention olmoe:OlmoeAttention granitemoe:GraniteMoeAttention""".split()
SPECS = [f"{T}{m}.modeling_{m}:{c}" for m, c in (s.split(":") for s in TRANSFORMERS)] + [
    "whisper.model:MultiHeadAttention",
    "diffusers.models.attention_processor:Attention",
]


def run(spec: str, examples: int) -> dict:
    try:
        importlib.import_module(spec.split(":")[0])
    except Exception as error:  # noqa: BLE001 - a package that does not import here is reported, not measured
        return {"spec": spec, "outcome": "not importable", "detail": f"{type(error).__name__}: {str(error)[:80]}"}
    try:
        report = verify(load_target(spec), VerifyOptions(max_examples=examples, seed=0))
    except ShapecheckError as error:
        return {"spec": spec, "outcome": "could not run", "detail": str(error).splitlines()[0][:160]}
    failed = {r.name: r.message[:160] for r in report.results if r.status == "failed"}
    ref = next((r for r in report.results if r.name == "reference"), None)
    outcome = "failed" if failed else ("passed" if report.checked else "nothing checked")
    return {"spec": spec, "outcome": outcome, "failed": failed,
            "reference": ref.status if ref else "absent", "reference_reason": ref.reason[:160] if ref else ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=8)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [run(spec, args.examples) for spec in SPECS]
    measured = [r for r in rows if r["outcome"] in ("passed", "failed")]
    passing = [r for r in measured if r["outcome"] == "passed"]
    ran = [r for r in passing if r["reference"] in ("passed", "warning")]
    totals = {"classes": len(rows), "measured": len(measured), "passed": len(passing),
              "failed_classes": len(measured) - len(passing), "failed_properties": sum(len(r.get("failed", {})) for r in measured),
              "reference_ran_on_passing": len(ran)}
    if args.json:
        print(json.dumps({"totals": totals, "rows": rows}, indent=1))
        return
    for r in rows:
        name = r["spec"].replace(T, "")
        if r["outcome"] in ("not importable", "could not run", "nothing checked"):
            print(f"  {name:<58} {r['outcome']}: {r.get('detail', 'every property skipped (exit 2)')}")
            continue
        ref = r["reference"] + ("" if r["reference"] in ("passed", "warning") else f" ({r['reference_reason']})")
        print(f"  {name:<58} {r['outcome']:<7} reference {ref}")
        for prop, message in r["failed"].items():
            print(f"      {prop}: {message}")
    print(f"{totals['passed']}/{totals['measured']} classes pass with default flags ({totals['classes']} listed); "
          f"{totals['failed_properties']} failed properties on {totals['failed_classes']} classes; "
          f"reference ran on {totals['reference_ran_on_passing']}/{totals['passed']} passing classes")


if __name__ == "__main__":
    main()
