"""Copies a quantized checkpoint (IN_DIR: one model.safetensors and its
JSON files) to OUT_DIR with per-tensor F32 scales added to every decoder
layer: SPEC is a JSON object {"suffix": value}, e.g.
{"self_attn.q_proj.input_scale": 1.0} adds
model.layers.N.self_attn.q_proj.input_scale = 1.0 for each layer N (a
value "nan" writes a NaN; a list, one value per layer, a scale per layer;
{"F8_E4M3": code} one E4M3 byte of shape [1], as NVFP4's block scales are
stored, named first in the header).  Standard library only.
QCONFIG (optional): config.json's quantization_config replaced by this
JSON object, and hf_quant_config.json left out (e.g. an FP8 checkpoint
read as vLLM's Fp8Config: {"quant_method": "fp8", "activation_scheme":
"dynamic"}).

Usage: add_scales.py IN_DIR OUT_DIR SPEC [QCONFIG]
"""
import json
import os
import shutil
import struct
import sys


def main():
    src, dst, spec = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    os.makedirs(dst, exist_ok=True)
    qconfig = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None
    for f in os.listdir(src):
        if qconfig is not None and f == "hf_quant_config.json":
            continue
        if f.endswith(".json"):
            shutil.copy(os.path.join(src, f), os.path.join(dst, f))
    if qconfig is not None:
        path = os.path.join(dst, "config.json")
        cfg = json.load(open(path))
        cfg["quantization_config"] = qconfig
        json.dump(cfg, open(path, "w"), indent=2)
    raw = open(os.path.join(src, "model.safetensors"), "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = bytearray(raw[8 + n:])
    layers = sorted({int(k.split(".")[2]) for k in header
                     if k.startswith("model.layers.")})
    front = {}
    for li in layers:
        for suffix, v in spec.items():
            name = "model.layers.%d.%s" % (li, suffix)
            if isinstance(v, list):
                v = v[li]
            off = len(data)
            if isinstance(v, dict):
                data += bytes([v["F8_E4M3"]])
                front[name] = {"dtype": "F8_E4M3", "shape": [1],
                               "data_offsets": [off, off + 1]}
                continue
            data += struct.pack("<f", float(v))
            header[name] = {"dtype": "F32", "shape": [],
                            "data_offsets": [off, off + 4]}
    text = json.dumps(dict(front, **header)).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(data))


main()
