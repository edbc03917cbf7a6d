#!/usr/bin/env python3
"""Makes a tiny, randomly initialised gpt-oss (transformers' GptOssConfig /
GptOssForCausalLM) and the reference outputs transformers computes for it,
in the layout of tests/data/hf (config.json, generation_config.json,
model.safetensors, reference.json as make-hf-fixture.py writes it):

  OUT/gptoss-tiny         bf16 weights with the hub's names and layout of an
                          unquantized gpt-oss (experts fused:
                          mlp.experts.gate_up_proj [E, H, 2I], gate and up
                          interleaved along the last dimension,
                          gate_up_proj_bias [E, 2I], down_proj [E, I, H],
                          down_proj_bias [E, H]; mlp.router.weight / .bias;
                          self_attn.sinks [heads])
  OUT/gptoss-tiny-mxfp4   the same model with its experts in MX-FP4 as the
                          released checkpoints store them (gate_up_proj_blocks
                          U8 [E, 2I, H/32, 16], gate_up_proj_scales U8
                          [E, 2I, H/32], down_proj_blocks [E, H, I/32, 16],
                          down_proj_scales [E, H, I/32]; E8M0 codes, the low
                          nibble the even element), quantized per the OCP MX
                          v1.0 specification (section 6.3: X = floor(log2
                          amax) - 2, round to nearest even on E2M1, clamp to
                          6), config.json's quantization_config
                          {"quant_method": "mxfp4", "modules_to_not_convert":
                          [...]} as openai/gpt-oss-20b's

Each reference is transformers' own forward in float32 (CPU): the bf16
weights upcast; for MX-FP4, the checkpoint loaded by transformers with
Mxfp4Config(dequantize=True) (integrations/mxfp4.py dequantizes the blocks)
and upcast, checked against the dequantization done here.

    python3 make-gptoss-fixture.py OUT
"""
import inspect
import json
import os
import shutil
import sys

import torch
import transformers
from safetensors.torch import save_file

E2M1 = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6, 0, -0.5, -1, -1.5, -2, -3, -4, -6],
                    dtype=torch.float32)
BOUNDS = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])


def cast_fp4(x):
    """E2M1 codes of x, rounded to nearest even, saturating at 6."""
    sign = ((x < 0) & (x != 0)).to(torch.uint8)
    a = x.abs()
    o = torch.searchsorted(BOUNDS, a, out_int32=True).to(torch.uint8)
    odd = torch.any(a.unsqueeze(-1) == BOUNDS[[1, 3, 5]], dim=-1).to(torch.uint8)
    return (sign << 3) + o + odd


def mxfp4(w):
    """w [..., R, C] -> blocks U8 [..., R, C/32, 16], scales U8 [..., R, C/32],
    and the dequantized float32 values."""
    *lead, C = w.shape
    b = w.float().reshape(*lead, C // 32, 32)
    amax = b.abs().amax(-1)
    _, ex = torch.frexp(amax)
    e = torch.where(amax > 0, ex - 1 - 2, torch.full_like(ex, -127)).clamp(-127, 127)
    q = cast_fp4(torch.ldexp(b, -e.unsqueeze(-1).float()))
    blocks = (q[..., 1::2] << 4) | q[..., 0::2]
    deq = torch.ldexp(E2M1[q.long()], e.unsqueeze(-1).float()).reshape(*lead, C)
    return blocks.contiguous(), (e + 127).to(torch.uint8).contiguous(), deq


def make_config():
    from transformers import GptOssConfig
    params = inspect.signature(GptOssConfig.__init__).parameters
    rope = {"rope_type": "yarn", "factor": 4.0, "beta_fast": 32.0,
            "beta_slow": 1.0, "truncate": False,
            "original_max_position_embeddings": 16}
    kw = dict(vocab_size=256, hidden_size=64, intermediate_size=96,
              num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
              head_dim=16, num_local_experts=8, num_experts_per_tok=2,
              sliding_window=5,
              layer_types=["sliding_attention", "full_attention",
                           "sliding_attention"],
              max_position_embeddings=64, rms_norm_eps=1e-5,
              attention_bias=True, tie_word_embeddings=False,
              initializer_range=0.08, router_aux_loss_coef=0.0,
              output_router_logits=False, bos_token_id=1, eos_token_id=2,
              pad_token_id=0)
    if "rope_parameters" in params:
        kw["rope_parameters"] = dict(rope, rope_theta=150000.0)
    else:
        kw["rope_scaling"] = rope
        kw["rope_theta"] = 150000.0
    cfg = GptOssConfig(**kw)
    cfg._attn_implementation = "eager"
    return cfg


def init(model):
    g = torch.Generator().manual_seed(0)

    def fill(t, kind, a, b=None):
        v = (torch.rand(t.shape, generator=g) * (b - a) + a if kind == "u"
             else torch.randn(t.shape, generator=g) * a)
        t.copy_(v.to(t.dtype))

    with torch.no_grad():
        for n, p in model.named_parameters():
            if "norm" in n:
                fill(p, "u", 0.5, 1.5)
            elif n.endswith("sinks"):
                fill(p, "n", 1.0)            # the sinks matter
            elif "router" in n:
                fill(p, "n", 0.5)            # decisive routing
            elif n.endswith("gate_up_proj"):
                fill(p, "n", 0.6)            # some gates and ups past +-7
            elif n.endswith("bias"):
                fill(p, "n", 0.1)
            else:
                fill(p, "n", 0.08)


def hub_state_dict(model):
    """Every parameter in bf16 with the hub's gpt-oss layout (experts as
    [E, H, 2I] interleaved and [E, I, H], as openai's bf16 conversions)."""
    c = model.config
    E, I, H = c.num_local_experts, c.intermediate_size, c.hidden_size
    out = {}
    for k, v in model.state_dict().items():
        v = v.detach()
        if k.endswith("mlp.experts.gate_up_proj") and v.shape == (E, 2 * I, H):
            v = v.transpose(1, 2)
        if k.endswith("mlp.experts.down_proj") and v.shape == (E, H, I):
            v = v.transpose(1, 2)
        out[k] = v.to(torch.bfloat16).contiguous()
    return out


def load_into(model, sd):
    """sd's values (hub layout) as float32 into model (its own layout)."""
    own = model.state_dict()
    new = {}
    for k, v in sd.items():
        v = v.float()
        if v.shape != own[k].shape:
            v = v.transpose(1, 2)
        assert v.shape == own[k].shape, (k, v.shape, own[k].shape)
        new[k] = v.contiguous()
    model.load_state_dict(new)


def reference(model, ids, note):
    with torch.no_grad():
        logits = model(ids).logits.float()
        new = model.generate(ids, max_new_tokens=8, do_sample=False,
                             use_cache=True)[:, ids.shape[1]:]
    return {
        "input_ids": ids.tolist(),
        "last_logits": logits[:, -1, :].tolist(),
        "logits_token0_first8": logits[:, :, :8].tolist(),
        "greedy_new_tokens": new.tolist(),
        "dtype": "float32",
        "rope_inv_freq": model.model.rotary_emb.inv_freq.tolist(),
        "rope_attention_scaling": float(model.model.rotary_emb.attention_scaling),
        "note": note,
    }


def write_dir(out, src_cfg_dir, sd, cfg_change=None):
    os.makedirs(out, exist_ok=True)
    for f in ("config.json", "generation_config.json"):
        shutil.copy(os.path.join(src_cfg_dir, f), out)
    if cfg_change:
        p = os.path.join(out, "config.json")
        c = json.load(open(p))
        cfg_change(c)
        json.dump(c, open(p, "w"), indent=2)
    save_file(sd, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})


