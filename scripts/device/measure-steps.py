#!/usr/bin/env python3
"""Measures, on one NVIDIA GPU, the `torch` reference decode step and prefill
of Qwen models at tensor-parallel degree 1, for checking nvlemu's `--stack
torch` end to end (docs/measurements.md, docs/validation.md).

The reference is PyTorch with CUDA graphs, bf16, one process per GPU, each
layer written as plain PyTorch calls:

    h = F.rms_norm(x)                        input norm
    qkv = F.linear(h, W_qkv, b_qkv)          one projection, bias if the model has one
    (Qwen3: F.rms_norm over head_dim of q and of k)
    q, k = q*cos + cat(-x2, x1)*sin          RoPE, rotate-half by torch.cat
    k_cache.index_copy_(2, pos, k); v ...    KV write into a preallocated cache
    a = F.scaled_dot_product_attention(q, K, V, enable_gqa=True)   (causal at prefill)
    x = x + F.linear(a, W_o)                 (TP > 1: NCCL all_reduce before the add)
    h = F.rms_norm(x)
    g, u = F.linear(h, W_gate_up).chunk(2)
    x = x + F.linear(F.silu(g) * u, W_down)
and around the layers: the embedding lookup, the final norm, the lm_head on
each sequence's last position and a greedy argmax (the step a decode loop
runs).  Weights are random (values do not change the kernels' times); a
layer subset keeps the largest model on one GPU (every layer has its own
weights, so nothing is served from L2).

Timed: a decode step at batch B with a KV cache of C positions (the new
token is position C - 1, so attention reads C positions, as
`nvlemu run --ctx C`), and a prefill of B prompts of P tokens into an empty
cache (`nvlemu run --prompt-len P --gen-len 1`).  Each case is captured once
in a CUDA graph and replayed; the reported time is the median wall time of
replay + synchronize (what a decode loop waits for), with the CUDA-event
time of the replay beside it.

Profiles (torch.profiler, CUDA activity) of one eager step with
record_function labels per operation, and of one graph replay, for a few
cases; the Chrome traces go into traces.tar.gz.

Files in --out:
  steps.csv     model,layers,phase,batch,ctx,q_len,measured_us,event_us,reps
  kernels.csv   model,phase,batch,ctx,source,seq,label,name,dur_us (one row
                per kernel of the profiled step; label from record_function,
                eager only)
  env.json      GPU, clocks, versions, the SDPA backend chosen, run times
  traces.tar.gz Chrome traces of the profiled steps

Tensor parallelism (--tp N, under torchrun --nproc_per_node=N): each
process holds its shard as `nvlemu run --stack torch` splits it: q/k/v heads,
o's input rows, gate/up columns, down's input rows and the vocabulary
(embedding: its rows, zeros elsewhere, then an all_reduce; lm_head: its
rows, then an all_gather of the logits), with an NCCL all_reduce after o
and after down, captured in the CUDA graph with the rest. Rank 0 writes
the files (steps.csv gains a tp column); no profiles at TP > 1.

Run on the device machine:
    python3 scripts/device/measure-steps.py --out "$OUT"
    torchrun --nproc_per_node=2 scripts/device/measure-steps.py --tp 2 --out "$OUT"
Options: --quick (tiny grid, for checking the script), --budget-s N.

Without a GPU, `measure-steps.py --relabel traces.tar.gz --out DIR` rebuilds
kernels.csv from the traces and writes kernel_summary.csv (per profiled
step and label: kernels, summed GPU time), as
tests/data/calibration/h200-torch/ holds them.
"""
import argparse
import csv
import datetime
import json
import os
import statistics
import subprocess
import sys
import tarfile
import time
import traceback

try:                # --relabel needs no GPU: only the standard library
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile, record_function
except ImportError:
    torch = None

T0 = time.time()

