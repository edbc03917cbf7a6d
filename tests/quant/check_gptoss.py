"""Checks the gpt-oss MX-FP4 checkpoint that `nvlemu quantize --format mxfp4`
wrote from a bf16 gpt-oss (OUT_DIR from BF16_DIR) against the quantizer
transformers runs to turn a bf16 gpt-oss into MX-FP4 (integrations/
mxfp4.py, quantize_to_mxfp4, "copied from GPT_OSS repo and vllm":
triton_kernels' downcast_to_mxfp_torch of w.to(bfloat16), rounding mode
ROUND_UP), written here from its source, operation by operation on the
float32 bits (triton-lang/triton python/triton_kernels/triton_kernels/
numerics_details/mxfp.py):

  scale  d = f32(max |w| / 6); e = (bits(d) + 0x7FFFFF) & 0x7F800000;
         the E8M0 code e >> 23; quant_scale = 0 if e == 0 else f32(1 / e)
  codes  q = f32(w x quant_scale); sign, exponent, mantissa of q; below
         1.0 the mantissa becomes (0x400000 | m >> 1) >> (126 - exponent)
         (the bits shifted out sticky) and the exponent 0, else the
         exponent less 126; round to nearest even on the two top mantissa
         bits (guard, sticky), saturate at 7, the sign in bit 3; element
         2i in the low nibble
  (the weights are bf16 already: the cast changes nothing)

Layout (docs/quantization.md, *gpt-oss's MX-FP4 experts*): each fused
experts tensor P [E, in, out] (BF16) becomes P_blocks U8 [E, out, in/32,
16] and P_scales U8 [E, out, in/32]; every other tensor is copied byte for
byte; config.json's quantization_config equals REF_DIR's (openai's
gpt-oss-20b form).  Where a group's scale equals REF_DIR's (made on the
device with the OCP MX v1.0 rule, scripts/device/make-gptoss-fixture.py),
its codes must equal REF_DIR's too.  Exits non-zero naming the first
tensor that differs.  Standard library only.

Usage: check_gptoss.py BF16_DIR OUT_DIR REF_DIR
"""
import json
import os
import struct
import sys


def load(d):
    raw = open(os.path.join(d, "model.safetensors"), "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    h = json.loads(raw[8:8 + n])
    return {k: (v["dtype"], v["shape"],
                raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in h.items() if k != "__metadata__"}


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def from_bits(u):
    return struct.unpack("<f", struct.pack("<I", u))[0]


def e2m1(q):
    u = bits(q)
    sign, exp, mant = u & 0x80000000, (u >> 23) & 0xFF, u & 0x7FFFFF
    sticky = 0
    if exp < 127:
        shift = 127 - (exp + 1)
        pre = 0x400000 | (mant >> 1)
        sticky = int(mant & 1 != 0 or pre & ((1 << min(shift, 31)) - 1) != 0)
        mant = pre >> shift if shift < 32 else 0
    exp = max(exp, 126) - 126
    m2 = (mant >> 21) & 3
    sticky |= int((mant & 0x1FFFFF) != 0)
    inc = (m2 & 1) & (sticky | ((m2 >> 1) & 1))
    return (sign >> 28) | min((((exp << 2) | m2) + inc) >> 1, 7)


def group(vals):
    """downcast_to_mxfp's (code, 32 E2M1 codes) of one group."""
    amax = max(abs(v) for v in vals)
    e = (bits(f32(amax / 6.0)) + 0x7FFFFF) & 0x7F800000
    qs = 0.0 if e == 0 else f32(1.0 / from_bits(e))
    return e >> 23, [e2m1(f32(v * qs)) for v in vals]


def main():
    bf_dir, out_dir, ref_dir = sys.argv[1:4]
    src, out, ref = load(bf_dir), load(out_dir), load(ref_dir)
    fused = [k for k, (dt, sh, _) in src.items()
             if len(sh) == 3 and ".mlp.experts." in k and not k.endswith("bias")]
    want = set(src) - set(fused) | {k + s for k in fused for s in ("_blocks", "_scales")}
    if set(out) != want:
        sys.exit("tensors: %s more, %s missing" % (sorted(set(out) - want),
                                                   sorted(want - set(out))))
    for k in set(src) - set(fused):
        if out[k] != src[k]:
            sys.exit("%s: not copied byte for byte" % k)
    groups = same_scale = 0
    for k in sorted(fused):
        dt, (E, I, O), raw = src[k]
        if dt != "BF16":
            sys.exit("%s: %s, a bf16 gpt-oss expected" % (k, dt))
        w = [from_bits(h << 16) for h in struct.unpack("<%dH" % (len(raw) // 2), raw)]
        G = I // 32
        blocks, scales = bytearray(E * O * G * 16), bytearray(E * O * G)
        for e in range(E):
            for r in range(O):
                for g in range(G):
                    at = (e * O + r) * G + g
                    vals = [w[(e * I + 32 * g + i) * O + r] for i in range(32)]
                    scales[at], codes = group(vals)
                    for i in range(0, 32, 2):
                        blocks[at * 16 + i // 2] = codes[i] | (codes[i + 1] << 4)
        for part, shape, body in (("_blocks", [E, O, G, 16], blocks),
                                  ("_scales", [E, O, G], scales)):
            if out[k + part] != ("U8", shape, bytes(body)):
                got = out[k + part]
                first = next((i for i in range(min(len(got[2]), len(body)))
                              if got[2][i] != body[i]), None)
                sys.exit("%s%s: %s %s differs from downcast_to_mxfp_torch's U8 %s "
                         "(first byte %s)" % (k, part, got[0], got[1], shape, first))
        rs, rb = ref[k + "_scales"][2], ref[k + "_blocks"][2]
        for at in range(E * O * G):
            groups += 1
            if rs[at] == scales[at]:
                same_scale += 1
                if rb[at * 16:at * 16 + 16] != blocks[at * 16:at * 16 + 16]:
                    sys.exit("%s: group %d, the same scale as %s, other codes"
                             % (k, at, ref_dir))
    q = json.load(open(os.path.join(out_dir, "config.json")))["quantization_config"]
    r = json.load(open(os.path.join(ref_dir, "config.json")))["quantization_config"]
    if q != r:
        sys.exit("config.json quantization_config %s, want %s" % (q, r))
    print("gpt-oss MX-FP4: %d tensors as downcast_to_mxfp_torch writes them; %d of "
          "%d groups take the OCP rule's scale, their codes equal" %
          (2 * len(fused), same_scale, groups))


main()
