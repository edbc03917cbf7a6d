"""Checks an int8, int4 or MX-FP4 checkpoint that `nvlemu quantize` wrote
(INT_DIR) against compressed-tensors' writer and layout, written here from
their source (docs/quantization.md, *Integer weights*), and writes its
float twin (TWIN_DIR: every tensor F32, each quantized weight replaced by
its dequantized values, no quantization_config), so that a weight-only
run of INT_DIR must give TWIN_DIR's numbers bit for bit.

  quantizer  compressed_tensors/quantization/utils/helpers.py,
             calculate_qparams (symmetric): scale = amax / (bit_range / 2)
             per output row (int8) or 1 x 128 group (int4), at least
             float32's eps; lifecycle/forward.py, _quantize:
             round(clamp(x / scale, q_min, q_max)), ties to even; all in
             float32 (each operation below rounds once to float32: a
             double result rounded to float32 is the float32 result for
             + - * /)
  int8       `weight` I8 [R, C], `weight_scale` [R, 1] (naive_quantized.py)
  int4       `weight_packed` I32 [R, C / 8]: pack_to_int32 stores q + 8,
             element i of each run of 8 in bits 4i..4i+3 of a
             little-endian int32; `weight_scale` [R, C / 128];
             `weight_shape` [R, C] (pack_quantized.py)
  dequant    forward.py, _dequantize: (q - 0) x scale, rounded once
  mxfp4      (compressed-tensors 0.18, MXFP4A16) quantization/utils/
             mxfp_utils.py, generate_mx_scales: each group of 32's max |w|
             as float32 bits, plus 1 << 21 (round_to_power_2: float32's 23
             mantissa bits less E2M1's 1 less 1), and-ed with the sign and
             exponent mask; the E8M0 code 127 + floor(log2(that)) - 2,
             clamped to [0, 255] (log2(0) = -inf: 0); utils/fp4_utils.py,
             cast_to_fp4 of w / 2^(code - 127) clamped to +-6 (its
             thresholds, sign(x) times the magnitude); `weight_packed` U8
             [R, C / 2], element 2i in the low nibble, the sign bit 3 set
             where the result's sign bit is (pack_fp4_to_uint8);
             `weight_scale` U8 [R, C / 32] the codes; dequantized as the
             grid value x 2^(code - 127), exact

Every stored byte must equal this quantizer's; exits non-zero naming the
first tensor that differs.  Standard library only.

Usage: check_int.py FLOAT_DIR INT_DIR int8|int4|mxfp4 TWIN_DIR
"""
import json
import math
import os
import shutil
import struct
import sys

from mix_layers import f32, read, tensor as body  # safetensors helpers


def quantize(w, rows, cols, group, qmax):
    """The codes (row-major) and scales [rows][cols / group]."""
    codes, scales = [], []
    for r in range(rows):
        row = []
        for g0 in range(0, cols, group):
            x = w[r * cols + g0:r * cols + g0 + group]
            s = max(f32(max(abs(v) for v in x) / (qmax + 0.5)), 2.0 ** -23)
            row.append(s)
            codes += [round(min(max(f32(v / s), -qmax - 1), qmax)) for v in x]
        scales.append(row)
    return codes, scales


E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def cast_to_fp4(x):
    """cast_to_fp4's grid value of x (already clamped to +-6)."""
    a = abs(x)
    for hi, closed, v in ((0.25, True, 0.0), (0.75, False, 0.5),
                          (1.25, True, 1.0), (1.75, False, 1.5),
                          (2.5, True, 2.0), (3.5, False, 3.0),
                          (5.0, True, 4.0)):
        if a < hi or (closed and a == hi):
            break
    else:
        v = 6.0
    sign = 1.0 if x > 0 else -1.0 if x < 0 else 0.0  # torch.sign
    return v * sign


def mx_scale_code(amax):
    u = struct.unpack("<I", struct.pack("<f", amax))[0]
    p2 = struct.unpack("<f", struct.pack(
        "<I", (u + (1 << 21)) & (((1 << 9) - 1) << 23)))[0]
    if p2 == 0.0:
        return 0
    return min(max(127 + math.floor(math.log2(p2)) - 2, 0), 255)


