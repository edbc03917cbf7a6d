#!/usr/bin/env python3
"""Measures real NCCL collectives (and torch symmetric-memory all-reduce) on
the GPUs of one host, one process per GPU, so the emulator's collective model
can be compared against a machine it was never fit to.

Run on the device machine (2 or more GPUs, e.g. kind nvidia-h100-x2 or -x4):

    PYTHONUNBUFFERED=1 python3 scripts/device/measure-coll-h100.py --driver --out "$OUT"
    PYTHONUNBUFFERED=1 python3 scripts/device/measure-coll-h100.py --driver --gpus 2,3,4 \
        --max-log2 32 --dtypes bf16 --forced-at 4 --out "$OUT"

--gpus N1,N2,...: the passes run once per GPU count, on the first N GPUs
(CUDA_VISIBLE_DEVICES=0..N-1); colls.csv and symm.csv gain a `gpus` column
(absent with the default, all visible GPUs: the 2-GPU files' layout).
--forced-at N: the forced NCCL_ALGO x NCCL_PROTO passes at that count only.
Without a GPU, `--parse-tuner nccl-debug-logs.tar.gz --out DIR` writes
DIR/nccl-tuner-choice.csv from rank 0's TUNING lines.

The driver (--driver) runs, one after another, each in a fresh set of
processes because NCCL reads its environment when a communicator is made:
  1. the default-tuner pass: all_reduce, all_gather_into_tensor,
     reduce_scatter_tensor, broadcast, reduce (root 0), send/recv (0 -> 1),
     all_to_all_single,
     bf16 and float32, 8 B .. 1 GiB in powers of two;
  2. the symmetric-memory pass: torch.ops.symm_mem one-shot / two-shot
     all-reduce, bf16, 1 KiB .. 64 MiB (only variants that use no multicast);
  3. a control pass: bf16 all_reduce with NCCL_DEBUG unset (what the
     per-call TUNING log lines cost), algo label "default-nodebug";
  4. all_reduce with NCCL_ALGO in {Ring, Tree} x NCCL_PROTO in {LL, LL128,
     Simple}, bf16 and float32.
Every NCCL pass also times each bf16 op except send/recv captured in a CUDA
graph (op "<op>_cudagraph": N calls in one graph, one replay timed), which
takes the host's per-call launch cost (torch + NCCL enqueue) out, like
nccl-tests -G; the symm pass does the same ("<impl>_cudagraph").
Each worker spawns one process per visible GPU (torch.multiprocessing).

Sizes are nccl-tests' message sizes: all_reduce / broadcast / send-recv: one
rank's buffer; all_gather: the OUTPUT total; reduce_scatter: the INPUT total;
alltoall: one rank's whole send buffer; at a GPU count that does not divide
the size (3), all_gather / reduce_scatter / alltoall round the per-rank
count down, as nccl-tests does, and size_bytes is the bytes moved.  Timing: 5 warm-up calls, then N calls
(N = 20 for >= 64 MiB, else 100) between two CUDA events on the current
stream, eager launches, elapsed / N taken as the maximum over ranks; that is
done 3 times (trials) and time_us is the median of the 3.  algbw = size / time; busbw as nccl-tests: all_reduce
algbw*2(n-1)/n, all_gather / reduce_scatter / alltoall algbw*(n-1)/n,
broadcast / sendrecv algbw.

NVLink multicast (NVLS) stays OFF: NCCL_NVLS_ENABLE=0,
TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NVSHMEM_DISABLE_NVLS=1 are forced in
this process's environment before torch is imported and are inherited by
every child.  No multimem_* op is called.

Outputs under --out: colls.csv, symm.csv, env.json, topo.txt, clocks.txt,
nccl-debug-logs.tar.gz (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,TUNING).
"""
import os

# --- never NVLink multicast: set before torch / NCCL are loaded -------------
os.environ["NCCL_NVLS_ENABLE"] = "0"
os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
os.environ["NVSHMEM_DISABLE_NVLS"] = "1"

import argparse
import csv
import datetime
import json
import signal
import subprocess
import sys
import tarfile
import time
import traceback

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

COLL_FIELDS = ["op", "dtype", "algo", "proto", "size_bytes", "count", "time_us",
               "algbw_gbps", "busbw_gbps", "iters"]
