"""The worker side of measure-coll-h100.py: one process per GPU (spawned by
worker_main) runs a pass of NCCL collectives or of torch symmetric-memory
all-reduces and appends its rows to colls.csv / symm.csv; the timing of a
call (eager, or captured in a CUDA graph), the maximum over ranks, the
median of trials.  measure-coll-h100.py's docstring describes the passes.
torch is imported inside the functions: the driver, which imports this
module, sets NCCL's environment first."""
import csv
import datetime
import json
import os
import sys
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


def _nccl_call(op, rank, n, numel, dt, dev):
    """The call of one collective on buffers of numel elements (ones;
    all_gather's input and reduce_scatter's output are one rank's part)."""
    import torch
    import torch.distributed as dist
    bufs = {}
    if op == "all_reduce":
        bufs["x"] = torch.ones(numel, dtype=dt, device=dev)

        def fn(b=bufs):
            dist.all_reduce(b["x"], op=dist.ReduceOp.SUM)
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
    return fn, bufs


def _check_all_reduce(fn, bufs, rank, n, dev, dname, size):
    """One correctness check before timing: ones summed are n."""
    import torch
    fn()
    torch.cuda.synchronize(dev)
    v0, v1 = float(bufs["x"][0]), float(bufs["x"][-1])
    if v0 != n or v1 != n:
        print(f"[rank {rank}] CHECK FAILED all_reduce {dname} {size}: {v0} {v1}",
              flush=True)


def _nccl_size(op, dname, size, numel, rank, n, dev, cpu_group, args, graph_failed):
    """The rows of one op, dtype and size: eager calls, and bf16 ops but
    send/recv captured in a CUDA graph (an op whose capture failed once is
    not captured again)."""
    fn, bufs = _nccl_call(op, rank, n, numel, _dtype(dname), dev)
    if op == "all_reduce":
        _check_all_reduce(fn, bufs, rank, n, dev, dname, size)
    it = iters_for(size)
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
    rows = []
    gcol = {"gpus": n} if args.gpus_col else {}
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
    return rows


def _nccl_pass(rank, n, dev, cpu_group, args):
    import torch
    graph_failed = set()
    gcol = {"gpus": n} if args.gpus_col else {}
    sizes = [1 << k for k in range(args.min_log2, args.max_log2 + 1)]
    for op in args.ops.split(","):
        for dname in args.dtypes.split(","):
            es = torch.tensor([], dtype=_dtype(dname)).element_size()
            rows = []
            for size in sizes:
                numel = size // es
                if op in ("all_gather", "reduce_scatter", "alltoall"):
                    numel -= numel % n   # nccl-tests: count rounded down to n
                if numel < n:
                    continue
                rows += _nccl_size(op, dname, numel * es, numel, rank, n, dev, cpu_group,
                                   args, graph_failed)
            torch.cuda.empty_cache()
            if rank == 0:  # per (op, dtype), so a later crash keeps what ran
                append_rows(os.path.join(args.out, "colls.csv"),
                            list(gcol) + COLL_FIELDS, rows)


SYMM_OPS = ["one_shot_all_reduce", "one_shot_all_reduce_out", "one_shot_all_reduce_copy",
            "two_shot_all_reduce_", "two_shot_all_reduce_out", "multimem_all_reduce_",
            "multimem_one_shot_all_reduce"]


def _symm_probe(dev):
    """(torch's symmetric-memory module or None, {op: its schema or None},
    what env.symm.N.json records of them)."""
    import torch
    info = {}
    try:
        import torch.distributed._symmetric_memory as symm_mem
    except Exception as e:  # noqa: BLE001
        info["symm_mem_import_error"] = repr(e)
        symm_mem = None
    ops_ns = getattr(torch.ops, "symm_mem", None)
    avail = {}
    for name in SYMM_OPS:
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
    return symm_mem, avail, info


def _symm_variants(avail, buf, local, out, gname):
    """(impl, call) of every available one-shot / two-shot kernel."""
    import torch
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
    return variants


def _symm_check(impl, fn, buf, out, size, rank, n, dev, cpu_group):
    """Once before timing: a buffer of ones sums to n everywhere."""
    import torch
    import torch.distributed as dist
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


def _symm_size(variants, buf, out, size, rank, n, dev, cpu_group, args, impl_errors):
    """The rows of every variant at one size: checked, timed eagerly and in
    a CUDA graph; a variant (or its graph) that failed once is not run again."""
    it = iters_for(size)
    rows = []
    for impl, fn in variants:
        if impl in impl_errors:
            continue
        try:
            _symm_check(impl, fn, buf, out, size, rank, n, dev, cpu_group)
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
    return rows


def _symm_sizes(symm_mem, avail, info, rank, n, dev, cpu_group, args):
    """bf16 all-reduce of 1 KiB .. 64 MiB through each variant: the rows."""
    import torch
    import torch.distributed as dist
    gname = dist.group.WORLD.group_name
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
    impl_errors, rows = {}, []
    for size in sizes:
        numel = size // 2
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
        variants = _symm_variants(avail, buf, local, out, gname)
        rows += _symm_size(variants, buf, out, size, rank, n, dev, cpu_group, args,
                           impl_errors)
        del buf, hdl, local, out, variants
    info["impl_errors"] = impl_errors
    return rows


def _symm_pass(rank, n, dev, cpu_group, args):
    symm_mem, avail, info = _symm_probe(dev)
    rows = []
    if symm_mem is None or avail["one_shot_all_reduce"] is None:
        info["skipped"] = "symm_mem ops not available"
    else:
        rows = _symm_sizes(symm_mem, avail, info, rank, n, dev, cpu_group, args)
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
