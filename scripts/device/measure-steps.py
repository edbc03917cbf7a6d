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

The serving-like step (--serve nccl,oneshot,twoshot): the same layers, the
same shards, but each layer's work between two all-reduces is one
torch.compile'd (Inductor, default mode) function, as a serving engine's
compiled graph runs it: [residual add +] input norm, qkv, (q/k norm), RoPE,
KV write, attention, o; then residual add, post norm, gate/up, SiLU*mul,
down.  Inductor fuses the element-wise work into Triton kernels and calls
cuBLAS for the projections and SDPA for attention.  The tensor-parallel
all-reduce runs outside the compiled code: NCCL (`nccl`), or torch
symmetric memory's one-shot (`oneshot`: torch.ops.symm_mem.
one_shot_all_reduce) or two-shot (`twoshot`: two_shot_all_reduce_) kernel
on a symmetric buffer the activations are copied into (as vLLM's
SymmMemCommunicator does), all captured in the step's CUDA graph.  Decode
cases (SERVE_DECODE) and, with --serve-phases prefill, prefills of B
prompts of P tokens into an empty cache (SERVE_PREFILL; causal SDPA), one
row per case and all-reduce in serve-steps.csv (model,layers,phase,batch,
ctx,q_len,measured_us,event_us,reps,tp,allreduce); at TP 1 only `none`.  The symmetric kernels are checked
against NCCL's sum once before timing (env.json: symm_check).

Run on the device machine:
    python3 scripts/device/measure-steps.py --out "$OUT"
    torchrun --nproc_per_node=2 scripts/device/measure-steps.py --tp 2 --out "$OUT"
    torchrun --nproc_per_node=4 scripts/device/measure-steps.py --tp 4 \
        --serve nccl,oneshot,twoshot --trace-tp decode:16:4096 --out "$OUT"
    python3 scripts/device/measure-steps.py --serve none --serve-only \
        --serve-phases prefill --trace-tp prefill:1:2048 --out "$OUT"
