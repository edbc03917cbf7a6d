# tests/data/calibration/h200-topk-passes/README.md
# torch.topk(8) over rows of 128 float32 scores built so that gatherTopK's
# radix select walks a known number of 2-bit passes, across batch sizes;
# and the float softmax of bf16 logits across their spread.
import json, sys, time, torch
T0 = time.time(); O = sys.argv[1]; C = "cuda"; K = 8; E = 128

def tm(f, r=20):
    f(); torch.cuda.synchronize(); g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(8): f()
    a, b = torch.cuda.Event(True), torch.cuda.Event(True); ts = []
    for _ in range(r):
        a.record(); g.replay(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b) * 1e3 / 8)
    return sorted(ts)[r // 2]

def rows(B, m, tie):
    # all scores share the top 2m bits of 0.375's pattern (m >= 5 keeps the
    # exponent in the prefix); the low 32 - 2m bits are distinct random
    # values; tie: the 8th and 9th largest made equal
    low = 32 - 2 * m; base = 0x3EC00000 >> low << low
    v = torch.stack([torch.randperm(1 << low, device=C)[:E] for _ in range(B)]) if low <= 20 else \
        torch.randint(0, 1 << low, (B, E), device=C)
    x = (base | v).to(torch.int32).view(torch.float32).contiguous()
    if tie:
        s, i = x.sort(-1, descending=True); x.scatter_(1, i[:, 8:9], s[:, 7:8])
    return x

out = {"gpu": torch.cuda.get_device_name(0), "sms": torch.cuda.get_device_properties(0).multi_processor_count,
       "torch": torch.__version__, "cuda": torch.version.cuda, "select": [], "softmax": []}
for B in (1, 8, 64, 256, 1024, 4096):
    for m, tie in [(m, False) for m in (5, 7, 9, 10, 11, 12)] + [(5, True)]:
        x = rows(B, m, tie)
        us = tm(lambda: torch.topk(x, K, -1, sorted=False))
        out["select"].append([B, m, int(tie), round(us, 3)])
for B in (64, 4096):
    for sc in (1, 4, 8, 16, 24, 32, 45, 64):
        lg = (torch.randn(B, E, device=C) * sc).bfloat16()
        out["softmax"].append([B, sc, round(tm(lambda: lg.float().softmax(-1)), 3),
                               round(tm(lambda: lg.float()), 3)])
out["seconds"] = time.time() - T0
json.dump(out, open(O + "/topk-passes.json", "w"))
print(json.dumps(out))
