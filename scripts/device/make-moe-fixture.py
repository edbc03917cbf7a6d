#!/usr/bin/env python3
"""Makes tiny, randomly initialised Qwen3-MoE models and the reference
outputs transformers computes for them, in the layout of tests/data/hf
(config.json, generation_config.json, model.safetensors in float32 with the
hub's per-expert tensor names, reference.json as make-hf-fixture.py writes
it).  Runs on CPU; needs torch, transformers and safetensors.

    python3 scripts/device/make-moe-fixture.py OUTDIR

writes OUTDIR/qwen3-moe-tiny (every layer sparse) and
OUTDIR/qwen3-moe-tiny-mlp-only (layer 1 a dense MLP: mlp_only_layers [1]).
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import save_file


# The tiny models' shared settings; each fixture script overrides widths.
TINY = dict(
    vocab_size=256, hidden_size=64, intermediate_size=64,
    moe_intermediate_size=24,  # 2 x 24 != 64: no layout ambiguity below
    num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
    head_dim=16, num_experts=8, num_experts_per_tok=2,
    norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
    max_position_embeddings=512, rope_theta=1000000.0, rms_norm_eps=1e-6,
    attention_bias=False, tie_word_embeddings=False,
    initializer_range=0.08, bos_token_id=1, eos_token_id=2,
    pad_token_id=0, output_router_logits=False)


def tiny_model(**widths):
    """A Qwen3MoeForCausalLM of TINY's settings with WIDTHS overriding them."""
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM
    return Qwen3MoeForCausalLM(Qwen3MoeConfig(**dict(TINY, **widths)))


def make(mlp_only):
    return tiny_model(mlp_only_layers=mlp_only)


def hub_state_dict(model):
    """The state dict with the hub's names: experts one tensor each
    (transformers 5 keeps them fused as gate_up_proj [E, 2I, H] and
    down_proj [E, H, I])."""
    c = model.config
    E, I, H = c.num_experts, c.moe_intermediate_size, c.hidden_size
    out = {}
    for k, v in model.state_dict().items():
        v = v.detach().float().contiguous()
        if k.endswith("mlp.experts.gate_up_proj"):
            base = k[: -len("gate_up_proj")]
            if v.shape == (E, H, 2 * I):
                v = v.transpose(1, 2)
            assert v.shape == (E, 2 * I, H), (k, v.shape)
            for e in range(E):
                out[f"{base}{e}.gate_proj.weight"] = v[e, :I].contiguous()
                out[f"{base}{e}.up_proj.weight"] = v[e, I:].contiguous()
        elif k.endswith("mlp.experts.down_proj"):
            base = k[: -len("down_proj")]
            if v.shape == (E, I, H):
                v = v.transpose(1, 2)
            assert v.shape == (E, H, I), (k, v.shape)
            for e in range(E):
                out[f"{base}{e}.down_proj.weight"] = v[e].contiguous()
        else:
            out[k] = v
    return out


def save_config(model, out):
    """OUT/config.json and generation_config.json of MODEL (transformers'
    own weight files removed: each fixture writes its own); returns the
    state dict with the hub's names."""
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    for f in os.listdir(out):
        if f.endswith(".safetensors") or f.endswith(".index.json"):
            os.remove(os.path.join(out, f))
    return hub_state_dict(model)


def build(out, mlp_only):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = make(mlp_only).eval().float()
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_norm.weight.uniform_(0.5, 1.5)
            layer.self_attn.k_norm.weight.uniform_(0.5, 1.5)
            layer.input_layernorm.weight.uniform_(0.5, 1.5)
            layer.post_attention_layernorm.weight.uniform_(0.5, 1.5)
            gate = getattr(layer.mlp, "gate", None)
            if gate is not None and hasattr(gate, "weight") and \
                    gate.weight.dim() == 2 and \
                    gate.weight.shape[0] == model.config.num_experts:
                # decisive routing: top-k margins far above float32 noise
                gate.weight.normal_(0.0, 0.5)
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    sd = save_config(model, out)
    save_file(sd, os.path.join(out, "model.safetensors"),
              metadata={"format": "pt"})
    print(out, "tensors:", len(sd), sorted(sd)[:6])
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(3, model.config.vocab_size, (2, 11), generator=gen)
    with torch.no_grad():
        logits = model(ids).logits
        new = model.generate(ids, max_new_tokens=8, do_sample=False,
                             use_cache=True)[:, ids.shape[1]:]
