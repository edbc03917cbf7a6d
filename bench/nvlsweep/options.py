"""Argument parsing: the value parsers of the list options and the
parser of bench/sweep's command line, one function per option group."""
import argparse

# the order --collectives sweeps NCCL_ALGO and NCCL_PROTO values in (NCCL's
# documentation lists NCCL_ALGO Ring first); the members are nvlemu's own
# families, algorithm and protocol (families.members: one nvlemu adds
# joins the default, one it drops leaves it)
ALGOS = ["Ring", "Tree", "NVLS", "NVLSTree", "PAT"]
PROTOS = ["LL", "LL128", "Simple"]


def split_list(text, conv=str):
    out = []
    for item in text.split(","):
        item = item.strip()
        if item:
            out.append(conv(item))
    if not out:
        raise argparse.ArgumentTypeError("empty list")
    return out


# util/units' time grammar (docs/units.md): a number with ps, ns, us, ms or
# s, or a bare number in the option's unit; tests/units/check-quantities.py
# holds it equal to nvlemu's parser
TIME_UNITS_MS = {"ps": 1e-9, "ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def time_ms(text):
    """A latency bound as docs/units.md writes it, in ms (500, 500ms, 0.5s)."""
    t = text.strip()
    num = t.rstrip("abcdefghijklmnopqrstuvwxyz ")
    unit = t[len(num):].strip() or "ms"
    try:
        v = float(num)
    except ValueError:
        raise argparse.ArgumentTypeError("%r: expected a time (500, 500ms, "
                                         "0.5s; docs/units.md)" % text)
    if unit not in TIME_UNITS_MS:
        raise argparse.ArgumentTypeError("%r: unknown unit '%s' (one of %s)"
                                         % (text, unit, ", ".join(TIME_UNITS_MS)))
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError("%r: expected a time >= 0" % text)
    return v * TIME_UNITS_MS[unit]


def int_list(text):
    try:
        vals = split_list(text, int)
    except ValueError:
        raise argparse.ArgumentTypeError("expected integers: %r" % text)
    if any(v <= 0 for v in vals):
        raise argparse.ArgumentTypeError("expected positive integers: %r" % text)
    return vals


def limit_list(text):
    """Serve limits: positive integers, or 0 for the scheduler's own value."""
    try:
        vals = split_list(text, int)
    except ValueError:
        raise argparse.ArgumentTypeError("expected integers: %r" % text)
    if any(v < 0 for v in vals):
        raise argparse.ArgumentTypeError("expected integers >= 0: %r" % text)
    return vals


def build_parser():
    p = argparse.ArgumentParser(
        prog="bench/sweep",
        description="Run a grid of nvlemu runs (every combination of the "
                    "list options) and write CSV, JSON, Markdown and plots.",
        epilog="Lists are comma-separated.  Example: bench/sweep --model "
               "qwen2.5-72b --tp 8,16,72 --batch 1,32 --ctx 4096 --out my-sweep.  "
               "Serving: bench/sweep --serve --model qwen2.5-72b --tp 8,16 "
               "--concurrency 4,64 --load-per replica --slo-ttft 2000 "
               "--slo-tpot 50 --out my-serve (docs/what-if.md, questions 13-14)")
    grid_args(p.add_argument_group("grid (every combination is one run)"))
    every_run_args(p.add_argument_group("applied to every run"))
    launch_args(p.add_argument_group("launching"))
    output_args(p.add_argument_group("output"))
    serve_args(p.add_argument_group(
        "serve mode (--serve: nvlemu serve jobs, a Pareto front under an SLO)"))
    collectives_args(p.add_argument_group("collectives mode"))
    return p


def grid_args(g):
    g.add_argument("--model", type=split_list, default=["qwen2.5-72b"],
                   help="presets or Hugging Face directories (default qwen2.5-72b)")
    g.add_argument("--tp", type=int_list, default=None,
                   help="tensor-parallel degrees = ranks per run (times "
                        "--pp; default 8,16,72; --serve: the aggregated "
                        "layouts' TP, one replica emulated)")
    g.add_argument("--pp", type=int_list, default=[1],
                   help="pipeline stages of TP ranks each (nvlemu run --pp; "
                        "docs/pipeline.md; default 1)")
    g.add_argument("--batch", type=int_list, default=[1],
                   help="batch sizes (default 1)")
    g.add_argument("--ctx", type=int_list, default=None,
                   help="contexts: one steady-state decode step at each "
                        "(default 4096 unless --prompt-len is given)")
    g.add_argument("--prompt-len", type=int_list, default=None,
                   help="prompt lengths (instead of --ctx; with --gen-len)")
    g.add_argument("--gen-len", type=int_list, default=None,
                   help="new tokens per sequence (with --prompt-len; default 16)")
    g.add_argument("--dtype", type=split_list, default=["bf16"],
                   help="weight types: bf16, fp8, fp4 (default bf16)")
    g.add_argument("--kv-dtype", type=split_list, default=["bf16"],
                   help="KV cache types: bf16, fp8 (default bf16)")
    g.add_argument("--launch", type=split_list, default=["graph"],
                   help="eager, graph, persistent (default graph)")
    g.add_argument("--attn", type=split_list, default=None,
                   help="fa3, fa4, sdpa (default: the stack's and GPU's default)")
    g.add_argument("--stack", type=split_list, default=["fused"],
                   help="software stacks: torch, fused (default fused)")
    g.add_argument("--overlap", type=split_list, default=["none"],
                   help="none, async-tp: tensor-parallel allreduces "
                        "pipelined with the GEMMs (default none)")
    g.add_argument("--a2a", type=split_list, default=["nccl"],
                   help="mixture of experts under --ep: nccl, onesided "
                        "all-to-alls (default nccl)")
    g.add_argument("--allreduce", type=split_list, default=["nccl"],
                   help="tensor-parallel allreduces, as `nvlemu --list allreduce` "
                        "names them (default nccl)")
    g.add_argument("--fuse-allreduce-norm", type=split_list, default=["no"],
                   help="no and/or yes: the residual add + RMSNorm inside "
                        "the allreduce kernel (not a run with nccl; default no)")
    g.add_argument("--rank-plays", type=split_list, default=["gpu"],
                   help="what each rank plays: gpu and/or die (one die of a "
                        "two-die package: TP ranks on TP/2 GPUs; default gpu)")
    g.add_argument("--ep", type=split_list, default=["1"],
                   help="mixture of experts: expert-parallel degrees, each "
                        "dividing the TP degree ('all': = TP; default 1: "
                        "experts tensor-parallel)")
    g.add_argument("--attn-parallel", type=split_list, default=["tp"],
                   help="mixture of experts: attention tp and/or dp "
                        "(default tp)")
    g.add_argument("--kv-host", type=split_list, default=["0"],
                   help="memory tiers: KV cache shares in Grace memory, auto "
                        "or fractions (default 0)")
    g.add_argument("--weights-host", type=split_list, default=["0"],
                   help="memory tiers: layer weight shares in Grace memory, "
                        "auto or fractions (default 0)")
    g.add_argument("--topo", type=split_list, default=["gb200-nvl72"],
                   help="topology names (topology/NAME.topo) or files "
                        "(default gb200-nvl72)")
    g.add_argument("--what-if", action="append", default=[], metavar="NAME=K=V[,K=V]",
                   help="a named set of topology overrides, repeatable; each "
                        "is one value of a grid axis that also holds "
                        "'baseline' (no overrides).  NAME=@FILE reads them "
                        "from a file (one KEY=VALUE a line)")
    g.add_argument("--nccl-algo", type=split_list, default=None,
                   help="NCCL_ALGO values, one run each ('default': unset)")
    g.add_argument("--nccl-proto", type=split_list, default=None,
                   help="NCCL_PROTO values, one run each ('default': unset)")


def every_run_args(o):
    o.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="topology what-if for every run, repeatable "
                        "(nvlink.link_bw=100GB/s, nvlink.switch_trays_down=1, "
                        "'gpu[17].clock_scale=0.8')")
    o.add_argument("--set-file", action="append", default=[], metavar="FILE",
                   help="what-ifs for every run from a file (one KEY=VALUE a line)")
    o.add_argument("--rope-scaling", default=None, metavar="yarn:F",
                   help="nvlemu run --rope-scaling for every run (contexts "
                        "past the model's max_position_embeddings)")
    o.add_argument("--layers", type=int, default=None,
                   help="run only the first N layers (quicker, not the whole model)")
    o.add_argument("--mode", choices=["data", "timing"], default=None,
                   help="nvlemu run --mode (default: nvlemu's choice)")


