#!/usr/bin/env python3
"""BF16 checkpoints end to end: `nvlemu generate` on a BF16 safetensors
model must give exactly the logits and tokens of the same values stored as
F32 (data mode converts BF16 to float32 when it reads a slice).

Usage: check_bf16.py BF16_DIR -- MPIEXEC -n N NVLEMU generate ARGS...
(the command without --model and --logits-out)."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile


def f32_twin(src, dst):
    raw = open(os.path.join(src, "model.safetensors"), "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    hdr = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    out, data = {}, bytearray()
    for k in sorted(k for k in hdr if k != "__metadata__"):
        v = hdr[k]
        a, b = v["data_offsets"]
        halves = struct.unpack("<%dH" % ((b - a) // 2), body[a:b])
        f32 = struct.pack("<%dI" % len(halves), *[h << 16 for h in halves])
        out[k] = {"dtype": "F32", "shape": v["shape"],
                  "data_offsets": [len(data), len(data) + len(f32)]}
        data += f32
    h = json.dumps(out).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + bytes(data))
    shutil.copy(os.path.join(src, "config.json"), dst)


def generate(cmd, model, out):
    p = subprocess.run(cmd + ["--model", model, "--logits-out", out],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    sys.stdout.write(p.stdout)
    if p.returncode != 0:
        sys.exit("check_bf16.py: generate on %s exited %d" % (model, p.returncode))
    with open(out) as f:
        return json.load(f)


def main():
    bf16 = sys.argv[1]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    with tempfile.TemporaryDirectory() as d:
        twin = os.path.join(d, "f32")
        os.mkdir(twin)
        f32_twin(bf16, twin)
        a = generate(cmd, bf16, os.path.join(d, "a.json"))
        b = generate(cmd, twin, os.path.join(d, "b.json"))
    if a != b:
        sys.exit("check_bf16.py: BF16 and F32 checkpoints of the same values differ")
    print("check_bf16.py: BF16 checkpoint == its F32 twin (%d tokens)" %
          len(a["new_tokens"][0]))


if __name__ == "__main__":
    main()