def main():
    out = sys.argv[1]
    from transformers import GptOssForCausalLM
    torch.manual_seed(0)
    model = GptOssForCausalLM(make_config()).eval().float()
    print("experts forward:\n", inspect.getsource(type(model.model.layers[0].mlp.experts).forward)[:3000])
    init(model)
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    sd = hub_state_dict(model)
    # the float32 model holds exactly the bf16 values
    load_into(model, sd)
    tmp = os.path.join(out, "_save")
    model.save_pretrained(tmp, safe_serialization=True)
    bf = os.path.join(out, "gptoss-tiny")
    write_dir(bf, tmp, sd)
    print("tensors:", {k: list(v.shape) for k, v in sd.items() if "layers.0." in k})
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(3, 256, (2, 11), generator=gen)
    ver = "transformers %s, torch %s" % (transformers.__version__, torch.__version__)
    ref = reference(model, ids, "make-gptoss-fixture.py: bf16 weights, float32 CPU forward, " + ver)
    reload = GptOssForCausalLM.from_pretrained(bf, dtype=torch.float32,
                                               attn_implementation="eager").eval()
    with torch.no_grad():
        d = (reload(ids).logits - model(ids).logits).abs().max().item()
    print("bf16 reload max |diff|", d)
    ref["reload_max_abs_diff"] = d
    json.dump(ref, open(os.path.join(bf, "reference.json"), "w"))
    print("bf16 greedy", ref["greedy_new_tokens"])

    # MX-FP4 experts
    qsd, deq = {}, {}
    for k, v in sd.items():
        if k.endswith("mlp.experts.gate_up_proj") or k.endswith("mlp.experts.down_proj"):
            rows_major = v.float().transpose(1, 2)        # [E, out, in]
            blocks, scales, dq = mxfp4(rows_major)
            qsd[k + "_blocks"], qsd[k + "_scales"] = blocks, scales
            deq[k] = dq.transpose(1, 2).contiguous()      # back to [E, in, out]
        else:
            qsd[k] = v
    mx = os.path.join(out, "gptoss-tiny-mxfp4")
    write_dir(mx, bf, qsd, lambda c: c.update(quantization_config={
        "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                   "model.embed_tokens", "lm_head"],
        "quant_method": "mxfp4"}))
    load_into(model, dict(sd, **deq))
    mine = reference(model, ids, "")
    path = "manual dequantization (OCP MX v1.0) into GptOssForCausalLM"
    try:
        from transformers import Mxfp4Config
        hf = GptOssForCausalLM.from_pretrained(
            mx, quantization_config=Mxfp4Config(dequantize=True), dtype=torch.bfloat16,
            device_map="cpu", attn_implementation="eager").float().eval()
        with torch.no_grad():
            dd = (hf(ids).logits - model(ids).logits).abs().max().item()
        print("transformers' MX-FP4 dequantize vs mine: max |diff|", dd)
        mine = reference(hf, ids, "")
        mine["mine_vs_transformers_max_abs_diff"] = dd
        path = "transformers' Mxfp4Config(dequantize=True) load, upcast to float32"
    except Exception as ex:  # noqa: BLE001  the reference still stands
        print("transformers' MX-FP4 load failed:", repr(ex)[:400])
    mine["note"] = "make-gptoss-fixture.py: MX-FP4 experts, %s, CPU, %s" % (path, ver)
    json.dump(mine, open(os.path.join(mx, "reference.json"), "w"))
    print("mxfp4 greedy", mine["greedy_new_tokens"], mine["note"])
    shutil.rmtree(tmp)
    print(open(os.path.join(bf, "config.json")).read())


if __name__ == "__main__":
    main()
