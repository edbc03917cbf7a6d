"""Rewrites a ModelOpt-layout checkpoint that `nvlemu quantize` wrote
(IN_DIR: one model.safetensors, config.json) as llm-compressor writes the
same weights in compressed-tensors' layout (OUT_DIR), following
compressed-tensors' source (docs/quantization.md, *compressed-tensors*):

  nvfp4      P.weight U8 -> P.weight_packed (same nibbles: pack_fp4_to_uint8
             puts element 2i in the low nibble, as ModelOpt); P.weight_scale
             E4M3 [R, C/16] kept; P.weight_scale_2 F32 [] ->
             P.weight_global_scale F32 [1] = 1 / it (generate_gparam's
             448 x 6 / amax); P.input_scale -> P.input_global_scale [1] =
             1 / it; format "nvfp4-pack-quantized"
  fp8        P.weight F8_E4M3 kept; P.weight_scale F32 [] -> [1] (strategy
             "tensor") or the same value per row [R, 1] (STRATEGY
             "channel"); P.input_scale [] -> [1]; format "float-quantized"
  fp8-block  P.weight_scale_inv F32 [R/128, C/128] -> P.weight_scale;
             format "float-quantized", strategy "block"
  any        ModelOpt's self_attn.k_proj.k_scale / v_proj.v_scale ->
             self_attn.k_scale / v_scale [1], kv_cache_scheme float 8 bits

config.json's quantization_config becomes compressed-tensors' (targets
["Linear"], ignore ["lm_head"]; IGNORE, a JSON list, adds entries) and
hf_quant_config.json is left out.  Tensors named in IGNORE's plain entries'
modules are not touched here: the caller passes a checkpoint whose
excluded modules are already float.  Standard library only.

(`nvlemu quantize --format mxfp4` writes compressed-tensors' layout itself.)

Usage: make_ct.py IN_DIR OUT_DIR nvfp4|fp8|fp8-block [tensor|channel]
       [IGNORE_JSON] [FORMAT]
"""
import json
import os
import shutil
import struct
import sys


def group(fmt, strategy):
    if fmt == "nvfp4":
        w = {"num_bits": 4, "type": "float", "strategy": "tensor_group",
             "group_size": 16, "symmetric": True, "dynamic": False}
        a = dict(w, dynamic="local")
    elif fmt == "fp8":
        w = {"num_bits": 8, "type": "float", "strategy": strategy,
             "symmetric": True, "dynamic": False}
        a = {"num_bits": 8, "type": "float", "strategy": "tensor",
             "symmetric": True, "dynamic": False}
    else:
        w = {"num_bits": 8, "type": "float", "strategy": "block",
             "block_structure": [128, 128], "symmetric": True,
             "dynamic": False}
        a = {"num_bits": 8, "type": "float", "strategy": "group",
             "group_size": 128, "symmetric": True, "dynamic": True}
    return {"targets": ["Linear"], "weights": w, "input_activations": a}


def main():
    src, dst, fmt = sys.argv[1], sys.argv[2], sys.argv[3]
    strategy = sys.argv[4] if len(sys.argv) > 4 else "tensor"
    ignore = json.loads(sys.argv[5]) if len(sys.argv) > 5 else []
    compression = sys.argv[6] if len(sys.argv) > 6 else {
        "nvfp4": "nvfp4-pack-quantized"}.get(fmt, "float-quantized")
    os.makedirs(dst, exist_ok=True)
    for f in os.listdir(src):
        if f.endswith(".json") and f != "hf_quant_config.json":
            shutil.copy(os.path.join(src, f), os.path.join(dst, f))
    path = os.path.join(dst, "config.json")
    cfg = json.load(open(path))
    cfg["quantization_config"] = {
        "quant_method": "compressed-tensors", "format": compression,
        "quantization_status": "compressed",
        "config_groups": {"group_0": group(fmt, strategy)},
        "kv_cache_scheme": None, "ignore": ["lm_head"] + ignore}
    json.dump(cfg, open(path, "w"), indent=2)
    raw = open(os.path.join(src, "model.safetensors"), "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    out, data = {}, bytearray()

    def put(name, dtype, shape, b):
        out[name] = {"dtype": dtype, "shape": shape,
                     "data_offsets": [len(data), len(data) + len(b)]}
        data.extend(b)

    def f32(b):
        return struct.unpack("<f", b)[0]

    def inv(b):
        return struct.pack("<f", 1.0 / f32(b))

    for name, t in header.items():
        if name == "__metadata__":
            continue
        b = body[t["data_offsets"][0]:t["data_offsets"][1]]
        p, _, leaf = name.rpartition(".")
        if fmt == "nvfp4" and leaf == "weight" and t["dtype"] == "U8":
            put(p + ".weight_packed", "U8", t["shape"], b)
        elif fmt == "nvfp4" and leaf == "weight_scale_2":
            put(p + ".weight_global_scale", "F32", [1], inv(b))
        elif fmt == "nvfp4" and leaf == "input_scale":
            put(p + ".input_global_scale", "F32", [1], inv(b))
        elif fmt == "fp8" and leaf == "weight_scale" and strategy == "channel":
            rows = header[p + ".weight"]["shape"][0]
            put(name, "F32", [rows, 1], b * rows)
        elif fmt == "fp8" and leaf in ("weight_scale", "input_scale"):
            put(name, "F32", [1], b)
        elif leaf in ("k_scale", "v_scale"):
            # ModelOpt's self_attn.k_proj.k_scale: compressed-tensors'
            # self_attn.k_scale [1] (initialize.py, _initialize_attn_scales)
            put(p.rpartition(".")[0] + "." + leaf, "F32", [1], b)
            cfg["quantization_config"]["kv_cache_scheme"] = {
                "num_bits": 8, "type": "float", "strategy": "tensor",
                "symmetric": True, "dynamic": False}
        elif fmt == "fp8-block" and leaf == "weight_scale_inv":
            put(p + ".weight_scale", "F32", t["shape"], b)
        else:
            put(name, t["dtype"], t["shape"], b)
    json.dump(cfg, open(path, "w"), indent=2)
    text = json.dumps(out).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(data))


main()
