#!/usr/bin/env python3
"""MX-FP4 references for tests/data/quant, made with torch: the bytes that
compressed-tensors' mxfp4-pack-quantized writer stores for each decoder
linear weight of qwen3-quant-tiny, and transformers' tokens and logits with
the dequantized weights.  The writer's rule, written here in torch from its
source (vllm-project/compressed-tensors @ac8e2ba8):

  quantization/utils/mxfp_utils.py  round_to_power_2: add 1 << (23 - 1 - 1)
      to the float32 bits of each group's max |w|, keep sign and exponent;
      generate_mx_scales: 127 + floor(log2(that)) - 2 (floor(log2(6)))
  quantization/utils/helpers.py  calculate_qparams: that code rounded and
      clamped to uint8 (log2(0) = -inf -> 0), then 2^(code - 127)
  quantization/lifecycle/forward_helpers.py  _quantize: w / scale, clamped
      to +-6, quant_args.py round_to_quantized_type_args -> fp4_utils.py
      cast_to_fp4 (CPU path: the thresholds below, times sign(x))
  compressors/nvfp4/helpers.py  pack_fp4_to_uint8: index of |q| on the
      E2M1 grid, bit 3 = signbit(q), element 2i in the low nibble
  compressors/mx_utils.py  compress_mx_scale: the codes as uint8

Also counts the codes that differ when the scaled weight is first rounded
to bfloat16, as the writer's Triton cast_to_fp4 does on a GPU.

Writes OUT/quant-reference-mxfp4.json (the "mxfp4" rows of
quant-reference.json: per weight, dtype, shape and FNV-1a 64 of each stored
tensor, FNV-1a 64 of the dequantized float32 weight) and
OUT/ref-mxfp4/reference.json.  Runs on the CPU.

    python3 make-mxfp4-reference.py tests/data/quant OUT
"""
import json
import os
import sys

import torch
import transformers

FNV_OFF, FNV_PRIME = 14695981039346656037, 1099511628211


def fnv(t):
    h = FNV_OFF
    for x in t.contiguous().numpy().tobytes():
        h = ((h ^ x) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def cast_to_fp4(x):
    s, a = torch.sign(x), x.abs()
    v = torch.zeros_like(a)
    for lo, closed, val in ((0.25, False, 0.5), (0.75, True, 1.0),
                            (1.25, False, 1.5), (1.75, True, 2.0),
                            (2.5, False, 3.0), (3.5, True, 4.0),
                            (5.0, False, 6.0)):
        v = torch.where(a >= lo if closed else a > lo, torch.tensor(val), v)
    return v * s


def mxfp4(w):
    R, C = w.shape
    g = w.view(R, C // 32, 32)
    amax = g.abs().amax(-1)
    p2 = ((amax.view(torch.int32) + (1 << 21)) & 0x7F800000).view(torch.float32)
    code = torch.clamp(torch.round(127 + torch.floor(torch.log2(p2)) - 2), 0, 255)
    # 2^(code - 127) from its float32 bits (code 0: 2^-127, a subnormal)
    bits = torch.where(code > 0, code.to(torch.int32) << 23,
                       torch.tensor(0x00400000, dtype=torch.int32))
    scale = bits.view(torch.float32).unsqueeze(-1)
    x = torch.clamp(g / scale, -6.0, 6.0)
    q = cast_to_fp4(x).view(R, C)
    qb = cast_to_fp4(x.to(torch.bfloat16).float()).view(R, C)
    idx = torch.searchsorted(torch.tensor([0.0, 0.5, 1, 1.5, 2, 3, 4, 6]),
                             q.abs()).to(torch.uint8)
    nib = idx | (torch.signbit(q).to(torch.uint8) << 3)
    packed = nib[:, 0::2] | (nib[:, 1::2] << 4)
    deq = (q.view(R, C // 32, 32) * scale).view(R, C) + 0.0  # -0 -> +0
    return packed, code.to(torch.uint8), deq, int((q != qb).sum())


def main():
    data, out = sys.argv[1], sys.argv[2]
    fix = os.path.join(data, "qwen3-quant-tiny")
    ids = torch.tensor(json.load(open(os.path.join(data, "ref-fp8",
                                                   "reference.json")))["input_ids"])
    model = transformers.AutoModelForCausalLM.from_pretrained(
        fix, dtype=torch.float32).eval()
    params = dict(model.named_parameters())
    rows, differ = {}, 0
    with torch.no_grad():
        for n in sorted(params):
            if not (n.startswith("model.layers.") and n.endswith("_proj.weight")):
                continue
            packed, code, deq, d = mxfp4(params[n].detach().clone())
            differ += d
            p = n[:-len("weight")]
            rows[n] = {"deq_fnv": fnv(deq),
                       "stored": {p + "weight_packed": ["torch.uint8", list(packed.shape), fnv(packed)],
                                  p + "weight_scale": ["torch.uint8", list(code.shape), fnv(code)]}}
            params[n].copy_(deq)
        logits = model(ids).logits
        new = model.generate(ids, max_new_tokens=8, do_sample=False,
                             use_cache=True)[:, ids.shape[1]:]
    note = ("transformers %s, torch %s, CPU; compressed-tensors' MXFP4 rule "
            "(scripts/device/make-mxfp4-reference.py)"
            % (transformers.__version__, torch.__version__))
    json.dump({"note": note, "bf16_triton_codes_differ": differ,
               "mxfp4": rows}, open(os.path.join(out, "quant-reference-mxfp4.json"), "w"), indent=1)
    os.makedirs(os.path.join(out, "ref-mxfp4"), exist_ok=True)
    json.dump({"input_ids": ids.tolist(), "last_logits": logits[:, -1, :].tolist(),
               "greedy_new_tokens": new.tolist(), "dtype": "float32",
               "note": "transformers with qwen3-quant-tiny's weights quantized and "
                       "dequantized by compressed-tensors' MXFP4 rule, " + note},
              open(os.path.join(out, "ref-mxfp4", "reference.json"), "w"))
    print(note, "bf16 path differs in", differ, "codes", new.tolist())


if __name__ == "__main__":
    main()
