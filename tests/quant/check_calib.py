"""Checks the static scales `nvlemu quantize --calib` wrote against an
independent calibration: a float64 Qwen3 forward pass written here in the
standard library (embedding, RMSNorm, q/k norms, RoPE, causal GQA
attention, SwiGLU), run over the same token file, records ModelOpt's
max-calibration points (the input of q/k/v, o_proj, gate/up and down_proj;
the keys after RoPE and the values), and the scales follow ModelOpt's
export (docs/quantization.md, "Calibration"):
  input_scale = amax / (6 * 448) (NVFP4) or amax / 448 (FP8), the same for
  every part of a fused GEMM; none for the dynamic formats;
  k_scale / v_scale = max(amax / 448, 1) under ModelOpt's names, and
  kv_cache_quant_algo "FP8" in hf_quant_config.json; for the
  compressed-tensors formats (int8, int4, mxfp4) amax / 448 as
  compressed-tensors' calculate_qparams computes it, [1] under the
  attention module's names (self_attn.k_scale), and config.json's
  kv_cache_scheme float 8 bits per tensor, static (static_minmax).
Each within 1e-4 relative (the engine sums in float32).

Usage: check_calib.py FLOAT_DIR TOKENS.jsonl QUANT_DIR FORMAT [KV]
(KV "fp8": the k/v scales are checked, else none may be written);
       check_calib.py --copy FLOAT_DIR OUT_DIR SPEC: a copy of a float32
checkpoint whose tensors model.layers.N.SUFFIX are multiplied by SPEC's
factors ({"self_attn.k_norm.weight": 1000}; "nan": the first element
NaN).
"""
import json
import math
import os
import struct
import sys


