"""Writes a compressed-tensors checkpoint of two config groups, as an
llm-compressor recipe with two schemes stores it (attention FP8 per
channel with dynamic per-token FP8 inputs, W8A8; the MLP int4 in groups of
128, weight-only, W4A16), from the fixture's two single-scheme
checkpoints: FP8_DIR (make_ct.py's FP8 per channel) and INT4_DIR
(`nvlemu quantize --format int4`).  Under OUT_DIR:

  mixed     attention's tensors from FP8_DIR, the rest from INT4_DIR;
            quantization_config format "mixed-precision", group_0 (FP8,
            targets "re:.*self_attn\\.(q|k|v|o)_proj$", format
            "float-quantized") and group_1 (int4, the MLP's projections,
            format "pack-quantized"), ignore ["lm_head"]
  twin      every tensor F32, each quantized weight its dequantized values
            (FP8: E4M3 code x the row's scale; int4: (nibble - 8) x the
            group's scale; each rounded once to float32), no quantization:
            weight-only, mixed must give its numbers bit for bit
  fp8-attn  attention as in mixed, the MLP as in twin (F32), one group
            (FP8, the attention's targets): with activations quantized,
            mixed must give its numbers bit for bit (the MLP's inputs stay
            bf16 in both: int4 is W4A16)

and the same by layer, one class in two schemes:

  layered       as mixed, but layer 1's MLP from FP8_DIR in group_0
                (targets ATTN and "re:model\\.layers\\.1\\.mlp\\..*"),
                layer 0's alone int4 (group_1, "re:model\\.layers\\.0\\.mlp\\..*")
  layered-twin  its float twin (weight-only, the same numbers)
  layered-ref   one FP8 group (the attention, layer 1's MLP) and layer 0's
                MLP stored as its int4 weights' dequantized values, not a
                target: with activations, layered's numbers (layer 0's MLP
                inputs unquantized in both)

Standard library only.  Usage: mix_groups.py FP8_DIR INT4_DIR OUT_DIR
"""
import json
import os
import shutil
import struct
import sys

from mix_layers import e4m3, f32, read, tensor

ATTN = "re:.*self_attn\\.(q|k|v|o)_proj$"
MLP = "re:.*mlp\\.(gate|up|down)_proj$"


def config(groups):
    """compressed-tensors' quantization_config of (targets, scheme) groups."""
    fp8 = {"weights": {"num_bits": 8, "type": "float", "strategy": "channel",
                       "symmetric": True, "dynamic": False},
           "input_activations": {"num_bits": 8, "type": "float",
                                 "strategy": "token", "symmetric": True,
                                 "dynamic": True},
           "format": "float-quantized"}
    int4 = {"weights": {"num_bits": 4, "type": "int", "strategy": "group",
                        "group_size": 128, "symmetric": True,
                        "dynamic": False},
            "input_activations": None, "format": "pack-quantized"}
    schemes = {"fp8": fp8, "int4": int4}
    return {"quant_method": "compressed-tensors", "format": "mixed-precision",
            "quantization_status": "compressed", "kv_cache_scheme": None,
            "ignore": ["lm_head"],
            "config_groups": {"group_%d" % i: dict(schemes[s], targets=t)
                              for i, (t, s) in enumerate(groups)}}


LAYER = "re:model\\.layers\\.%d\\.mlp\\.(gate|up|down)_proj$"


def attention(name):
    return ".self_attn." in name and "_proj." in name


def fp8_module(name, by_layer):
    """Whether the module of tensor `name` comes from FP8_DIR: the
    attention, and by layer layer 1's MLP too."""
    return attention(name) or (by_layer and name.startswith(
        "model.layers.1.mlp.") and "_proj." in name)


def deq_fp8(h, d, p):
    rows, cols = h[p + "weight"]["shape"]
    codes = tensor(h, d, p + "weight")
    sc = struct.unpack("<%df" % rows, tensor(h, d, p + "weight_scale"))
    return struct.pack("<%df" % (rows * cols),
                       *[f32(e4m3(codes[i]) * sc[i // cols])
                         for i in range(rows * cols)])


def deq_int4(h, d, p):
    rows, cols = struct.unpack("<2q", tensor(h, d, p + "weight_shape"))
    raw = tensor(h, d, p + "weight_packed")
    sc = struct.unpack("<%df" % (rows * cols // 128),
                       tensor(h, d, p + "weight_scale"))
    return (rows, cols), struct.pack(
        "<%df" % (rows * cols),
        *[f32((((raw[i // 2] >> (4 * (i & 1))) & 0xF) - 8) *
              sc[(i // cols) * (cols // 128) + (i % cols) // 128])
          for i in range(rows * cols)])


def write(dst, src_cfg_dir, qc, tensors):
    os.makedirs(dst, exist_ok=True)
    for f in os.listdir(src_cfg_dir):
        if f.endswith(".json"):
            shutil.copy(os.path.join(src_cfg_dir, f), os.path.join(dst, f))
    path = os.path.join(dst, "config.json")
    cfg = json.load(open(path))
    cfg.pop("quantization_config", None)
    if qc is not None:
        cfg["quantization_config"] = qc
    json.dump(cfg, open(path, "w"), indent=2)
    out, data = {}, bytearray()
    for name, (dtype, shape, b) in sorted(tensors.items()):
        out[name] = {"dtype": dtype, "shape": list(shape),
                     "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    text = json.dumps(out).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(data))


def checkpoints(fh, fd, ih, idata, by_layer):
    """(mixed, twin): the two-scheme checkpoint's tensors and its float
    twin's, the FP8 modules from fh (fp8_module) and the rest from ih."""
    mixed, twin = {}, {}
    for name, t in fh.items():
        if name != "__metadata__" and fp8_module(name, by_layer):
            mixed[name] = (t["dtype"], t["shape"], tensor(fh, fd, name))
            if name.endswith(".weight"):
                twin[name] = ("F32", t["shape"], deq_fp8(fh, fd, name[:-6]))
    for name, t in ih.items():
        if name == "__metadata__" or fp8_module(name, by_layer):
            continue
        mixed[name] = (t["dtype"], t["shape"], tensor(ih, idata, name))
        p = name[:name.rfind(".") + 1]
        if name.endswith(".weight_packed"):
            shape, b = deq_int4(ih, idata, p)
            twin[p + "weight"] = ("F32", shape, b)
        elif not name.endswith((".weight_scale", ".weight_shape")):
            twin[name] = mixed[name]
    return mixed, twin


def main():
    fp8_dir, int4_dir, out = sys.argv[1:4]
    fh, fd = read(os.path.join(fp8_dir, "model.safetensors"))
    ih, idata = read(os.path.join(int4_dir, "model.safetensors"))
    for by_layer, name in ((False, "mixed"), (True, "layered")):
        mixed, twin = checkpoints(fh, fd, ih, idata, by_layer)
        ref = dict((n, v) for n, v in twin.items()
                   if not fp8_module(n, by_layer))
        ref.update((n, v) for n, v in mixed.items() if fp8_module(n, by_layer))
        fp8 = [ATTN] + ([LAYER % 1] if by_layer else [])
        int4 = [LAYER % 0] if by_layer else [MLP]
        write(os.path.join(out, name), int4_dir,
              config([(fp8, "fp8"), (int4, "int4")]), mixed)
        write(os.path.join(out, name + "-twin" if by_layer else "twin"),
              int4_dir, None, twin)
        write(os.path.join(out, name + "-ref" if by_layer else "fp8-attn"),
              int4_dir, config([(fp8, "fp8")]), ref)


if __name__ == "__main__":
    main()
