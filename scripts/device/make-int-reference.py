"""int8 / int4 compressed-tensors references for tests/data/quant (ref-int8,
ref-int4): qwen3-quant-tiny's linears quantized with compressed-tensors'
formulas (calculate_qparams symmetric: amax / 127.5 per row for int8,
amax / 7.5 per 1 x 128 group for int4; _quantize: round half even,
clamp), stored in its layout (int-quantized / pack-quantized), then LOADED
BY transformers through the compressed_tensors package and generated with
(greedy, 8 new tokens), decompressed (run_compressed=False) and as loaded.
    python3 make-int-reference.py OUTDIR        (cwd: the repository root)

Writes OUTDIR/int8 and OUTDIR/int4 (the checkpoints) and
OUTDIR/ref-FORMAT-rcN.json (N: run_compressed 0 / 1: the greedy tokens,
the last logits and the module classes transformers built).  Without the
compressed_tensors package it prints "compressed_tensors ABSENT" and
stops: so it did on the project's device machine (one H200; run there on
2026-11-29 from the inline zlib/base85 copy of these statements less this
docstring, 0.3 s): no reference was made.
"""
import json, os, sys, shutil
O = sys.argv[1]
try:
    import compressed_tensors as C
except Exception as e:
    print("compressed_tensors ABSENT:", repr(e)); sys.exit(0)
import torch, transformers
from safetensors.torch import load_file, save_file
V = {"compressed_tensors": C.__version__, "transformers": transformers.__version__, "torch": torch.__version__}
print(V)
S = "tests/data/quant/qwen3-quant-tiny"
W = load_file(S + "/model.safetensors")
ids = torch.tensor([[58,50,107,157,193,136,162,246,212,36,89],[4,73,250,140,207,47,156,137,154,70,209]])
A8 = {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "token", "dynamic": True}
for fmt in ("int8", "int4"):
    g, qm = (128, 7) if fmt == "int4" else (None, 127)
    T = {}
    for n, w in W.items():
        if not n.endswith("proj.weight"):
            T[n] = w; continue
        p = n[:-6]; R, K = w.shape; gg = g or K
        b = w.reshape(R, K // gg, gg)
        s = (b.abs().amax(-1) / torch.tensor(qm + 0.5)).clamp(min=torch.finfo(torch.float32).eps)
        q = torch.round(torch.clamp(b / s[..., None], -qm - 1, qm)).reshape(R, K).to(torch.int32)
        T[p + "weight_scale"] = s.contiguous()
        if fmt == "int8":
            T[p + "weight"] = q.to(torch.int8)
        else:
            u = (q + 8).reshape(R, K // 8, 8)
            T[p + "weight_packed"] = sum(u[..., j] << (4 * j) for j in range(8)).to(torch.int32)
            T[p + "weight_shape"] = torch.tensor([R, K], dtype=torch.int64)
    d = os.path.join(O, fmt); os.makedirs(d, exist_ok=True)
    for f in ("config.json", "generation_config.json"):
        shutil.copy(os.path.join(S, f), d)
    wa = {"num_bits": 4 if g else 8, "type": "int", "symmetric": True, "strategy": "group" if g else "channel", "dynamic": False}
    if g: wa["group_size"] = g
    cf = json.load(open(d + "/config.json"))
    cf["quantization_config"] = {"quant_method": "compressed-tensors", "format": "pack-quantized" if g else "int-quantized",
        "quantization_status": "compressed", "ignore": ["lm_head"],
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": wa, "input_activations": None if g else A8}}}
    json.dump(cf, open(d + "/config.json", "w"), indent=2)
    save_file(T, d + "/model.safetensors")
    for rc in (False, True):
        r = {"input_ids": ids.tolist(), "versions": V, "run_compressed": rc}
        try:
            m = transformers.AutoModelForCausalLM.from_pretrained(d, quantization_config=transformers.CompressedTensorsConfig(run_compressed=rc), dtype=torch.float32)
            m.eval()
            with torch.no_grad():
                new = m.generate(ids, max_new_tokens=8, do_sample=False, pad_token_id=0)[:, ids.shape[1]:]
                lg = m(torch.cat([ids, new[:, :-1]], 1)).logits
            r.update({"greedy_new_tokens": new.tolist(), "last_logits": lg[:, -1, :].tolist(),
                      "modules": sorted({type(x).__name__ for x in m.modules()})})
        except Exception as e:
            r["error"] = repr(e)
        print(fmt, rc, r.get("greedy_new_tokens"), r.get("error"), r.get("modules"))
        json.dump(r, open("%s/ref-%s-rc%d.json" % (O, fmt, rc), "w"))