def launch_args(l):
    l.add_argument("--hostfile", default=None,
                   help="Open MPI hostfile (hostfiles/*.txt), as NVL_HOSTFILE of scripts/nvlrun")
    l.add_argument("--mpirun", default=None, help="launcher run as LAUNCHER -n N [--oversubscribe] (default: "
                        "scripts/nvlrun N, with its one-host settings)")
    l.add_argument("--nvlemu", default=None,
                   help="nvlemu binary (default $NVL_BUILD_DIR/nvlemu or build/nvlemu)")
    l.add_argument("--timeout", type=float, default=1800,
                   help="seconds before one run is stopped and recorded as failed "
                        "(default 1800); the runs of an `nvlemu run` grid that share "
                        "a launcher run as one --points job, stopped after this times "
                        "its number of runs")
    l.add_argument("--dry-run", action="store_true",
                   help="print the commands, run nothing (an `nvlemu run` grid: "
                        "one line per job, a --points job's file above it as comments)")
    l.add_argument("--rerun", action="store_true",
                   help="run again even the runs whose results exist")


def output_args(r):
    r.add_argument("--out", default="sweep-out", help="output folder (default sweep-out)")
    r.add_argument("--plots", dest="plots", action="store_true", default=True,
                   help="render plots with gnuplot when installed (default)")
    r.add_argument("--no-plots", dest="plots", action="store_false")
    r.add_argument("--title", default=None, help="a title for summary.md and the plots")


