#!/usr/bin/env python3
"""Makes tests/data/quant: a tiny float32 Qwen3 (the quantizers' input) and,
for each of nvlemu's formats (nvfp4, mxfp4, fp8, fp8-block), the reference
quantization of every linear weight of its decoder layers, computed with
torch as the writers' reference quantizers compute it (ModelOpt's
NVFP4QTensor and FP8 export, OCP MX v1.0 section 6.3 for MX-FP4,
transformers' FineGrainedFP8 quantizer for 128 x 128 blocks), torch's own
float8_e4m3fn cast for every E4M3 rounding.  If modelopt imports, its
NVFP4QTensor.quantize runs too and must give the same bytes.

Writes OUT/qwen3-quant-tiny/ (config.json, generation_config.json,
model.safetensors, reference.json), OUT/quant-reference.json (per format and
tensor: FNV-1a 64 of each stored tensor's bytes and of the dequantized
float32 weight; an E4M3 probe table from torch), and OUT/ref-FORMAT/
reference.json (transformers' tokens and logits with the dequantized
weights).

    python3 make-quant-fixture.py OUTDIR
"""
import json
import os
import struct
import subprocess
import sys

import torch
import transformers

FNV_OFF, FNV_PRIME = 14695981039346656037, 1099511628211


def fnv(b):
    h = FNV_OFF
    for x in b:
        h = ((h ^ x) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def tbytes(t):
    t = t.contiguous().cpu()
    if t.dtype == torch.float8_e4m3fn:
        t = t.view(torch.uint8)
    return t.numpy().tobytes()


BOUNDS = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])
E2M1 = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6, 0, -0.5, -1, -1.5, -2, -3, -4, -6],
                    dtype=torch.float32)


def cast_fp4(x):
    # ModelOpt NVFP4QTensor._cast_fp4: round to nearest even, saturating
    sign = (x < 0).to(torch.uint8)
    a = x.abs()
    o = torch.searchsorted(BOUNDS, a, out_int32=True).to(torch.uint8)
    odd = torch.any(a.unsqueeze(-1) == BOUNDS[[1, 3, 5]], dim=-1).to(torch.uint8)
    return (sign << 3) + o + odd


def pack(q):
    return (q[..., 1::2] << 4) | q[..., 0::2]


def unpack(p):
    q = torch.empty(*p.shape[:-1], p.shape[-1] * 2, dtype=torch.uint8)
    q[..., 0::2] = p & 0x0F
    q[..., 1::2] = p >> 4
    return q


# The parts of a fused GEMM (q/k/v, gate/up; an expert's gate/up): ModelOpt's
# HF export (unified_export_hf.py, requantize_resmooth_fused_llm_layers ->
# quant_utils.py preprocess_linear_fusion) gives them one weight amax, the
# largest of theirs, for NVFP4 (not for FP8 per tensor, which it leaves out
# of the fusion).
FUSED = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))


def fused_amax(orig, n):
    """The shared weight amax of weight n's fused GEMM (its own if none)."""
    part = n.split(".")[-2]
    for g in FUSED:
        if part in g:
            return max(orig[n.replace(part, p)].abs().amax() for p in g
                       if n.replace(part, p) in orig)
    return orig[n].abs().amax()