SYMM_FIELDS = ["impl", "dtype", "size_bytes", "time_us", "algbw_gbps",
               "busbw_gbps", "iters"]
ALL_OPS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
           "sendrecv", "alltoall"]


def iters_for(size):
    return 20 if size >= 64 * MiB else 100


def bus_factor(op, n):
    if op == "all_reduce":
        return 2.0 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "alltoall"):
        return (n - 1) / n
    return 1.0  # broadcast, reduce, sendrecv


def append_rows(path, fields, rows):
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        if new:
            w.writeheader()
        for r in rows:
            w.writerow(r)


# =============================================================================
# worker side (one process per GPU)
# =============================================================================

def _max_over_ranks(us, cpu_group):
    import torch
    import torch.distributed as dist
    t = torch.tensor([us], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=cpu_group)
    return float(t.item())


TRIALS = 3


def _timed(fn, iters, dev, cpu_group, warm=5, trials=TRIALS):
    """Mean GPU time per call in microseconds over `iters` back-to-back eager
    calls between two CUDA events; max over ranks; median of `trials` such
    means (one host hiccup inflates one trial's mean, not the median)."""
    for _ in range(warm):
        fn()

    def calls():
        for _ in range(iters):
            fn()
    return _median_trials(calls, iters, dev, cpu_group, trials)


def _median_trials(run, iters, dev, cpu_group, trials):
    """Median over `trials` of run()'s GPU time between two CUDA events per
    call (divided by `iters`), each trial the maximum over ranks."""
    import statistics

    import torch
    import torch.distributed as dist
    res = []
    for _ in range(trials):
        torch.cuda.synchronize(dev)
        dist.barrier(group=cpu_group)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        res.append(_max_over_ranks(start.elapsed_time(end) * 1e3 / iters, cpu_group))
    return statistics.median(res)


def _timed_graph(fn, iters, dev, cpu_group, trials=TRIALS):
    """Like _timed, but the `iters` calls are captured in one CUDA graph and
    one replay is timed: no per-call host launch cost (nccl-tests -G)."""
    import torch
    import torch.distributed as dist
    s = torch.cuda.Stream(device=dev)
    s.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream(dev).wait_stream(s)
    torch.cuda.synchronize(dev)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(iters):
            fn()
    torch.cuda.synchronize(dev)
    dist.barrier(group=cpu_group)
    g.replay()  # warm
    t = _median_trials(g.replay, iters, dev, cpu_group, trials)
    del g
    torch.cuda.synchronize(dev)
    return t


def _dtype(name):
    import torch
    return {"bf16": torch.bfloat16, "fp32": torch.float32,
            "fp16": torch.float16}[name]