# Hugging Face config.json values of the three models.
MODELS = {
    "qwen2.5-7b": dict(hidden=3584, inter=18944, heads=28, kv_heads=4, head_dim=128,
                       vocab=152064, bias=True, qk_norm=False, eps=1e-6, layers=28),
    "qwen3-32b": dict(hidden=5120, inter=25600, heads=64, kv_heads=8, head_dim=128,
                      vocab=151936, bias=False, qk_norm=True, eps=1e-6, layers=16),
    "qwen2.5-72b": dict(hidden=8192, inter=29568, heads=64, kv_heads=8, head_dim=128,
                        vocab=152064, bias=True, qk_norm=False, eps=1e-5, layers=8),
}
DECODE = [(b, c) for b in (1, 4, 16, 64) for c in (1024, 4096, 8192)]
PREFILL = [(1, 1024), (1, 2048), (1, 4096), (1, 8192), (4, 1024), (4, 2048), (16, 1024)]
PROFILE = [("decode", 1, 4096), ("decode", 64, 4096), ("prefill", 1, 4096)]


def log(*a):
    print("[%6.1fs]" % (time.time() - T0), *a, flush=True)


def rand(*shape, scale=0.02):
    return (torch.randn(*shape, device="cuda", dtype=torch.bfloat16) * scale)