def nvfp4(w, amax=None):
    R, C = w.shape
    amax = w.abs().amax() if amax is None else amax
    s2 = amax.float() / (6.0 * 448.0)
    blk = w.view(R, C // 16, 16).abs().amax(-1).float()
    ps = blk / (6.0 * s2)
    ps[ps == 0] = 1.0
    ps8 = ps.to(torch.float8_e4m3fn)
    scaled = (w.view(R, C // 16, 16) /
              (ps8.to(torch.float32) * s2).unsqueeze(-1)).view(R, C)
    packed = pack(cast_fp4(scaled))
    deq = (E2M1[unpack(packed).long()].double() *
           ps8.float().double().repeat_interleave(16, -1) * s2.double()).float()
    return {"weight": packed, "weight_scale": ps8,
            "weight_scale_2": s2.reshape(())}, deq


def mxfp4(w):
    R, C = w.shape
    b = w.view(R, C // 32, 32)
    amax = b.abs().amax(-1)
    _, ex = torch.frexp(amax)
    e = torch.where(amax > 0, ex - 1 - 2, torch.full_like(ex, -127)).clamp(-127, 127)
    v = torch.ldexp(b, -e.unsqueeze(-1).float())
    q = cast_fp4(v.view(R, C))
    blocks = pack(q).view(R, C // 32, 16)
    scales = (e + 127).to(torch.uint8)
    deq = torch.ldexp(E2M1[q.long()].view(R, C // 32, 32),
                      e.unsqueeze(-1).float()).view(R, C)
    return {"weight_blocks": blocks, "weight_scales": scales}, deq


def fp8(w):
    s = w.abs().amax().float() / 448.0
    q = (w / s).to(torch.float8_e4m3fn)
    return {"weight": q, "weight_scale": s.reshape(())}, (q.float() * s)


def fp8_block(w):
    R, C = w.shape
    x = w.reshape(R // 128, 128, C // 128, 128).permute(0, 2, 1, 3)
    amax = x.abs().amax(dim=(-1, -2))
    scale = 448.0 / amax
    q = torch.clamp(x * scale[..., None, None], -448.0, 448.0).to(torch.float8_e4m3fn)
    q = q.permute(0, 2, 1, 3).reshape(R, C)
    sinv = scale.reciprocal()
    deq = q.float() * sinv.repeat_interleave(128, 0).repeat_interleave(128, 1)
    return {"weight": q, "weight_scale_inv": sinv}, deq


FORMATS = {"nvfp4": nvfp4, "mxfp4": mxfp4, "fp8": fp8, "fp8-block": fp8_block}


def e4m3_probe():
    codes = torch.arange(256, dtype=torch.uint8)
    vals = codes.view(torch.float8_e4m3fn).float()
    pos = sorted(set(v for v in vals.tolist() if v == v and v >= 0))
    probe = []
    for a, b in zip(pos, pos[1:]):
        m = (a + b) / 2
        probe += [m, float(torch.nextafter(torch.tensor(m), torch.tensor(0.0))),
                  float(torch.nextafter(torch.tensor(m), torch.tensor(1e9))), b]
    probe += [448.0, 449.0, 463.99, 464.0, 464.01, 479.9, 480.0, 1e6, 2.0 ** -10, 2.0 ** -11,
              2.0 ** -12, 1e-30, float("inf")]
    probe += [-p for p in probe]
    t = torch.tensor(probe, dtype=torch.float32)
    enc = t.to(torch.float8_e4m3fn).view(torch.uint8)
    return {"decode": [struct.pack("<f", v).hex() for v in vals.tolist()],
            "encode": [[struct.pack("<f", v).hex(), int(c)]
                       for v, c in zip(t.tolist(), enc.tolist())]}


def make_model(d):
    """The tiny Qwen3 (seeded), saved as a checkpoint in d: (config, model)."""
    from transformers import Qwen3Config, Qwen3ForCausalLM
    torch.manual_seed(27)
    cfg = Qwen3Config(
        vocab_size=256, hidden_size=128, intermediate_size=384,
        num_hidden_layers=2, num_attention_heads=3, num_key_value_heads=1,
        head_dim=128, max_position_embeddings=512, rope_theta=1000000.0,
        rms_norm_eps=1e-6, attention_bias=False, tie_word_embeddings=False,
        initializer_range=0.08, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    model = Qwen3ForCausalLM(cfg).eval().float()
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_norm.weight.uniform_(0.5, 1.5)
            layer.self_attn.k_norm.weight.uniform_(0.5, 1.5)
        # one row of 32 zeros: zero NVFP4 and MX blocks
        model.model.layers[0].self_attn.o_proj.weight[0, :32] = 0.0
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    model.save_pretrained(d, safe_serialization=True)
    return cfg, model


def main():
    out = sys.argv[1]
    d = out + "/qwen3-quant-tiny"
    info = {"pip": [l for l in subprocess.run(
        [sys.executable, "-m", "pip", "list"], capture_output=True,
        text=True).stdout.splitlines()
        if any(k in l.lower() for k in ("torch", "transformers", "modelopt",
                                         "safetensors", "vllm", "compressed"))]}
    print(info)
    cfg, model = make_model(d)
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(3, cfg.vocab_size, (2, 11), generator=gen)

    def reference(m):
        with torch.no_grad():
            logits = m(ids).logits
            new = m.generate(ids, max_new_tokens=8, do_sample=False,
                             use_cache=True)[:, ids.shape[1]:]
        return {"input_ids": ids.tolist(),
                "last_logits": logits[:, -1, :].tolist(),
                "greedy_new_tokens": new.tolist(), "dtype": "float32"}

    note = "transformers %s, torch %s" % (transformers.__version__, torch.__version__)
    r = reference(model)
    r["note"] = "made by scripts/device/make-quant-fixture.py with " + note
    json.dump(r, open(d + "/reference.json", "w"))
    orig = {n: p.detach().clone() for n, p in model.named_parameters()}
    lin = [n for n in orig if n.startswith("model.layers.") and n.endswith("proj.weight")]
    res = {"note": note, "pip": info["pip"], "e4m3": e4m3_probe(), "formats": {}}
    try:
        from modelopt.torch.quantization.qtensor import NVFP4QTensor
    except Exception as exc:  # noqa
        NVFP4QTensor = None
        res["modelopt"] = "not importable: %s" % exc
    for fmt, fn in FORMATS.items():
        rows = {}
        with torch.no_grad():
            for n in lin:
                w = orig[n]
                stored, deq = (fn(w.clone(), fused_amax(orig, n)) if fmt == "nvfp4"
                               else fn(w.clone()))
                prefix = n[:-len("weight")]
                rows[n] = {"deq_fnv": fnv(tbytes(deq.float())),
                           "stored": {prefix + k: [str(v.dtype), list(v.shape), fnv(tbytes(v))]
                                      for k, v in stored.items()}}
                if fmt == "nvfp4" and NVFP4QTensor is not None:
                    qt, s, s2 = NVFP4QTensor.quantize(
                        w.clone(), 16,
                        weights_scaling_factor_2=fused_amax(orig, n).float() / (6.0 * 448.0))
                    same = (torch.equal(qt._quantized_data.cpu(), stored["weight"]) and
                            torch.equal(s.view(torch.uint8).cpu(),
                                        stored["weight_scale"].view(torch.uint8)) and
                            torch.equal(s2.float().reshape(()).cpu(), stored["weight_scale_2"]))
                    rows[n]["modelopt_same"] = bool(same)
                    res["modelopt"] = "NVFP4QTensor.quantize compared"
                dict(model.named_parameters())[n].copy_(deq)
        res["formats"][fmt] = rows
        r = reference(model)
        r["note"] = ("transformers with the %s-dequantized weights of qwen3-quant-tiny "
                     "(scripts/device/make-quant-fixture.py), %s" % (fmt, note))
        os.makedirs(out + "/ref-" + fmt, exist_ok=True)
        json.dump(r, open(out + "/ref-" + fmt + "/reference.json", "w"))
        print(fmt, r["greedy_new_tokens"])
        with torch.no_grad():
            for n in lin:
                dict(model.named_parameters())[n].copy_(orig[n])
    json.dump(res, open(out + "/quant-reference.json", "w"), indent=1)
    print(res.get("modelopt"))


if __name__ == "__main__":
    main()