def _nccl_pass(rank, n, dev, cpu_group, args):
    import torch
    import torch.distributed as dist
    rows = []
    graph_failed = set()
    gcol = {"gpus": n} if args.gpus_col else {}
    sizes = [1 << k for k in range(args.min_log2, args.max_log2 + 1)]
    for op in args.ops.split(","):
        for dname in args.dtypes.split(","):
            dt = _dtype(dname)
            es = torch.tensor([], dtype=dt).element_size()
            for size in sizes:
                numel = size // es
                if op in ("all_gather", "reduce_scatter", "alltoall"):
                    numel -= numel % n   # nccl-tests: count rounded down to n
                if numel < n:
                    continue
                size = numel * es
                it = iters_for(size)
                bufs = {}
                if op == "all_reduce":
                    bufs["x"] = torch.ones(numel, dtype=dt, device=dev)

                    def fn(b=bufs):
                        dist.all_reduce(b["x"], op=dist.ReduceOp.SUM)
                    # one correctness check before timing
                    fn()
                    torch.cuda.synchronize(dev)
                    v0, v1 = float(bufs["x"][0]), float(bufs["x"][-1])
                    if v0 != n or v1 != n:
                        print(f"[rank {rank}] CHECK FAILED all_reduce {dname} {size}: {v0} {v1}",
                              flush=True)
                elif op == "all_gather":
                    bufs["o"] = torch.empty(numel, dtype=dt, device=dev)
                    bufs["i"] = torch.ones(numel // n, dtype=dt, device=dev)

                    def fn(b=bufs):
                        dist.all_gather_into_tensor(b["o"], b["i"])
                elif op == "reduce_scatter":
                    bufs["i"] = torch.ones(numel, dtype=dt, device=dev)
                    bufs["o"] = torch.empty(numel // n, dtype=dt, device=dev)

                    def fn(b=bufs):
                        dist.reduce_scatter_tensor(b["o"], b["i"], op=dist.ReduceOp.SUM)
                elif op == "broadcast":
                    bufs["x"] = torch.ones(numel, dtype=dt, device=dev)

                    def fn(b=bufs):
                        dist.broadcast(b["x"], src=0)
                elif op == "reduce":
                    bufs["x"] = torch.ones(numel, dtype=dt, device=dev)

                    def fn(b=bufs):
                        dist.reduce(b["x"], dst=0, op=dist.ReduceOp.SUM)
                elif op == "sendrecv":
                    bufs["x"] = torch.ones(numel, dtype=dt, device=dev)

                    def fn(b=bufs):
                        if rank == 0:
                            dist.send(b["x"], dst=1)
                        elif rank == 1:
                            dist.recv(b["x"], src=0)
                elif op == "alltoall":
                    bufs["i"] = torch.ones(numel, dtype=dt, device=dev)
                    bufs["o"] = torch.empty(numel, dtype=dt, device=dev)

                    def fn(b=bufs):
                        dist.all_to_all_single(b["o"], b["i"])
                else:
                    raise ValueError(op)
                timings = [(op, _timed(fn, it, dev, cpu_group))]
                gkey = (op, dname)
                if (args.graph and dname == "bf16" and op != "sendrecv"
                        and gkey not in graph_failed):
                    try:
                        timings.append((op + "_cudagraph",
                                        _timed_graph(fn, it, dev, cpu_group)))
                    except Exception as e:  # noqa: BLE001
                        graph_failed.add(gkey)
                        if rank == 0:
                            print(f"graph {op} failed at {size} B: {e!r}", flush=True)
                for name, us in timings:
                    algbw = size / (us * 1e-6) / 1e9
                    rows.append({**gcol, "op": name, "dtype": dname, "algo": args.algo_label,
                                 "proto": args.proto_label, "size_bytes": size,
                                 "count": numel, "time_us": f"{us:.3f}",
                                 "algbw_gbps": f"{algbw:.3f}",
                                 "busbw_gbps": f"{algbw * bus_factor(op, n):.3f}",
                                 "iters": it})
                    if rank == 0:
                        print(f"{name:24s} {dname} {args.algo_label}/{args.proto_label} "
                              f"{size:>11d} B {us:10.2f} us  busbw "
                              f"{algbw * bus_factor(op, n):7.2f} GB/s", flush=True)
                del bufs, fn
            torch.cuda.empty_cache()
            if rank == 0:  # per (op, dtype), so a later crash keeps what ran
                append_rows(os.path.join(args.out, "colls.csv"),
                            list(gcol) + COLL_FIELDS, rows)
            rows = []


def _symm_pass(rank, n, dev, cpu_group, args):
    import torch
    import torch.distributed as dist
    info = {}
    try:
        import torch.distributed._symmetric_memory as symm_mem
    except Exception as e:  # noqa: BLE001
        info["symm_mem_import_error"] = repr(e)
        symm_mem = None
    ops_ns = getattr(torch.ops, "symm_mem", None)
    avail = {}
    for name in ["one_shot_all_reduce", "one_shot_all_reduce_out",
                 "one_shot_all_reduce_copy", "two_shot_all_reduce_",
                 "two_shot_all_reduce_out", "multimem_all_reduce_",
                 "multimem_one_shot_all_reduce"]:
        try:
            op = getattr(ops_ns, name)
            avail[name] = str(op.default._schema)
        except Exception as e:  # noqa: BLE001
            avail[name] = None
    info["symm_mem_ops"] = avail
    if symm_mem is not None:
        info["symm_mem_file"] = getattr(symm_mem, "__file__", None)
        for getter in ("get_backend",):
            if hasattr(symm_mem, getter):
                try:
                    info["symm_mem_backend"] = str(getattr(symm_mem, getter)(dev))
                except Exception as e:  # noqa: BLE001
                    info["symm_mem_backend_error"] = repr(e)
    group = dist.group.WORLD
    gname = group.group_name
    rows = []
    if symm_mem is None or avail["one_shot_all_reduce"] is None:
        info["skipped"] = "symm_mem ops not available"
    else:
        if hasattr(symm_mem, "enable_symm_mem_for_group"):
            try:
                symm_mem.enable_symm_mem_for_group(gname)
            except Exception as e:  # noqa: BLE001
                info["enable_symm_mem_for_group_error"] = repr(e)

        def alloc(numel, dt):
            if hasattr(symm_mem, "empty"):
                return symm_mem.empty(numel, dtype=dt, device=dev)
            return symm_mem._SymmetricMemory.empty_strided_p2p(
                (numel,), (1,), dt, dev, gname)

        dt = torch.bfloat16
        sizes = [1 << k for k in range(10, 27)]  # 1 KiB .. 64 MiB
        impl_errors = {}
        for size in sizes:
            numel = size // 2
            it = iters_for(size)
            try:
                buf = alloc(numel, dt)
                hdl = symm_mem.rendezvous(buf, gname)
                if size == sizes[0]:
                    for attr in ("multicast_ptr",):
                        try:
                            v = getattr(hdl, attr)
                            info["handle_" + attr] = str(v() if callable(v) else v)
                        except Exception as e:  # noqa: BLE001
                            info["handle_" + attr] = "n/a: " + repr(e)
            except Exception as e:  # noqa: BLE001
                impl_errors.setdefault("alloc/rendezvous", repr(e))
                if rank == 0:
                    traceback.print_exc()
                break
            local = torch.ones(numel, dtype=dt, device=dev)
            out = torch.empty(numel, dtype=dt, device=dev)
            variants = []
            if avail["one_shot_all_reduce"]:
                variants.append(("one_shot", lambda: torch.ops.symm_mem.one_shot_all_reduce(
                    buf, "sum", gname)))
            if avail["one_shot_all_reduce_out"]:
                variants.append(("one_shot_out", lambda: torch.ops.symm_mem.one_shot_all_reduce_out(
                    buf, "sum", gname, out)))
            if avail["one_shot_all_reduce_copy"]:
                variants.append(("one_shot_copy", lambda: torch.ops.symm_mem.one_shot_all_reduce_copy(
                    buf, local, "sum", gname)))
            if avail["two_shot_all_reduce_"]:
                variants.append(("two_shot_inplace", lambda: torch.ops.symm_mem.two_shot_all_reduce_(
                    buf, "sum", gname)))
            if avail["two_shot_all_reduce_out"]:
                variants.append(("two_shot_out", lambda: torch.ops.symm_mem.two_shot_all_reduce_out(
                    buf, "sum", gname, out)))
            for impl, fn in variants:
                if impl in impl_errors:
                    continue
                try:
                    # correctness once: buffer of ones -> n everywhere
                    buf.fill_(1)
                    torch.cuda.synchronize(dev)
                    dist.barrier(group=cpu_group)
                    r = fn()
                    torch.cuda.synchronize(dev)
                    res = r if isinstance(r, torch.Tensor) else buf
                    if impl.endswith("_out"):
                        res = out
                    elif impl == "two_shot_inplace":
                        res = buf
                    v0, v1 = float(res[0]), float(res[-1])
                    if v0 != n or v1 != n:
                        print(f"[rank {rank}] CHECK FAILED {impl} {size}: {v0} {v1}", flush=True)
                    buf.fill_(0)  # keep sums finite during timing
                    torch.cuda.synchronize(dev)
                    timings = [(impl, _timed(fn, it, dev, cpu_group))]
                except Exception as e:  # noqa: BLE001
                    impl_errors[impl] = f"at {size} B: {e!r}"
                    if rank == 0:
                        print(f"symm {impl} failed at {size} B: {e!r}", flush=True)
                    continue
                gimpl = impl + "_cudagraph"
                if gimpl not in impl_errors:
                    try:
                        timings.append((gimpl, _timed_graph(fn, it, dev, cpu_group)))
                    except Exception as e:  # noqa: BLE001
                        impl_errors[gimpl] = f"at {size} B: {e!r}"
                        if rank == 0:
                            print(f"symm {gimpl} failed at {size} B: {e!r}", flush=True)
                for name, us in timings:
                    algbw = size / (us * 1e-6) / 1e9
                    rows.append({**({"gpus": n} if args.gpus_col else {}),
                                 "impl": name, "dtype": "bf16", "size_bytes": size,
                                 "time_us": f"{us:.3f}", "algbw_gbps": f"{algbw:.3f}",
                                 "busbw_gbps": f"{algbw * bus_factor('all_reduce', n):.3f}",
                                 "iters": it})
                    if rank == 0:
                        print(f"symm {name:26s} {size:>10d} B {us:10.2f} us  busbw "
                              f"{algbw * bus_factor('all_reduce', n):7.2f} GB/s", flush=True)
            del buf, hdl, local, out, variants
        info["impl_errors"] = impl_errors
    if rank == 0:
        if rows:
            append_rows(os.path.join(args.out, "symm.csv"),
                        (["gpus"] if args.gpus_col else []) + SYMM_FIELDS, rows)
        with open(os.path.join(args.out, "env.symm.%d.json" % n), "w") as f:
            json.dump(info, f, indent=1)


def _worker(rank, n, args):
    import torch
    import torch.distributed as dist
    os.environ["RANK"] = str(rank)
    os.environ["LOCAL_RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = str(n)
    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    dist.init_process_group("nccl", rank=rank, world_size=n, device_id=dev,
                            timeout=datetime.timedelta(seconds=120))
    cpu_group = dist.new_group(backend="gloo")
    try:
        if args.mode == "nccl":
            _nccl_pass(rank, n, dev, cpu_group, args)
        elif args.mode == "symm":
            _symm_pass(rank, n, dev, cpu_group, args)
        if rank == 0 and args.mode == "nccl" and args.env_json:
            env = {
                "torch": torch.__version__,
                "cuda_runtime": torch.version.cuda,
                "nccl": ".".join(map(str, torch.cuda.nccl.version()))
                if isinstance(torch.cuda.nccl.version(), tuple)
                else str(torch.cuda.nccl.version()),
                "gpus": [],
            }
            for i in range(torch.cuda.device_count()):
                p = torch.cuda.get_device_properties(i)
                env["gpus"].append({"index": i, "name": p.name,
                                    "total_memory": p.total_memory,
                                    "sm_count": p.multi_processor_count,
                                    "cc": f"{p.major}.{p.minor}"})
            with open(os.path.join(args.out, "env.torch.json"), "w") as f:
                json.dump(env, f, indent=1)
        dist.barrier(group=cpu_group)
    finally:
        dist.destroy_process_group()


def worker_main(args):
    import torch
    import torch.multiprocessing as mp
    n = torch.cuda.device_count()
    if n < 2:
        sys.exit(f"need >= 2 GPUs, found {n}")
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    mp.spawn(_worker, args=(n, args), nprocs=n, join=True)


# =============================================================================
# driver side
# =============================================================================

def sh(cmd):
    try:
        r = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60)
        return f"$ {cmd}\n{r.stdout}{r.stderr}\n"
    except Exception as e:  # noqa: BLE001
        return f"$ {cmd}\nFAILED: {e!r}\n"


def driver_main(args):
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    logdir = os.path.join(out, "ncclraw")
    os.makedirs(logdir, exist_ok=True)
    t0 = time.time()
    deadline = t0 + args.deadline

    with open(os.path.join(out, "topo.txt"), "w") as f:
        for c in ("nvidia-smi", "nvidia-smi topo -m", "nvidia-smi nvlink -s",
                  "nvidia-smi -q | head -60", "uname -a", "nproc"):
            f.write(sh(c))
    with open(os.path.join(out, "clocks.txt"), "w") as f:
        f.write("# before the measurements\n" + sh("nvidia-smi -q -d CLOCK"))

    counts = [int(x) for x in args.gpus.split(",")] if args.gpus else [None]
    passes = []
    for n in counts:   # the default and symm passes of every count come first
        sfx = "" if n is None else f".g{n}"
        passes += [dict(tag="default" + sfx, gpus=n, mode="nccl", ops=",".join(ALL_OPS),
                        dtypes=args.dtypes, algo=None, proto=None, timeout=args.pass_timeout),
                   dict(tag="symm" + sfx, gpus=n, mode="symm", ops="", dtypes="bf16",
                        algo=None, proto=None, timeout=120)]
    for n in counts:
        sfx = "" if n is None else f".g{n}"
        # control: same all_reduce with NCCL_DEBUG off, to see what the
        # per-call TUNING log lines cost at small sizes
        passes.append(dict(tag="nodebug" + sfx, gpus=n, mode="nccl", ops="all_reduce",
                           dtypes="bf16", algo=None, proto=None, timeout=60,
                           label_algo="default-nodebug"))
    for n in counts:
        if args.forced_at and n != args.forced_at:
            continue
        sfx = "" if n is None else f".g{n}"
        for algo in ("Ring", "Tree"):
            for proto in ("LL", "LL128", "Simple"):
                passes.append(dict(tag=f"{algo}-{proto}{sfx}", gpus=n, mode="nccl",
                                   ops="all_reduce", dtypes=args.dtypes, algo=algo,
                                   proto=proto, timeout=90))
    status = {}
    for i, p in enumerate(passes):
        left = deadline - time.time()
        if left < 30:
            status[p["tag"]] = "skipped: out of time"
            print(f"== skip {p['tag']}: out of time", flush=True)
            continue
        env = dict(os.environ)
        env.update({"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,TUNING",
                    "NCCL_DEBUG_FILE": os.path.join(logdir, f"nccl-debug.{p['tag']}.%h.%p.log"),
                    "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                    "NVSHMEM_DISABLE_NVLS": "1", "PYTHONUNBUFFERED": "1",
                    "TORCH_NCCL_SHOW_EAGER_INIT_P2P_SERIALIZATION_WARNING": "false"})
        if p["tag"] == "nodebug":
            for k in ("NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"):
                env.pop(k, None)
        env.pop("NCCL_ALGO", None)
        env.pop("NCCL_PROTO", None)
        if p["gpus"] is not None:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in range(p["gpus"]))
        if p["algo"]:
            env["NCCL_ALGO"] = p["algo"]
        if p["proto"]:
            env["NCCL_PROTO"] = p["proto"]
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--mode", p["mode"],
               "--out", out, "--ops", p["ops"], "--dtypes", p["dtypes"],
               "--algo-label", p.get("label_algo") or p["algo"] or "default",
               "--proto-label", p["proto"] or "default",
               "--port", str(29500 + 7 * i), "--min-log2", str(args.min_log2),
               "--max-log2", str(args.max_log2)]
        if i == 0:
            cmd.append("--env-json")
        if p["gpus"] is not None:
            cmd.append("--gpus-col")
        if p["mode"] == "nccl":
            cmd.append("--graph")
        to = min(p["timeout"], left - 10)
        print(f"== pass {p['tag']} (timeout {to:.0f} s) NCCL_ALGO={env.get('NCCL_ALGO')} "
              f"NCCL_PROTO={env.get('NCCL_PROTO')}", flush=True)
        ts = time.time()
        proc = subprocess.Popen(cmd, env=env, start_new_session=True)
        try:
            rc = proc.wait(timeout=to)
            status[p["tag"]] = f"rc={rc} in {time.time() - ts:.1f} s"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            status[p["tag"]] = f"killed after {to:.0f} s timeout"
        print(f"== pass {p['tag']}: {status[p['tag']]}", flush=True)
        if p["tag"].startswith("default"):
            with open(os.path.join(out, "clocks.txt"), "a") as f:
                f.write("\n# after the default-tuner pass\n" + sh("nvidia-smi -q -d CLOCK"))

    # env.json: driver view + worker parts
    env = {"date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "passes": status, "wall_s": round(time.time() - t0, 1),
           "forced_env": {k: os.environ.get(k) for k in
                          ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                           "NVSHMEM_DISABLE_NVLS")},
           "nvidia_smi": sh("nvidia-smi --query-gpu=index,name,driver_version,pci.bus_id,"
                            "memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv"),
           "nvcc": sh("nvcc --version | tail -2"),
           "python": sys.version}
    for part in ["torch"] + sorted(f[4:-5] for f in os.listdir(out)
                                   if f.startswith("env.symm") and f.endswith(".json")):
        pth = os.path.join(out, f"env.{part}.json")
        if os.path.exists(pth):
            with open(pth) as f:
                env[part] = json.load(f)
            os.remove(pth)
    with open(os.path.join(out, "env.json"), "w") as f:
        json.dump(env, f, indent=1)

    with tarfile.open(os.path.join(out, "nccl-debug-logs.tar.gz"), "w:gz") as tf:
        tf.add(logdir, arcname="nccl-debug-logs")
    for fn in os.listdir(logdir):
        os.remove(os.path.join(logdir, fn))
    os.rmdir(logdir)
    parse_tuner(os.path.join(out, "nccl-debug-logs.tar.gz"), out)
    print(json.dumps(status, indent=1), flush=True)