class Model:
    """Random weights of `layers` layers plus embedding, final norm, lm_head."""

    def __init__(self, c, tp=1, rank=0):
        c = dict(c)
        for k in ("heads", "kv_heads", "inter", "vocab"):
            if c[k] % tp:
                raise SystemExit("%s = %d does not divide by --tp %d" % (k, c[k], tp))
        self.tp, self.rank = tp, rank
        self.vocab0 = rank * (c["vocab"] // tp)   # this rank's first vocabulary row
        c.update(heads=c["heads"] // tp, kv_heads=c["kv_heads"] // tp,
                 inter=c["inter"] // tp, vocab=c["vocab"] // tp)
        self.c = c
        h, d = c["hidden"], c["head_dim"]
        qkv = (c["heads"] + 2 * c["kv_heads"]) * d
        self.layers = []
        for _ in range(c["layers"]):
            L = dict(ln1=1 + rand(h), ln2=1 + rand(h),
                     wqkv=rand(qkv, h), wo=rand(h, c["heads"] * d),
                     wgu=rand(2 * c["inter"], h), wd=rand(h, c["inter"]))
            L["bqkv"] = rand(qkv) if c["bias"] else None
            if c["qk_norm"]:
                L["qn"], L["kn"] = 1 + rand(d), 1 + rand(d)
            self.layers.append(L)
        self.embed = rand(c["vocab"], h)
        self.norm = 1 + rand(h)
        self.lm_head = rand(c["vocab"], h)
        inv = 1.0 / (1e6 ** (torch.arange(0, d, 2, device="cuda", dtype=torch.float32) / d))
        t = torch.arange(16384, device="cuda", dtype=torch.float32)
        f = torch.outer(t, inv)
        emb = torch.cat((f, f), dim=-1)
        self.cos, self.sin = emb.cos().to(torch.bfloat16), emb.sin().to(torch.bfloat16)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def label(name, on):
    return record_function(name) if on else _Null()


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def step(m, ids, pos, caches, causal, lab=False):
    """One forward pass of ids [B, S] at positions pos [S] (shared by the
    batch) writing into caches; returns the greedy tokens [B]."""
    c = m.c
    B, S = ids.shape
    H, KV, D, hid = c["heads"], c["kv_heads"], c["head_dim"], c["hidden"]
    with label("embed", lab):
        if m.tp == 1:
            x = F.embedding(ids, m.embed)
        else:   # vocab-parallel: this rank's rows, zeros elsewhere, summed
            local = ids - m.vocab0
            mask = (local >= 0) & (local < c["vocab"])
            x = F.embedding(local.clamp(0, c["vocab"] - 1), m.embed) * mask[..., None]
            dist.all_reduce(x)
    with label("rope_tables", lab):
        cos = m.cos.index_select(0, pos)[None, None]
        sin = m.sin.index_select(0, pos)[None, None]
    n_ctx = caches[0][0].shape[2]
    for L, (kc, vc) in zip(m.layers, caches):
        with label("input_norm", lab):
            h = F.rms_norm(x, (hid,), L["ln1"], c["eps"])
        with label("qkv_proj", lab):
            qkv = F.linear(h, L["wqkv"], L["bqkv"])
        q, k, v = qkv.split([H * D, KV * D, KV * D], dim=-1)
        q, k, v = q.view(B, S, H, D), k.view(B, S, KV, D), v.view(B, S, KV, D)
        if c["qk_norm"]:
            with label("q_norm", lab):
                q = F.rms_norm(q, (D,), L["qn"], c["eps"])
            with label("k_norm", lab):
                k = F.rms_norm(k, (D,), L["kn"], c["eps"])
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        with label("rope", lab):
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        with label("kv_write", lab):
            kc.index_copy_(2, pos, k)
            vc.index_copy_(2, pos, v)
        with label("attention", lab):
            if causal:
                a = F.scaled_dot_product_attention(q, kc[:, :, :S], vc[:, :, :S],
                                                   is_causal=True, enable_gqa=True)
            else:
                a = F.scaled_dot_product_attention(q, kc[:, :, :n_ctx], vc[:, :, :n_ctx],
                                                   enable_gqa=True)
        with label("attn_out_layout", lab):
            a = a.transpose(1, 2).reshape(B, S, H * D)
        with label("o_proj", lab):
            o = F.linear(a, L["wo"])
        if m.tp > 1:
            with label("all_reduce", lab):
                dist.all_reduce(o)
        with label("residual_add", lab):
            x = x + o
        with label("post_norm", lab):
            h = F.rms_norm(x, (hid,), L["ln2"], c["eps"])
        with label("gate_up_proj", lab):
            gu = F.linear(h, L["wgu"])
        g, u = gu.chunk(2, dim=-1)
        with label("silu_mul", lab):
            a = F.silu(g) * u
        with label("down_proj", lab):
            d = F.linear(a, L["wd"])
        if m.tp > 1:
            with label("all_reduce", lab):
                dist.all_reduce(d)
        with label("residual_add", lab):
            x = x + d
    with label("final_norm", lab):
        x = F.rms_norm(x[:, -1], (hid,), m.norm, c["eps"])
    with label("lm_head", lab):
        logits = F.linear(x, m.lm_head)
    if m.tp > 1:
        with label("all_gather", lab):
            parts = torch.empty((m.tp,) + tuple(logits.shape), device="cuda",
                                dtype=logits.dtype)
            dist.all_gather_into_tensor(parts, logits.contiguous())
            logits = parts.permute(1, 0, 2).reshape(logits.shape[0], -1)
    with label("sample", lab):
        return logits.argmax(dim=-1)


def make_case(m, phase, B, ctx):
    """Inputs and caches of one case; returns (fn, q_len)."""
    c = m.c
    if phase == "decode":
        S, cache_len, pos0, causal = 1, ctx, ctx - 1, False
    else:
        S, cache_len, pos0, causal = ctx, ctx, 0, True
    ids = torch.randint(0, c["vocab"], (B, S), device="cuda")
    pos = torch.arange(pos0, pos0 + S, device="cuda")
    caches = []
    for _ in m.layers:
        kc = torch.empty(B, c["kv_heads"], cache_len, c["head_dim"], device="cuda",
                         dtype=torch.bfloat16).normal_(0, 1)
        caches.append((kc, torch.empty_like(kc).normal_(0, 1)))
    return (lambda lab=False: step(m, ids, pos, caches, causal, lab)), S


def capture(fn):
    for _ in range(2):          # warm up: cuBLAS handles, workspaces, heuristics
        fn()
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    g.replay()
    torch.cuda.synchronize()
    return g


def time_graph(g, target_s=0.4, min_reps=10, max_reps=200):
    t = time.perf_counter()
    g.replay()
    torch.cuda.synchronize()
    est = time.perf_counter() - t
    reps = int(max(min_reps, min(max_reps, target_s / max(est, 1e-6))))
    if dist.is_available() and dist.is_initialized():   # every rank replays as often
        r = torch.tensor([reps], device="cuda")
        dist.all_reduce(r, op=dist.ReduceOp.MAX)
        reps = int(r.item())
    walls, evs = [], []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t = time.perf_counter()
        a.record()
        g.replay()
        b.record()
        torch.cuda.synchronize()
        walls.append(time.perf_counter() - t)
        evs.append((a, b))
    ev = [a.elapsed_time(b) * 1e3 for a, b in evs]
    return statistics.median(walls) * 1e6, statistics.median(ev), reps


def kernel_rows(trace_path):
    """(seq, label, name, dur_us) for each GPU kernel of a Chrome trace, the
    label being the innermost record_function range around its launch."""
    with open(trace_path) as f:
        tr = json.load(f)
    ev = tr.get("traceEvents", tr) if isinstance(tr, dict) else tr
    ranges = [(e["ts"], e["ts"] + e.get("dur", 0), e["name"]) for e in ev
              if e.get("cat") == "user_annotation" and e.get("ph") == "X"]
    launch = {}
    for e in ev:
        # runtime launches, and the driver's (cuBLASLt, cuDNN use cuLaunchKernel)
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and \
                "correlation" in e.get("args", {}):
            launch[e["args"]["correlation"]] = e["ts"]
    kern = sorted((e for e in ev if e.get("cat") == "kernel" and e.get("ph") == "X"),
                  key=lambda e: e["ts"])
    out = []
    for i, e in enumerate(kern):
        ts = launch.get(e.get("args", {}).get("correlation"))
        lab = ""
        if ts is not None:
            best = None
            for a, b, n in ranges:
                if a <= ts <= b and (best is None or b - a < best[0]):
                    best = (b - a, n)
            lab = best[1] if best else ""
        out.append((i, lab, e["name"], e.get("dur", 0)))
    return out


def profile_case(fn, g, tag, outdir, kw, meta):
    paths = []
    for source in ("eager", "graph"):
        path = os.path.join(outdir, "trace-%s-%s.json" % (tag, source))
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            if source == "eager":
                fn(True)
            else:
                g.replay()
            torch.cuda.synchronize()
        p.export_chrome_trace(path)
        for r in kernel_rows(path):
            kw.writerow(list(meta) + [source] + list(r))
        paths.append(path)
    return paths


def environment():
    env = {"date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    p = torch.cuda.get_device_properties(0)
    env.update(gpu=torch.cuda.get_device_name(0), sms=p.multi_processor_count,
               mem_GiB=round(p.total_memory / 2**30, 1), torch=torch.__version__,
               cuda=torch.version.cuda, cudnn=str(torch.backends.cudnn.version()),
               python=sys.version.split()[0])
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,clocks.max.sm,clocks.max.mem,"
                            "driver_version,power.limit", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30)
        env["nvidia_smi"] = q.stdout.strip()
    except Exception as e:  # noqa: BLE001
        env["nvidia_smi"] = "error: %s" % e
    return env


KERNEL_HEADER = ["model", "phase", "batch", "ctx", "source", "seq", "label", "name",
                 "dur_us"]


def relabel(tarball, outdir):
    """kernels.csv and kernel_summary.csv from the traces of a run."""
    import collections
    import re
    import tempfile
    os.makedirs(outdir, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(tarball) as tf:
            tf.extractall(tmp)
        for fn in sorted(os.listdir(tmp)):
            m = re.match(r"trace-(.+)-(decode|prefill)-b(\d+)-c(\d+)-(eager|graph)\.json$", fn)
            if m is None:
                continue
            meta = [m.group(1), m.group(2), m.group(3), m.group(4), m.group(5)]
            rows += [meta + list(r) for r in kernel_rows(os.path.join(tmp, fn))]
    with open(os.path.join(outdir, "kernels.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(KERNEL_HEADER)
        w.writerows(rows)
    summary = collections.OrderedDict()
    for r in rows:       # graph replays carry no labels: one row per step
        a = summary.setdefault(tuple(r[:5]) + (r[6] or "(graph)",), [0, 0.0])
        a[0] += 1
        a[1] += float(r[8])
    with open(os.path.join(outdir, "kernel_summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "phase", "batch", "ctx", "source", "label", "kernels", "gpu_us"])
        for k, (n, us) in summary.items():
            w.writerow(list(k) + [n, "%.1f" % us])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "out"))
    ap.add_argument("--relabel", metavar="TARBALL")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--budget-s", type=float, default=500.0)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--tp", type=int, default=1,
                    help="tensor-parallel degree (run under torchrun with as many "
                         "processes)")
    ap.add_argument("--cases", metavar="PHASE:B:CTX,...",
                    help="time and profile only these cases")
    args = ap.parse_args()
    if args.relabel:
        return relabel(args.relabel, args.out)
    rank = 0
    if args.tp > 1:
        os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # multicast stays off
        dist.init_process_group("nccl")
        rank = dist.get_rank()
        if dist.get_world_size() != args.tp:
            raise SystemExit("--tp %d under %d processes" % (args.tp,
                                                            dist.get_world_size()))
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    if rank != 0:                       # rank 0 writes the files
        args.out = os.path.join(args.out, ".rank%d" % rank)
    os.makedirs(args.out, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    env = environment()
    log(json.dumps(env))
    decode, prefill, prof = DECODE, PREFILL, PROFILE
    if args.quick:
        decode, prefill, prof = [(2, 256)], [(1, 256)], [("decode", 2, 256)]
    if args.cases:
        prof = [(ph, int(b), int(c)) for ph, b, c in
                (x.split(":") for x in args.cases.split(","))]
        decode = [(b, c) for ph, b, c in prof if ph == "decode"]
        prefill = [(b, c) for ph, b, c in prof if ph == "prefill"]
    if args.tp > 1:
        prof = []
    sf = open(os.path.join(args.out, "steps.csv"), "w", newline="")
    sw = csv.writer(sf)
    tp_col = ["tp"] if args.tp > 1 else []
    sw.writerow(["model", "layers", "phase", "batch", "ctx", "q_len", "measured_us",
                 "event_us", "reps"] + tp_col)
    kf = open(os.path.join(args.out, "kernels.csv"), "w", newline="")
    kw = csv.writer(kf)
    kw.writerow(KERNEL_HEADER)
    traces, failures = [], []
    for name in args.models.split(","):
        c = dict(MODELS[name])
        if args.quick:
            c["layers"] = 2
        t = time.time()
        m = Model(c, args.tp, rank)
        log("%s: %d layers built in %.1f s, %.1f GB allocated" %
            (name, c["layers"], time.time() - t, torch.cuda.memory_allocated() / 1e9))
        for phase, grid in (("decode", decode), ("prefill", prefill)):
            for B, ctx in grid:
                over = time.time() - T0 > args.budget_s
                if args.tp > 1:     # every rank skips together
                    flag = torch.tensor([int(over)], device="cuda")
                    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
                    over = bool(flag.item())
                if over:
                    failures.append("%s %s %d %d: over budget, skipped" % (name, phase, B, ctx))
                    continue
                try:
                    fn, S = make_case(m, phase, B, ctx)
                    g = capture(fn)
                    us, ev_us, reps = time_graph(g)
                    sw.writerow([name, c["layers"], phase, B, ctx, S, "%.1f" % us,
                                 "%.1f" % ev_us, reps] + ([args.tp] if args.tp > 1 else []))
                    sf.flush()
                    log("%s %s B=%d ctx=%d: %.1f us (events %.1f, %d reps)" %
                        (name, phase, B, ctx, us, ev_us, reps))
                    if (phase, B, ctx) in prof:
                        tag = "%s-%s-b%d-c%d" % (name, phase, B, ctx)
                        traces += profile_case(fn, g, tag, args.out, kw,
                                               (name, phase, B, ctx))
                        kf.flush()
                    del g, fn
                except Exception as e:  # noqa: BLE001
                    traceback.print_exc()
                    failures.append("%s %s %d %d: %s" % (name, phase, B, ctx,
                                                         str(e).splitlines()[0][:200]))
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
        del m
        torch.cuda.empty_cache()
    sf.close()
    kf.close()
    with tarfile.open(os.path.join(args.out, "traces.tar.gz"), "w:gz") as tf:
        for p in traces:
            tf.add(p, arcname=os.path.basename(p))
    for p in traces:
        os.remove(p)
    env["failures"] = failures
    env["total_s"] = round(time.time() - T0, 1)
    with open(os.path.join(args.out, "env.json"), "w") as f:
        json.dump(env, f, indent=2)
    log("done; failures: %s" % failures)
    if args.tp > 1:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
