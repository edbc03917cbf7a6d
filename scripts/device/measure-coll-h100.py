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
import datetime
import json
import signal
import subprocess
import sys
import tarfile
import time

from coll_worker import ALL_OPS, append_rows, worker_main


# =============================================================================
# driver side (the worker side: coll_worker.py)
# =============================================================================

def sh(cmd):
    try:
        r = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60)
        return f"$ {cmd}\n{r.stdout}{r.stderr}\n"
    except Exception as e:  # noqa: BLE001
        return f"$ {cmd}\nFAILED: {e!r}\n"


def plan_passes(args):
    """The passes in order: per GPU count the default-tuner and symm
    passes, then the NCCL_DEBUG-off controls, then the forced
    NCCL_ALGO x NCCL_PROTO passes."""
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
    return passes


def pass_env(p, logdir):
    """A pass's environment: NCCL's debug log to logdir, multicast off, its
    GPUs and its forced NCCL_ALGO / NCCL_PROTO."""
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
    return env


def pass_command(p, i, out, args):
    """The worker command of pass number i."""
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
    return cmd


def run_passes(passes, out, logdir, deadline, args):
    """Runs each pass in a fresh set of processes, killed at its timeout;
    {tag: what happened}."""
    status = {}
    for i, p in enumerate(passes):
        left = deadline - time.time()
        if left < 30:
            status[p["tag"]] = "skipped: out of time"
            print(f"== skip {p['tag']}: out of time", flush=True)
            continue
        env = pass_env(p, logdir)
        cmd = pass_command(p, i, out, args)
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
    return status


def write_env(out, status, t0):
    """env.json: the driver's view and the workers' parts (env.*.json)."""
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
    status = run_passes(plan_passes(args), out, logdir, deadline, args)
    write_env(out, status, t0)
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