def load(d):
    raw = open(os.path.join(d, "model.safetensors"), "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        body = raw[8 + n + a:8 + n + b]
        if v["dtype"] == "F32":
            vals = list(struct.unpack("<%df" % (len(body) // 4), body))
        else:
            vals = None  # quantized codes: not needed here
        out[k] = (v["dtype"], v["shape"], vals)
    return out


def rows(t):
    _, shape, v = t
    return [v[r * shape[1]:(r + 1) * shape[1]] for r in range(shape[0])]


def matvec(w, x):
    return [sum(a * b for a, b in zip(r, x)) for r in w]


def rmsnorm(x, w, eps):
    s = 1.0 / math.sqrt(sum(a * a for a in x) / len(x) + eps)
    return [a * s * g for a, g in zip(x, w)]


def rope(x, pos, theta):
    h = len(x) // 2
    out = list(x)
    for i in range(h):
        f = pos / theta ** (2.0 * i / len(x))
        c, s = math.cos(f), math.sin(f)
        out[i] = x[i] * c - x[i + h] * s
        out[i + h] = x[i + h] * c + x[i] * s
    return out


def amax_of(cfg, w, seqs):
    L, H, KV = cfg["num_hidden_layers"], cfg["num_attention_heads"], \
        cfg["num_key_value_heads"]
    hd, eps = cfg["head_dim"], cfg["rms_norm_eps"]
    theta = cfg.get("rope_parameters", {}).get("rope_theta",
                                               cfg.get("rope_theta"))
    emb = rows(w["model.embed_tokens.weight"])
    amax = [[0.0] * 6 for _ in range(L)]
    lw = []
    for li in range(L):
        p = "model.layers.%d." % li
        g = lambda n: rows(w[p + n + ".weight"])
        v = lambda n: w[p + n + ".weight"][2]
        lw.append({k: g(k) for k in ("self_attn.q_proj", "self_attn.k_proj",
                                      "self_attn.v_proj", "self_attn.o_proj",
                                      "mlp.gate_proj", "mlp.up_proj",
                                      "mlp.down_proj")})
        for k in ("input_layernorm", "post_attention_layernorm",
                  "self_attn.q_norm", "self_attn.k_norm"):
            lw[li][k] = v(k)
    up = lambda li, i, xs: amax[li].__setitem__(
        i, max([amax[li][i]] + [abs(a) for a in xs]))
    for seq in seqs:
        x = [list(emb[t]) for t in seq]
        for li in range(L):
            W = lw[li]
            ks, vs, qs = [], [], []
            for pos, xt in enumerate(x):
                h = rmsnorm(xt, W["input_layernorm"], eps)
                up(li, 0, h)
                q = matvec(W["self_attn.q_proj"], h)
                k = matvec(W["self_attn.k_proj"], h)
                v = matvec(W["self_attn.v_proj"], h)
                q = [rope(rmsnorm(q[i * hd:(i + 1) * hd],
                                  W["self_attn.q_norm"], eps), pos, theta)
                     for i in range(H)]
                k = [rope(rmsnorm(k[i * hd:(i + 1) * hd],
                                  W["self_attn.k_norm"], eps), pos, theta)
                     for i in range(KV)]
                v = [v[i * hd:(i + 1) * hd] for i in range(KV)]
                for kk in k:
                    up(li, 4, kk)
                for vv in v:
                    up(li, 5, vv)
                qs.append(q)
                ks.append(k)
                vs.append(v)
            for pos in range(len(x)):
                o = []
                for i in range(H):
                    j = i // (H // KV)
                    sc = [sum(a * b for a, b in zip(qs[pos][i], ks[t][j])) /
                          math.sqrt(hd) for t in range(pos + 1)]
                    m = max(sc)
                    e = [math.exp(s - m) for s in sc]
                    z = sum(e)
                    o += [sum(e[t] / z * vs[t][j][d] for t in range(pos + 1))
                          for d in range(hd)]
                up(li, 1, o)
                x[pos] = [a + b for a, b in
                          zip(x[pos], matvec(W["self_attn.o_proj"], o))]
                h = rmsnorm(x[pos], W["post_attention_layernorm"], eps)
                up(li, 2, h)
                gt = matvec(W["mlp.gate_proj"], h)
                u = matvec(W["mlp.up_proj"], h)
                a = [gg / (1.0 + math.exp(-gg)) * uu for gg, uu in zip(gt, u)]
                up(li, 3, a)
                x[pos] = [p + q for p, q in
                          zip(x[pos], matvec(W["mlp.down_proj"], a))]
    return amax


def close(got, want, what):
    if abs(got - want) > 1e-4 * abs(want):
        sys.exit("%s: %r, the independent calibration gives %r" %
                 (what, got, want))


def copy(src, dst, spec):
    os.makedirs(dst, exist_ok=True)
    for f in os.listdir(src):
        if f.endswith(".json"):
            open(os.path.join(dst, f), "w").write(
                open(os.path.join(src, f)).read())
    raw = open(os.path.join(src, "model.safetensors"), "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = bytearray(raw[8 + n:])
    for k, v in header.items():
        parts = k.split(".")
        if k == "__metadata__" or len(parts) < 4 or parts[1] != "layers":
            continue
        f = spec.get(".".join(parts[3:]))
        if f is None:
            continue
        a, b = v["data_offsets"]
        vals = list(struct.unpack("<%df" % ((b - a) // 4), data[a:b]))
        if f == "nan":
            vals[0] = float("nan")
        else:
            vals = [x * f for x in vals]
        data[a:b] = struct.pack("<%df" % len(vals), *vals)
    open(os.path.join(dst, "model.safetensors"), "wb").write(
        raw[:8 + n] + bytes(data))


def main():
    if sys.argv[1] == "--copy":
        copy(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]))
        return
    fdir, tokfile, qdir, fmt = sys.argv[1:5]
    kv = len(sys.argv) > 5 and sys.argv[5] == "fp8"
    ct = fmt in ("int8", "int4", "mxfp4")
    cfg = json.load(open(os.path.join(fdir, "config.json")))
    seqs = [json.loads(l) for l in open(tokfile) if l.strip()]
    amax = amax_of(cfg, load(fdir), seqs)
    q = load(qdir)
    div = {"nvfp4": 6.0 * 448.0, "fp8": 448.0}.get(fmt)
    point = {"q_proj": 0, "k_proj": 0, "v_proj": 0, "o_proj": 1,
             "gate_proj": 2, "up_proj": 2, "down_proj": 3}
    n = 0
    for li in range(cfg["num_hidden_layers"]):
        for part, pt in point.items():
            mod = "self_attn" if pt < 2 else "mlp"
            name = "model.layers.%d.%s.%s.input_scale" % (li, mod, part)
            if div is None:
                if name in q:
                    sys.exit("%s written for %s (dynamic activations)" %
                             (name, fmt))
                continue
            dt, shape, v = q[name]
            if dt != "F32" or shape != []:
                sys.exit("%s: %s %s, not an F32 scalar" % (name, dt, shape))
            close(v[0], amax[li][pt] / div, name)
            n += 1
        for j, (mod, key) in enumerate((("k_proj", "k_scale"),
                                        ("v_proj", "v_scale"))):
            mo = "model.layers.%d.self_attn.%s.%s" % (li, mod, key)
            cts = "model.layers.%d.self_attn.%s" % (li, key)
            name, other = (cts, mo) if ct else (mo, cts)
            if other in q or (not kv and name in q):
                sys.exit("%s written (%s, KV %s)" % (other if other in q else name,
                                                     fmt, "fp8" if kv else "bf16"))
            if not kv:
                continue
            a = amax[li][4 + j] / 448.0
            if ct and q[name][:2] != ("F32", [1]):
                sys.exit("%s: %s %s, not F32 [1]" % (name, q[name][0], q[name][1]))
            close(q[name][2][0], a if ct else max(a, 1.0), name)
            n += 1
    if kv and ct:
        s = json.load(open(os.path.join(qdir, "config.json")))[
            "quantization_config"]["kv_cache_scheme"]
        want = {"num_bits": 8, "type": "float", "strategy": "tensor",
                "dynamic": False, "symmetric": True, "observer": "static_minmax"}
        if any(s.get(k) != v for k, v in want.items()):
            sys.exit("config.json: kv_cache_scheme %s, want %s" % (s, want))
    if kv and fmt in ("nvfp4", "fp8"):
        hf = json.load(open(os.path.join(qdir, "hf_quant_config.json")))
        if hf["quantization"].get("kv_cache_quant_algo") != "FP8":
            sys.exit("hf_quant_config.json: kv_cache_quant_algo is not FP8")
    big = [r for r in amax if max(r[4], r[5]) > 448.0]
    print("%d calibrated scales match, %d layer(s) with a k/v scale above 1 (amax per layer: %s)" %
          (n, len(big), [[round(a, 4) for a in r] for r in amax]))
    return
    print("%d calibrated scales match (amax per layer: %s)" %
          (n, [[round(a, 4) for a in r] for r in amax]))


main()