def serve_args(v):
    v.add_argument("--serve", action="store_true",
                   help="instead of nvlemu run: nvlemu serve over layouts "
                        "(--tp, --disagg) x --ep x --max-batch x --dtype x "
                        "... x loads (--concurrency or --rate); the Pareto "
                        "front of output tokens/s per GPU vs tokens/s per "
                        "user over the runs that meet the SLO")
    v.add_argument("--disagg", type=split_list, default=None,
                   metavar="P:D[,P:D...]",
                   help="disaggregated layouts, prefill pool : decode pool, "
                        "each pool tpTxR (R replicas of TP T: T x R GPUs) "
                        "or N (one replica of N GPUs): tp8x1:tp8x3, 8:16, "
                        "tp4x2:tp8x1 (all their GPUs emulated; needs --rate)")
    v.add_argument("--system-gpus", type=int, default=None, metavar="N",
                   help="GPUs of the system the layouts fill (default: the "
                        "topology's): an aggregated TP T runs as system-GPUs "
                        "/ T replicas (--replicas), one of them emulated; a "
                        "disaggregated layout of G GPUs is one of "
                        "system-GPUs / G copies")
    v.add_argument("--concurrency", type=int_list, default=None, metavar="LIST",
                   help="load points: closed loop, requests in flight")
    v.add_argument("--rate", type=split_list, default=None, metavar="LIST",
                   help="load points: Poisson arrivals, requests/s")
    v.add_argument("--loads", action="append", default=[], metavar="LAYOUT=LIST",
                   help="a layout's own load points instead of --concurrency/"
                        "--rate's, repeatable: tp72=4,64 (fewer for a layout "
                        "that is slow to emulate), tp8x1:tp8x1=2,8")
    v.add_argument("--load-per", choices=["system", "replica"], default="system",
                   help="the --concurrency/--rate values are the system's "
                        "(default: as nvlemu serve reads them; each replica "
                        "or layout copy gets its share) or each replica's "
                        "(a disaggregated layout: each copy's), multiplied "
                        "by the replicas for the system")
    v.add_argument("--requests", default="x4", metavar="N|xK",
                   help="requests the emulated GPUs serve in each run: N, or "
                        "xK: K times the emulated replica's load value (K "
                        "waves of a closed loop; K seconds of arrivals at a "
                        "rate); default x4")
    v.add_argument("--isl", default="1024", metavar="L",
                   help="input tokens (nvlemu serve --isl: N, uniform:LO:HI, "
                        "normal:M:SD, lognormal:MED:S; default 1024)")
    v.add_argument("--osl", default="128", metavar="L",
                   help="output tokens (as --isl; default 128)")
    v.add_argument("--scheduler", type=split_list, default=["vllm"], metavar="LIST",
                   help="nvlemu serve --scheduler: vllm (default), trtllm (TensorRT-LLM "
                        "as trtllm-bench runs it; give --max-batch 0 "
                        "--max-tokens-per-step 0 for trtllm-bench's own limits)")
    v.add_argument("--max-batch", type=limit_list, default=[256], metavar="LIST",
                   help="sequences per step (default 256, vLLM's max_num_seqs below 70 GiB "
                        "of GPU memory; nvlemu serve's own default is vLLM's 1024 above; "
                        "0: the scheduler's own)")
    v.add_argument("--max-tokens-per-step", type=limit_list, default=[8192], metavar="LIST",
                   help="tokens per step (default 8192; 0: the scheduler's own)")
    v.add_argument("--seed", type=int, default=1, metavar="S", help="generator seed (default 1)")
    v.add_argument("--slo-ttft", type=time_ms, default=0, metavar="TIME",
                   help="SLO: TTFT bound (ms without a unit: 500, 500ms, "
                        "0.5s; 0: none)")
    v.add_argument("--slo-tpot", type=time_ms, default=0, metavar="TIME",
                   help="SLO: TPOT bound (ms without a unit; 0: none)")
    v.add_argument("--slo-attainment", type=float, default=0.9, metavar="F",
                   help="a run is feasible when at least this share of its "
                        "requests meets both bounds (default 0.9: the SLO "
                        "holds at p90)")
    v.add_argument("--at-user-speed", type=split_list, default=["20", "50", "100"],
                   metavar="LIST",
                   help="tokens/s per user at which summary.md names the "
                        "best layout (default 20,50,100)")
    v.add_argument("--gpu-hour-cost", type=float, default=0, metavar="X",
                   help="nvlemu serve --gpu-hour-cost: cost per million "
                        "tokens in the tables")


def collectives_args(c):
    c.add_argument("--collectives", action="store_true",
                   help="instead of nvlemu run: all_reduce_perf with NCCL_ALGO "
                        "and NCCL_PROTO forced to each value; busbw vs size")
    c.add_argument("--ranks", type=int_list, default=None,
                   help="collectives: rank counts (default: --tp's first value)")
    c.add_argument("--algos", type=split_list, default=None,
                   help="collectives: algorithms (default %s: every one "
                        "`nvlemu --list algorithm` lists)" % ",".join(ALGOS))
    c.add_argument("--protos", type=split_list, default=None,
                   help="collectives: protocols (default %s: every one "
                        "`nvlemu --list protocol` lists)" % ",".join(PROTOS))
    c.add_argument("--max-bytes", default="1G",
                   help="collectives: largest size (default 1G; from 8 B, x2)")
    c.add_argument("--bench", default="all_reduce_perf",
                   help="collectives: which benchmark (default all_reduce_perf)")
