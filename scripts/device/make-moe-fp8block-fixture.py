#!/usr/bin/env python3
"""Makes tests/data/hf/qwen3-moe-fp8block: a tiny, randomly initialised
Qwen3-MoE stored as Qwen's FP8 releases store a checkpoint (config.json
quantization_config {"quant_method": "fp8", "activation_scheme":
"dynamic", "weight_block_size": [128, 128]}; every model.layers.*proj
.weight E4M3 with an F32 weight_scale_inv per 128 x 128 block, quantized
by make-quant-fixture.py's fp8_block; embeddings, norms, router and
lm_head bf16), whose widths hold whole 128 x 128 blocks at TP 1 and 2:
hidden 128, 2 / 2 heads of head_dim 128 (k/v 256 rows: 128 a rank at TP
2), 3 experts, top 2, moe_intermediate_size 256 (128 an expert a rank at
TP 2), one layer, vocabulary 128.  reference.json: transformers' tokens
and logits (float32 forward) with the dequantized weights.  Runs on CPU;
needs torch, transformers and safetensors.

    python3 scripts/device/make-moe-fp8block-fixture.py OUTDIR
"""
import importlib
import json
import os
import sys

import torch
import transformers
from safetensors.torch import save_file


# the scripts beside this one (sys.path[0] is this folder when it runs)
MOE = importlib.import_module("make-moe-fixture")
QUANT = importlib.import_module("make-quant-fixture")
NV = importlib.import_module("make-moe-nvfp4-fixture")


def make():
    torch.manual_seed(35)
    # norms U(0.5, 1.5), a decisive router N(0, 0.5), bf16-rounded
    return NV.draw(MOE.tiny_model(
        vocab_size=128, hidden_size=128, intermediate_size=128,
        moe_intermediate_size=256, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, head_dim=128,
        num_experts=3).eval().float())


def main():
    d = os.path.join(sys.argv[1], "qwen3-moe-fp8block")
    note = "transformers %s, torch %s" % (transformers.__version__,
                                          torch.__version__)
    model = make()
    sd = MOE.save_config(model, d)
    stored, deq = {}, {}
    with torch.no_grad():
        for n, w in sd.items():
            if n.startswith("model.layers.") and n.endswith("proj.weight"):
                parts, deq[n] = QUANT.fp8_block(w.clone())
                for k, v in parts.items():
                    stored[n[: -len("weight")] + k] = v.contiguous()
            else:
                stored[n], deq[n] = w.bfloat16(), w
    save_file(stored, os.path.join(d, "model.safetensors"),
              metadata={"format": "pt"})
    path = os.path.join(d, "config.json")
    cfg = json.load(open(path))
    cfg["quantization_config"] = {"quant_method": "fp8",
                                  "activation_scheme": "dynamic",
                                  "weight_block_size": [128, 128]}
    json.dump(cfg, open(path, "w"), indent=2)
    NV.set_experts(model, deq)
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(3, model.config.vocab_size, (2, 11), generator=gen)
    src = "scripts/device/make-moe-fp8block-fixture.py"
    r = NV.reference(model, ids, "transformers with the fp8-block-"
                     "dequantized weights (%s), %s" % (src, note))
    json.dump(r, open(os.path.join(d, "reference.json"), "w"))
    print("stored", len(stored), "tokens", r["greedy_new_tokens"])


if __name__ == "__main__":
    main()
