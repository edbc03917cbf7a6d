"""check_run.py's moe-quant check (its docstring says what it checks):
the experts' input quantization and the expanded rows' format, from the
bytes of each kernel in --trace, against the same run with --dtype bf16."""
import json
import os
import sys
import tempfile


def kernel_bytes(run, cmd, extra, name):
    """{(rank, pass, layer): bytes} of every `name` event of the run."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        run(cmd, extra + ["--mode", "timing", "--trace", path])
        with open(path) as f:
            ev = json.load(f)["traceEvents"]
    return {(e["tid"], e["args"]["pass"], e["args"]["layer"]): e["args"]["bytes"]
            for e in ev if e["ph"] == "X" and e["name"] == name}


def close(a, b):
    return abs(a - b) <= 1e-12 * max(abs(a), abs(b))


def fail(what, *args):
    sys.exit("check_run.py: " + what % args)


def check_moe_quant(cmd, run, top_k, hidden):
    """The command: FP8 experts under DEP (--ep, --attn-parallel dp).
    DEP: each rank, pass and MoE layer quantizes its P rows before the
    allgather (moe_quantize, P hidden (2 + 1) bytes, P a whole number) and
    expands the gathered FP8 rows at half the bf16 run's bytes; no
    moe_quantize with --dtype bf16.  Experts tensor-parallel (--ep 1
    --attn-parallel tp): no moe_quantize, and expand_rows reads M bf16 rows
    and writes M top_k FP8 rows: (2 + top_k) / (2 (1 + top_k)) of the bf16
    run's bytes."""
    bf16, tp = ["--dtype", "bf16"], ["--ep", "1", "--attn-parallel", "tp"]
    quant = kernel_bytes(run, cmd, [], "moe_quantize")
    exp8, exp16 = (kernel_bytes(run, cmd, x, "expand_rows") for x in ([], bf16))
    if kernel_bytes(run, cmd, bf16, "moe_quantize"):
        fail("moe_quantize with bf16 experts")
    if not quant or not set(quant) == set(exp8) == set(exp16):
        fail("moe_quantize at %s, expand_rows at %s (fp8), %s (bf16)",
             sorted(quant), sorted(exp8), sorted(exp16))
    for key, b16 in exp16.items():
        rows = quant[key] / (3.0 * hidden)
        if not (close(exp8[key], b16 / 2) and rows >= 1 and rows == int(rows)):
            fail("DEP rank, pass, layer %s: expand_rows %s (fp8) vs %s (bf16) "
                 "bytes; moe_quantize %s bytes", key, exp8[key], b16, quant[key])
    if kernel_bytes(run, cmd, tp, "moe_quantize"):
        fail("moe_quantize with tensor-parallel experts")
    tp8, tp16 = (kernel_bytes(run, cmd, tp + x, "expand_rows") for x in ([], bf16))
    want = (2.0 + top_k) / (2.0 * (1 + top_k))
    if not tp16 or set(tp8) != set(tp16) or not all(
            close(tp8[key], b * want) for key, b in tp16.items()):
        fail("TP expand_rows %s (fp8) vs %s (bf16), want x%s", tp8, tp16, want)
    print("check_run.py: %d DEP MoE kernels quantized before the allgather; "
          "expanded rows in FP8 (TP: x%.4f of bf16)" % (len(quant), want))
