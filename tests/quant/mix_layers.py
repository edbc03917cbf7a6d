"""Leaves layer 0's dense MLP (or the modules under PREFIX, default
"model.layers.0.mlp.": "model.layers.0.mlp.experts." for a mixture of
experts' layer 0 experts) of an NVFP4 checkpoint that `nvlemu quantize`
wrote (IN_DIR, ModelOpt's layout) in float, as ModelOpt and
llm-compressor leave an excluded module: each quantized weight under it
stored F32 without scales, and PREFIX less its dot plus "*"
("model.layers.0.mlp*") added to exclude_modules in hf_quant_config.json
and config.json.  HOW: "dequant"
stores the NVFP4 weights' own dequantized values (code x weight_scale x
weight_scale_2, one float32 rounding: the weights nvlemu would compute,
so a weight-only run must give IN_DIR's numbers), "float" the original
float32 weights of FLOAT_DIR.  Standard library only.

Usage: mix_layers.py IN_DIR FLOAT_DIR OUT_DIR dequant|float [PREFIX]
"""
import json
import os
import shutil
import struct
import sys

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def e4m3(c):
    """OCP FP8 E4M3 (fn): bias 7, no infinities (the scales hold no NaN)."""
    s = -1.0 if c & 0x80 else 1.0
    e, m = (c >> 3) & 0xF, c & 7
    return s * (m / 8.0 * 2.0 ** -6 if e == 0 else (1 + m / 8.0) * 2.0 ** (e - 7))


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def read(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), raw[8 + n:]


def tensor(h, d, name):
    a, b = h[name]["data_offsets"]
    return d[a:b]


def dequant(h, d, p):
    rows, half = h[p + "weight"]["shape"]
    codes = tensor(h, d, p + "weight")
    scales = tensor(h, d, p + "weight_scale")
    s2 = struct.unpack("<f", tensor(h, d, p + "weight_scale_2"))[0]
    out = []
    for r in range(rows):
        for j in range(2 * half):
            c = codes[r * half + j // 2] >> (4 * (j & 1)) & 0xF
            v = (-1.0 if c & 8 else 1.0) * E2M1[c & 7]
            # code x E4M3 is exact; the product with scale_2 rounds once
            out.append(f32(v * e4m3(scales[r * (2 * half // 16) + j // 16]) * s2))
    return (rows, 2 * half), struct.pack("<%df" % len(out), *out)


def main():
    src, flt, dst, how = sys.argv[1:5]
    prefix = sys.argv[5] if len(sys.argv) > 5 else "model.layers.0.mlp."
    os.makedirs(dst, exist_ok=True)
    for f in os.listdir(src):
        if f.endswith(".json"):
            shutil.copy(os.path.join(src, f), os.path.join(dst, f))
    for f, get in (("hf_quant_config.json", lambda c: c["quantization"]),
                   ("config.json", lambda c: c["quantization_config"])):
        path = os.path.join(dst, f)
        cfg = json.load(open(path))
        q = get(cfg)  # config.json's ModelOpt form calls the list `ignore`
        q["ignore" if "ignore" in q else "exclude_modules"].append(prefix[:-1] + "*")
        json.dump(cfg, open(path, "w"), indent=2)
    h, d = read(os.path.join(src, "model.safetensors"))
    fh, fd = read(os.path.join(flt, "model.safetensors"))
    out, data = {}, bytearray()
    # the quantized modules under prefix (those with an NVFP4 scale_2)
    mlp = set(n[:-len("weight_scale_2")] for n in h
              if n.startswith(prefix) and n.endswith(".weight_scale_2"))
    for name, t in h.items():
        if name == "__metadata__":
            continue
        p = name[:name.rfind(".") + 1]
        if p in mlp and not name.endswith(".weight"):
            continue  # the scales of a module left unquantized
        if p in mlp:
            shape, b = (dequant(h, d, p) if how == "dequant" else
                        (fh[name]["shape"], tensor(fh, fd, name)))
            t = {"dtype": "F32", "shape": list(shape)}
        else:
            b = tensor(h, d, name)
        out[name] = dict(t, data_offsets=[len(data), len(data) + len(b)])
        data += b
    text = json.dumps(out).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(data))


if __name__ == "__main__":
    main()
