"""One bf16 GEMM (torch F.linear -> cuBLAS) timed under the harnesses that
published GEMM rates use, on one GPU: per call, in us.
  graph_cold: a CUDA graph of R calls on R weight copies (> 500 MB in all:
              the weights stream from HBM, as in a model step)
  graph_hot:  a CUDA graph of R calls on one weight (triton's
              do_bench_cudagraph: the weight stays in L2 if it fits)
  loop_hot:   events around N back-to-back eager calls on one weight
  one_call:   events around one eager call after a synchronize (median)
Writes $OUT/harness.csv and $OUT/env.txt."""
import os, statistics, torch
import torch.nn.functional as F
out = os.environ.get("OUT", ".")
dev = torch.device("cuda")
p = torch.cuda.get_device_properties(dev)
R, N_LOOP, REP = 16, 200, 20
def ev_time(fn, n):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); fn(); e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) * 1e3 / n
rows = []
for m in (1, 16, 64, 128, 256, 1024, 4096):
    n = k = 4096
    copies = max(R, int(6e8 // (n * k * 2)) + 1)
    ws = [torch.randn(n, k, device=dev, dtype=torch.bfloat16) for _ in range(copies)]
    x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
    for w in ws[:3]: F.linear(x, w)
    torch.cuda.synchronize()
    res = {}
    for name, wl in (("graph_cold", ws[:copies]), ("graph_hot", [ws[0]] * copies)):
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for w in wl: F.linear(x, w)
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            for w in wl: y = F.linear(x, w)
        g.replay(); torch.cuda.synchronize()
        res[name] = statistics.median(ev_time(g.replay, len(wl)) for _ in range(REP))
    def loop():
        for _ in range(N_LOOP): F.linear(x, ws[0])
    loop(); torch.cuda.synchronize()
    res["loop_hot"] = statistics.median(ev_time(loop, N_LOOP) for _ in range(5))
    one = []
    for _ in range(200):
        torch.cuda.synchronize()
        one.append(ev_time(lambda: F.linear(x, ws[0]), 1))
    res["one_call"] = statistics.median(one)
    for h, t in res.items():
        rows.append("%d,%d,%d,%s,%.3f" % (m, n, k, h, t))
    print(m, {h: round(t, 2) for h, t in res.items()}, flush=True)
    del ws
    torch.cuda.empty_cache()
with open(os.path.join(out, "harness.csv"), "w") as f:
    f.write("m,n,k,harness,us\n" + "\n".join(rows) + "\n")
with open(os.path.join(out, "env.txt"), "w") as f:
    f.write("%s, %d SMs, L2 %d bytes, torch %s, CUDA %s\n" % (p.name, p.multi_processor_count,
            getattr(p, "L2_cache_size", -1), torch.__version__, torch.version.cuda))
