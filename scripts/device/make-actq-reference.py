#!/usr/bin/env python3
"""Makes ref-actq-FORMAT/reference.json (tests/data/quant): transformers'
greedy tokens and last logits of qwen3-quant-tiny with FORMAT's dequantized
weights (make-quant-fixture.py's quantizers) AND each decoder linear's input
quantized as the serving engines quantize it (docs/quantization.md,
"Activations"), written here in torch independently of nvlemu's C:

  nvfp4      per 16 along the input: SF = e4m3_satfinite(gs * amax / 6),
             gs = 1 / input_scale (1.0: the fixture has no input scales),
             e2m1(x * 1 / (SF * (1 / gs))) (ModelOpt's _cast_fp4 rounding),
             value e2m1 * SF * input_scale (vLLM scaled_fp4_quant +
             cutlass_scaled_fp4_mm's alpha)
  fp8        static per tensor, scale 1.0: e4m3(clamp(x / s, +-448)) * s
  fp8-block  per 1 x 128: s = max(amax, 1e-10) / 448,
             e4m3(clamp(x / s, +-448)) * s (vLLM _per_token_group_quant_fp8)

E4M3 casts are torch's float8_e4m3fn after clamping to +-448 (CUDA's
__NV_SATFINITE).  The KV cache stays float32.

    python3 make-actq-reference.py FIXTURE_DIR OUTDIR
"""
import importlib.util
import json
import os
import sys

import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "mqf", os.path.join(HERE, "make-quant-fixture.py"))
mqf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mqf)


def e4m3_sat(x):
    return x.clamp(-448.0, 448.0).to(torch.float8_e4m3fn).float()


def act_nvfp4(x, input_scale=1.0):
    k = x.shape[-1]
    assert k % 16 == 0
    b = x.reshape(*x.shape[:-1], k // 16, 16)
    gs = torch.tensor(1.0, dtype=torch.float32) / input_scale
    amax = b.abs().amax(dim=-1, keepdim=True)
    sf = e4m3_sat(gs * (amax * (1.0 / 6.0)))
    inv = torch.where(sf != 0, 1.0 / (sf * (1.0 / gs)), torch.zeros_like(sf))
    q = mqf.E2M1[mqf.cast_fp4(b * inv).long()]
    return (q * sf * input_scale).reshape(x.shape)


def act_fp8_tensor(x, s=1.0):
    return e4m3_sat(x * (1.0 / s)) * s


def act_fp8_group(x, g=128):
    k = x.shape[-1]
    assert k % g == 0
    b = x.reshape(*x.shape[:-1], k // g, g)
    s = b.abs().amax(dim=-1, keepdim=True).clamp_min(1e-10) / 448.0
    return (e4m3_sat(b / s) * s).reshape(x.shape)


ACTS = {"nvfp4": act_nvfp4, "fp8": act_fp8_tensor, "fp8-block": act_fp8_group}
QUANT = {"nvfp4": mqf.nvfp4, "fp8": mqf.fp8, "fp8-block": mqf.fp8_block}


def main():
    fixture, out = sys.argv[1], sys.argv[2]
    ref = json.load(open(fixture + "/reference.json"))
    ids = torch.tensor(ref["input_ids"])
    note = "transformers %s, torch %s" % (transformers.__version__, torch.__version__)
    for fmt, act in ACTS.items():
        model = transformers.AutoModelForCausalLM.from_pretrained(
            fixture, torch_dtype=torch.float32).eval()
        model.generation_config.eos_token_id = None
        orig = {n: p.detach().clone() for n, p in model.named_parameters()}
        with torch.no_grad():
            for name, mod in model.named_modules():
                if name.startswith("model.layers.") and name.endswith("proj") \
                        and isinstance(mod, torch.nn.Linear):
                    w = mod.weight.detach().clone()
                    _, deq = (QUANT[fmt](w, mqf.fused_amax(orig, name + ".weight"))
                              if fmt == "nvfp4" else QUANT[fmt](w))
                    mod.weight.copy_(deq)
                    fwd = mod.forward
                    mod.forward = (lambda f, a: lambda x: f(a(x)))(fwd, act)
            logits = model(ids).logits
            new = model.generate(ids, max_new_tokens=8, do_sample=False,
                                 use_cache=True)[:, ids.shape[1]:]
        r = {"input_ids": ids.tolist(), "last_logits": logits[:, -1, :].tolist(),
             "greedy_new_tokens": new.tolist(), "dtype": "float32",
             "note": ("transformers with the %s-dequantized weights of "
                      "qwen3-quant-tiny and its activation quantization "
                      "(scripts/device/make-actq-reference.py), %s" % (fmt, note))}
        os.makedirs(out + "/ref-actq-" + fmt, exist_ok=True)
        json.dump(r, open(out + "/ref-actq-" + fmt + "/reference.json", "w"))
        print(fmt, r["greedy_new_tokens"])


if __name__ == "__main__":
    main()
