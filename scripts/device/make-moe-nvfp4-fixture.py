#!/usr/bin/env python3
"""Makes tests/data/hf/qwen3-moe-tiny16: a tiny, randomly initialised
Qwen3-MoE whose expert widths hold NVFP4's blocks of 16 at TP 1, 2 and 3
(moe_intermediate_size 96: 96, 48 and 32 input columns of down_proj a
rank), its weights rounded to bf16 and stored in bf16 (half the bytes;
nvlemu and transformers widen them exactly), with the hub's per-expert
tensor names (make-moe-fixture.py's hub_state_dict) and transformers'
reference outputs (a float32 forward).

Beside it, the NVFP4 reference: every model.layers.*proj.weight
(attention and experts; the router mlp.gate.weight is no projection)
quantized as ModelOpt's NVFP4QTensor does (make-quant-fixture.py's nvfp4,
the fused parts' shared amax an expert's gate/up included), FNV-1a 64 of
every stored tensor and dequantized weight (quant-reference.json), and
transformers' tokens and logits with the dequantized weights
(ref-nvfp4/reference.json).  Runs on CPU; needs torch, transformers and
safetensors.

    python3 scripts/device/make-moe-nvfp4-fixture.py OUTDIR
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


def make():
    torch.manual_seed(34)
    return draw(MOE.tiny_model(
        moe_intermediate_size=96, num_hidden_layers=2, num_experts=4).eval()
        .float())


def draw(model):
    """Norm weights from U(0.5, 1.5), the router from N(0, 0.5), every
    weight rounded to bf16; greedy generation without an end token."""
    with torch.no_grad():
        for layer in model.model.layers:
            for norm in (layer.self_attn.q_norm, layer.self_attn.k_norm,
                         layer.input_layernorm,
                         layer.post_attention_layernorm):
                norm.weight.uniform_(0.5, 1.5)
            # decisive routing: top-k margins far above the 4-bit error
            layer.mlp.gate.weight.normal_(0.0, 0.5)
        for p in model.parameters():
            p.copy_(p.bfloat16().float())
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model


def reference(model, ids, note):
    with torch.no_grad():
        logits = model(ids).logits
        new = model.generate(ids, max_new_tokens=8, do_sample=False,
                             use_cache=True)[:, ids.shape[1]:]
    return {"input_ids": ids.tolist(),
            "last_logits": logits[:, -1, :].tolist(),
            "logits_token0_first8": logits[0, 0, :8].tolist(),
            "greedy_new_tokens": new.tolist(), "dtype": "float32",
            "note": note}


def set_experts(model, sd):
    """Copies hub-named weights sd back into the model's parameters
    (the inverse of hub_state_dict: experts fused per layer)."""
    params = dict(model.named_parameters())
    E = model.config.num_experts
    for name, p in params.items():
        if name.endswith("mlp.experts.gate_up_proj"):
            base = name[: -len("gate_up_proj")]
            v = torch.stack([torch.cat([sd[f"{base}{e}.gate_proj.weight"],
                                        sd[f"{base}{e}.up_proj.weight"]])
                             for e in range(E)])
        elif name.endswith("mlp.experts.down_proj"):
            base = name[: -len("down_proj")]
            v = torch.stack([sd[f"{base}{e}.down_proj.weight"]
                             for e in range(E)])
        else:
            v = sd[name]
        if v.shape != p.shape:
            v = v.transpose(-1, -2)
        assert v.shape == p.shape, (name, v.shape, p.shape)
        p.data.copy_(v)


def main():
    out = sys.argv[1]
    d = os.path.join(out, "qwen3-moe-tiny16")
    note = "transformers %s, torch %s" % (transformers.__version__,
                                          torch.__version__)
    model = make()
    sd = MOE.save_config(model, d)
    save_file({k: v.bfloat16() for k, v in sd.items()},
              os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(3, model.config.vocab_size, (2, 11), generator=gen)
    json.dump(reference(model, ids, "made by scripts/device/"
                        "make-moe-nvfp4-fixture.py (bf16 weights, float32 "
                        "forward) with " + note),
              open(os.path.join(d, "reference.json"), "w"))
    # a round trip through the hub names must not change the model
    set_experts(model, sd)
    lin = [n for n in sd if n.startswith("model.layers.")
           and n.endswith("proj.weight")]
    rows, deq = {}, dict(sd)
    with torch.no_grad():
        for n in lin:
            stored, w = QUANT.nvfp4(sd[n].clone(), QUANT.fused_amax(sd, n))
            prefix = n[: -len("weight")]
            rows[n] = {"deq_fnv": QUANT.fnv(QUANT.tbytes(w.float())),
                       "stored": {prefix + k: [str(v.dtype), list(v.shape),
                                               QUANT.fnv(QUANT.tbytes(v))]
                                  for k, v in stored.items()}}
            deq[n] = w.float()
    set_experts(model, deq)
    r = reference(model, ids, "transformers with the nvfp4-dequantized "
                  "weights of qwen3-moe-tiny16 (scripts/device/"
                  "make-moe-nvfp4-fixture.py), " + note)
    os.makedirs(os.path.join(out, "ref-nvfp4"), exist_ok=True)
    json.dump(r, open(os.path.join(out, "ref-nvfp4", "reference.json"), "w"))
    json.dump({"note": note, "formats": {"nvfp4": rows}},
              open(os.path.join(out, "quant-reference.json"), "w"), indent=1)
    print("weights", len(lin), "tokens", r["greedy_new_tokens"])


if __name__ == "__main__":
    main()
