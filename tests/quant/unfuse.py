"""Rewrites an NVFP4 checkpoint that `nvlemu quantize` wrote (IN_DIR,
ModelOpt's layout, one weight_scale_2 per fused GEMM) as a checkpoint
whose fused parts (q/k/v_proj, gate/up_proj, each expert's gate/up_proj)
carry their own weight_scale_2, as ModelOpt exports without the fusion
step wrote them: each part but the first (q_proj, gate_proj) has its
weight_scale_2 multiplied by 2^k and each of its E4M3 block scales divided
by 2^k by moving its exponent field, k the first of TRY that keeps every
block scale an exact normal E4M3 number (the script stops if none does).
Every weight's value code x scale x scale_2 is then the same real number,
so the output must give IN_DIR's logits bit for bit, while the parts'
weight_scale_2 differ (by 2x, 4x or 8x).  Standard library only.

Usage: unfuse.py IN_DIR OUT_DIR
"""
import json
import os
import shutil
import struct
import sys

from mix_layers import read, tensor

SHIFTED = ("k_proj", "v_proj", "up_proj")
TRY = (1, -1, 2, -2, 3)


def shift_e4m3(c, k):
    """The E4M3 code of value(c) / 2^k where that is exact, else None."""
    e, m = (c >> 3) & 0xF, c & 7
    if e == 0 and m == 0:
        return c  # zero: unchanged
    ne = e - k
    if e == 0 or not 1 <= ne <= 15 or (ne == 15 and m >= 7):
        return None
    return (c & 0x80) | (ne << 3) | m


def shift_of(scales):
    """The first k of TRY that moves every scale exactly."""
    for k in TRY:
        if all(shift_e4m3(c, k) is not None for c in scales):
            return k
    sys.exit("no power of two moves these block scales exactly")


def main():
    src, dst = sys.argv[1:3]
    os.makedirs(dst, exist_ok=True)
    for f in os.listdir(src):
        if f.endswith(".json"):
            shutil.copy(os.path.join(src, f), os.path.join(dst, f))
    h, d = read(os.path.join(src, "model.safetensors"))
    shift = {n[:-len("weight_scale_2")]:
             shift_of(tensor(h, d, n[:-2])) for n in h
             if n.endswith(".weight_scale_2") and n.split(".")[-2] in SHIFTED}
    out, data, changed = {}, bytearray(), 0
    for name, t in h.items():
        if name == "__metadata__":
            continue
        b = bytes(tensor(h, d, name))
        k = shift.get(name[:name.rfind(".") + 1], 0)
        if k and name.endswith(".weight_scale"):
            b = bytes(shift_e4m3(c, k) for c in b)
        elif k and name.endswith(".weight_scale_2"):
            v = struct.unpack("<f", b)[0]
            b = struct.pack("<f", v * 2.0 ** k)
            changed += 1
        out[name] = dict(t, data_offsets=[len(data), len(data) + len(b)])
        data += b
    assert changed > 0, "no fused part's weight_scale_2 in " + src
    text = json.dumps(out).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(data))
    print("%d weight_scale_2 moved by powers of two" % changed)


main()