def parse_tuner(tarball, outdir):
    """nccl-tuner-choice.csv from rank 0's NCCL TUNING lines
    ("AllReduce: 8 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}") of
    every pass in a nccl-debug-logs tarball.  AllGather and ReduceScatter log
    one rank's bytes: size_bytes is that times the rank count."""
    import re
    pat = re.compile(r"(\w+): (\d+) Bytes -> Algo (\w+) proto (\w+) "
                     r"channel\{Lo\.\.Hi\}=\{(\d+)\.\.(\d+)\}")
    rows, seen = [], set()
    with tarfile.open(tarball) as tf:
        for m in tf.getmembers():
            if not m.isfile():
                continue
            name = os.path.basename(m.name)   # nccl-debug.<tag>.<host>.<pid>.log
            tag = name[len("nccl-debug."):].rsplit(".", 3)[0] if name.startswith(
                "nccl-debug.") else name
            text = tf.extractfile(m).read().decode("utf-8", "replace")
            nranks = re.search(r"nRanks (\d+)", text)
            if re.search(r"\brank 0 nRanks|Init COMPLETE comm \S+ rank 0 ", text) is None:
                continue   # rank 0's file only
            n = int(nranks.group(1)) if nranks else 0
            for line in text.splitlines():
                t = pat.search(line)
                if t is None:
                    continue
                coll, b = t.group(1), int(t.group(2))
                size = b * n if coll in ("AllGather", "ReduceScatter") else b
                key = (tag, coll, size, t.group(3), t.group(4))
                if key in seen:
                    continue
                seen.add(key)
                rows.append({"pass": tag, "gpus": n, "coll": coll, "size_bytes": size,
                             "nccl_log_bytes": b, "algo": t.group(3), "proto": t.group(4),
                             "channels": int(t.group(6)) - int(t.group(5)) + 1})
    path = os.path.join(outdir, "nccl-tuner-choice.csv")
    if os.path.exists(path):
        os.remove(path)
    append_rows(path, ["pass", "gpus", "coll", "size_bytes", "nccl_log_bytes", "algo",
                       "proto", "channels"], rows)
    return len(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--driver", action="store_true")
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--mode", default="nccl", choices=["nccl", "symm"])
    ap.add_argument("--out", default=os.environ.get("OUT", "out-coll"))
    ap.add_argument("--ops", default=",".join(ALL_OPS))
    ap.add_argument("--dtypes", default="bf16,fp32")
    ap.add_argument("--algo-label", default="default")
    ap.add_argument("--proto-label", default="default")
    ap.add_argument("--port", type=int, default=29500)
    ap.add_argument("--min-log2", type=int, default=3)    # 8 B
    ap.add_argument("--max-log2", type=int, default=30)   # 1 GiB
    ap.add_argument("--deadline", type=float, default=460.0,
                    help="driver: seconds for all passes together")
    ap.add_argument("--env-json", action="store_true")
    ap.add_argument("--gpus", default="",
                    help="driver: GPU counts to run, e.g. 2,3,4 (default: all visible)")
    ap.add_argument("--gpus-col", action="store_true",
                    help="worker: write a gpus column")
    ap.add_argument("--forced-at", type=int, default=0,
                    help="driver: forced NCCL_ALGO/PROTO passes at this GPU count only")
    ap.add_argument("--pass-timeout", type=float, default=200.0,
                    help="driver: seconds for each default-tuner pass")
    ap.add_argument("--parse-tuner", metavar="TARBALL",
                    help="write nccl-tuner-choice.csv from NCCL debug logs, no GPU")
    ap.add_argument("--graph", action="store_true",
                    help="worker: also time bf16 all_reduce captured in a CUDA graph")
    args = ap.parse_args()
    if args.parse_tuner:
        os.makedirs(args.out, exist_ok=True)
        print(parse_tuner(args.parse_tuner, args.out), "rows")
    elif args.worker:
        os.makedirs(args.out, exist_ok=True)
        worker_main(args)
    else:
        driver_main(args)


if __name__ == "__main__":
    main()