Options: --quick (tiny grid, for checking the script), --budget-s N,
--serve-only (skip the torch reference grid), --serve-phases decode,prefill,
--trace-tp PHASE:B:CTX,... (profile those cases of the serving-like grid,
and at TP > 1 of the reference grid, on every rank; rank 0's trace is kept).

Without a GPU, `measure-steps.py --relabel traces.tar.gz --out DIR` rebuilds
kernels.csv from the traces and writes kernel_summary.csv (per profiled
step and label: kernels, summed GPU time), as
tests/data/calibration/h200-torch/ holds them, and kernel_names.csv (per
profiled step, label and kernel name: launches, summed GPU time).
"""
import argparse
import csv
import json
import os
import statistics
import tarfile
import time
import traceback

from measure_common import T0, capture_graph, gpu_environment, log, nvidia_smi

try:                # --relabel needs no GPU: only the standard library
    import torch
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile

    from torch_ref import Model, Serve, make_case, symm_check
except ImportError:
    torch = None

# Hugging Face config.json values of the three models.
MODELS = {
    "qwen2.5-7b": dict(hidden=3584, inter=18944, heads=28, kv_heads=4, head_dim=128,
                       vocab=152064, bias=True, qk_norm=False, eps=1e-6, layers=28),
    "qwen3-32b": dict(hidden=5120, inter=25600, heads=64, kv_heads=8, head_dim=128,
                      vocab=151936, bias=False, qk_norm=True, eps=1e-6, layers=16),
    "qwen2.5-72b": dict(hidden=8192, inter=29568, heads=64, kv_heads=8, head_dim=128,
                        vocab=152064, bias=True, qk_norm=False, eps=1e-5, layers=8),
}
DECODE = [(b, c) for b in (1, 4, 16, 64) for c in (1024, 4096, 8192)] + [(256, 1024)]
SERVE_DECODE = [(1, 4096), (4, 4096), (16, 4096), (64, 4096), (256, 1024)]
# serving-like prefill (--serve-phases prefill): B prompts of P tokens, at
# most 8192 tokens a step
SERVE_PREFILL = [(1, 128), (1, 512), (1, 2048), (1, 8192), (4, 256), (4, 2048), (8, 128),
                 (8, 1024)]
PREFILL = [(1, 1024), (1, 2048), (1, 4096), (1, 8192), (4, 1024), (4, 2048), (16, 1024)]
PROFILE = [("decode", 1, 4096), ("decode", 64, 4096), ("prefill", 1, 4096)]


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
    env = gpu_environment()
    env["nvidia_smi"] = nvidia_smi("name,clocks.max.sm,clocks.max.mem,driver_version,"
                                   "power.limit")
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
    names = collections.OrderedDict()
    for r in rows:
        a = names.setdefault(tuple(r[:5]) + (r[6] or "(graph)", r[7]), [0, 0.0])
        a[0] += 1
        a[1] += float(r[8])
    for fn, table, cols in (("kernel_summary.csv", summary, ["label"]),
                            ("kernel_names.csv", names, ["label", "name"])):
        with open(os.path.join(outdir, fn), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["model", "phase", "batch", "ctx", "source"] + cols +
                       ["kernels", "gpu_us"])
            for k, (n, us) in table.items():
                w.writerow(list(k) + [n, "%.1f" % us])


def over_budget(args, what, failures):
    """True (on every rank alike) once the run is past --budget-s; the
    skipped case goes into failures."""
    over = time.time() - T0 > args.budget_s
    if args.tp > 1:     # every rank skips together
        flag = torch.tensor([int(over)], device="cuda")
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        over = bool(flag.item())
    if over:
        failures.append("%s: over budget, skipped" % what)
    return over


def run_case(make, record, what, trace, out, kw, kf, traces, failures):
    """Builds a case (make() -> (fn, q_len)), captures and times its graph,
    record(q_len, us, event_us, reps) writes the row; trace = (tag, meta)
    profiles it; an exception is logged and goes into failures."""
    try:
        t = time.time()
        fn, S = make()
        g = capture_graph(fn, warm=2)
        t_cap = time.time() - t
        us, ev_us, reps = time_graph(g)
        record(S, us, ev_us, reps)
        log("%s: %.1f us (events %.1f, %d reps; build+capture %.1f s)" %
            (what, us, ev_us, reps, t_cap))
        if trace is not None:
            traces += profile_case(fn, g, trace[0], out, kw, trace[1])
            kf.flush()
        del g, fn
    except Exception as e:  # noqa: BLE001
        traceback.print_exc()
        failures.append("%s: %s" % (what, str(e).splitlines()[0][:200]))
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


def serve_grid(args, rank, kw, kf, traces, failures, env):
    """Times the serving-like step (see the module comment) into
    serve-steps.csv."""
    import torch._dynamo
    torch._dynamo.config.cache_size_limit = 256
    if hasattr(torch._dynamo.config, "accumulated_cache_size_limit"):
        torch._dynamo.config.accumulated_cache_size_limit = 1024
    ars = ["none"] if args.tp == 1 else args.serve.split(",")
    full = {"decode": SERVE_DECODE, "prefill": SERVE_PREFILL}
    grid = [(ph, B, ctx) for ph in args.serve_phases.split(",")
            for B, ctx in ([(1, 256), (2, 256)] if args.quick else full[ph])]
    prof = [(ph, int(b), int(cx)) for ph, b, cx in
            (x.split(":") for x in args.trace_tp.split(","))] if args.trace_tp else []
    f = open(os.path.join(args.out, "serve-steps.csv"), "w", newline="")
    w = csv.writer(f)
    w.writerow(["model", "layers", "phase", "batch", "ctx", "q_len", "measured_us",
                "event_us", "reps", "tp", "allreduce"])
    max_numel = max(b * (cx if ph == "prefill" else 1) for ph, b, cx in grid) * \
        max(MODELS[n]["hidden"] for n in MODELS)
    servers = {}
    checks = {}
    for ar in list(ars):
        try:
            servers[ar] = Serve(ar, max_numel)
            if ar in ("oneshot", "twoshot"):
                checks[ar] = [symm_check(servers[ar], min(k, max_numel)) for k in (3584, 524288)]
                log("symm check %s: %s" % (ar, checks[ar]))
                if max(checks[ar]) > 0.02:
                    raise RuntimeError("symmetric-memory sum differs from NCCL's: %s"
                                       % checks[ar])
        except Exception as e:  # noqa: BLE001 -- every rank fails alike
            traceback.print_exc()
            failures.append("serve %s: %s" % (ar, str(e).splitlines()[0][:200]))
            ars.remove(ar)
    env["symm_check"] = checks
    for name in args.models.split(","):
        c = dict(MODELS[name])
        if args.quick:
            c["layers"] = 2
        m = Model(c, args.tp, rank)
        for ph, B, ctx in grid:
            for ar in ars:
                what = "serve %s %s %s B=%d ctx=%d" % (ar, name, ph, B, ctx)
                if over_budget(args, what, failures):
                    continue

                def record(S, us, ev_us, reps, ph=ph, B=B, ctx=ctx, ar=ar):
                    w.writerow([name, c["layers"], ph, B, ctx, S, "%.1f" % us,
                                "%.1f" % ev_us, reps, args.tp, ar])
                    f.flush()
                trace = None
                if (ph, B, ctx) in prof:
                    trace = ("%s-serve-%s-%s-b%d-c%d" % (name, ar, ph, B, ctx),
                             (name + "/serve-" + ar, ph, B, ctx))
                run_case(lambda ph=ph, B=B, ctx=ctx, ar=ar: make_case(m, ph, B, ctx, servers[ar]),
                         record, what, trace, args.out, kw, kf, traces, failures)
        del m
        torch.cuda.empty_cache()
    f.close()


def parse_args():
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
    ap.add_argument("--serve", default="",
                    help="also time the serving-like step with these all-reduces "
                         "(nccl,oneshot,twoshot; at TP 1: none)")
    ap.add_argument("--serve-phases", default="decode",
                    help="the serving-like step's phases: decode (SERVE_DECODE), "
                         "prefill (SERVE_PREFILL) or both, comma-separated")
    ap.add_argument("--serve-only", action="store_true",
                    help="skip the torch reference grid")
    ap.add_argument("--trace-tp", metavar="PHASE:B:CTX,...",
                    help="profile these cases of the serving-like grid (every rank; "
                         "at TP > 1 also of the reference grid)")
    return ap.parse_args()


def join_tp(args):
    """At --tp > 1: the process group (NVLink multicast off), this
    process's GPU; returns the rank.  Rank 0 writes the files: the others
    write under --out/.rankR."""
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
    return rank


def cases(args):
    """(decode cases, prefill cases, profiled cases) of the reference grid."""
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
        if args.trace_tp:
            prof = [(ph, int(b), int(cx)) for ph, b, cx in
                    (x.split(":") for x in args.trace_tp.split(","))]
    return decode, prefill, prof


def reference_grid(args, rank, kw, kf, traces, failures):
    """Times the torch reference step of every model and case into
    steps.csv, profiling the cases asked for."""
    decode, prefill, prof = cases(args)
    sf = open(os.path.join(args.out, "steps.csv"), "w", newline="")
    sw = csv.writer(sf)
    tp_col = ["tp"] if args.tp > 1 else []
    sw.writerow(["model", "layers", "phase", "batch", "ctx", "q_len", "measured_us",
                 "event_us", "reps"] + tp_col)
    for name in ([] if args.serve_only else args.models.split(",")):
        c = dict(MODELS[name])
        if args.quick:
            c["layers"] = 2
        t = time.time()
        m = Model(c, args.tp, rank)
        log("%s: %d layers built in %.1f s, %.1f GB allocated" %
            (name, c["layers"], time.time() - t, torch.cuda.memory_allocated() / 1e9))
        for phase, grid in (("decode", decode), ("prefill", prefill)):
            for B, ctx in grid:
                what = "%s %s B=%d ctx=%d" % (name, phase, B, ctx)
                if over_budget(args, what, failures):
                    continue

                def record(S, us, ev_us, reps, phase=phase, B=B, ctx=ctx):
                    sw.writerow([name, c["layers"], phase, B, ctx, S, "%.1f" % us,
                                 "%.1f" % ev_us, reps] + ([args.tp] if args.tp > 1 else []))
                    sf.flush()
                trace = None
                if (phase, B, ctx) in prof:
                    trace = ("%s-%s-b%d-c%d" % (name, phase, B, ctx), (name, phase, B, ctx))
                run_case(lambda phase=phase, B=B, ctx=ctx: make_case(m, phase, B, ctx),
                         record, what, trace, args.out, kw, kf, traces, failures)
        del m
        torch.cuda.empty_cache()
    sf.close()


def main():
    args = parse_args()
    if args.relabel:
        return relabel(args.relabel, args.out)
    rank = join_tp(args)
    os.makedirs(args.out, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    env = environment()
    log(json.dumps(env))
    kf = open(os.path.join(args.out, "kernels.csv"), "w", newline="")
    kw = csv.writer(kf)
    kw.writerow(KERNEL_HEADER)
    traces, failures = [], []
    reference_grid(args, rank, kw, kf, traces, failures)
    if args.serve:
        serve_grid(args, rank, kw, kf, traces, failures, env)
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