def mxfp4(w, rows, cols):
    """weight_packed's bytes, weight_scale's codes, the dequantized values."""
    packed, codes, deq = bytearray(rows * cols // 2), [], []
    for g0 in range(0, rows * cols, 32):
        x = w[g0:g0 + 32]
        c = mx_scale_code(max(abs(v) for v in x))
        codes.append(c)
        for k, v in enumerate(x):
            q = cast_to_fp4(min(max(f32(v / 2.0 ** (c - 127)), -6.0), 6.0))
            nib = E2M1.index(abs(q)) | (8 if math.copysign(1, q) < 0 else 0)
            packed[(g0 + k) // 2] |= nib << (4 * (k & 1))
            deq.append(q * 2.0 ** (c - 127))
    return bytes(packed), bytes(codes), deq


def check_mxfp4(qh, qd, p, w, rows, cols):
    """Asserts the stored tensors; the dequantized values as F32 bytes."""
    packed, codes, deq = mxfp4(w, rows, cols)
    for suffix, dtype, shape, want in (
            ("weight_packed", "U8", [rows, cols // 2], packed),
            ("weight_scale", "U8", [rows, cols // 32], codes)):
        t = qh[p + suffix]
        assert (t["dtype"], t["shape"]) == (dtype, shape), (p + suffix, t)
        assert body(qh, qd, p + suffix) == want, "bytes of " + p + suffix
    return struct.pack("<%df" % len(deq), *deq)


def main():
    fdir, qdir, fmt, twin = sys.argv[1:5]
    four = fmt == "int4"
    group, qmax = (128, 7) if four else (None, 127)
    fh, fd = read(os.path.join(fdir, "model.safetensors"))
    qh, qd = read(os.path.join(qdir, "model.safetensors"))
    out, data = {}, bytearray()
    checked = 0
    for name, t in fh.items():
        if name == "__metadata__":
            continue
        b = body(fh, fd, name)
        p = name[:-len("weight")]
        stored = p + ("weight_packed" if four or fmt == "mxfp4" else "weight")
        if fmt == "mxfp4" and stored in qh:
            rows, cols = t["shape"]
            w = struct.unpack("<%df" % (rows * cols), b)
            b = check_mxfp4(qh, qd, p, w, rows, cols)
            checked += 1
        elif qh.get(stored, {}).get("dtype") in ("I8", "I32"):
            rows, cols = t["shape"]
            w = struct.unpack("<%df" % (rows * cols), b)
            codes, scales = quantize(w, rows, cols, group or cols, qmax)
            if four:
                words = [sum((codes[i + j] + 8) << (4 * j) for j in range(8))
                         for i in range(0, len(codes), 8)]
                want = struct.pack("<%dI" % len(words), *words)
                shape = struct.pack("<2q", rows, cols)
                assert body(qh, qd, p + "weight_shape") == shape, p
            else:
                want = struct.pack("<%db" % len(codes), *codes)
            flat = [s for row in scales for s in row]
            assert body(qh, qd, stored) == want, "codes of " + stored
            assert body(qh, qd, p + "weight_scale") == struct.pack(
                "<%df" % len(flat), *flat), "scales of " + stored
            # dequantize from the stored bytes, as the layout says
            raw = body(qh, qd, stored)
            if four:
                q = [((raw[i // 2] >> (4 * (i & 1))) & 0xF) - 8
                     for i in range(rows * cols)]
            else:
                q = list(struct.unpack("<%db" % (rows * cols), raw))
            g = group or cols
            sc = struct.unpack("<%df" % len(flat),
                               body(qh, qd, p + "weight_scale"))
            n_g = cols // g
            b = struct.pack("<%df" % (rows * cols),
                            *[f32(q[i] * sc[(i // cols) * n_g + (i % cols) // g])
                              for i in range(rows * cols)])
            checked += 1
        out[name] = {"dtype": t["dtype"], "shape": t["shape"],
                     "data_offsets": [len(data), len(data) + len(b)]}
        data.extend(b)
    assert checked > 0, "no quantized weight in " + qdir
    os.makedirs(twin, exist_ok=True)
    for f in os.listdir(fdir):
        if f.endswith(".json"):
            shutil.copy(os.path.join(fdir, f), os.path.join(twin, f))
    text = json.dumps(out).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(twin, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(data))
    print("%s: %d weights, every code and scale as compressed-tensors "
          "writes them" % (fmt, checked))


main()
