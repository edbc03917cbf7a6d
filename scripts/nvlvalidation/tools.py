"""The measured and published sources that one tool run (or one run per
row) compares with: nvlemu's validate-collectives and validate-compute,
nvlemu run on the end-to-end steps, nvlemu cost on the C2C copies and the
GEMM rates, the *_perf benches on the 2 x H100 pair and nvlemu serve on the
published serving throughputs."""
import csv
import json
import os
import re

from .common import (C2C_COPIES, E2E_TOPO, GEMMS, H100, H100_OPS, H100_TOPO, ROOT,
                     SCALED_MM, SCALED_MM_DTYPE, SCALED_MM_TOPO, SERVING, check_row, die, error, run, run_all, run_json_points, topo_name)


# ---- the tools' outputs -----------------------------------------------------

COLL_ROW = re.compile(r"^\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%\s+(\S+)$")
COLL_SUMMARY = re.compile(r"^# (\w+): (\d+) sizes, geomean error ([\d.]+)%.*worst ([\d.]+)%")
PUB_ROW = re.compile(r"^\s+(\S+\.topo)\s+(\d+)\s+(\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+"
                     r"([\d.]+)%\s+\S+\s+(\S+)\s+(.*)$")
A2A_ROW = re.compile(r"^\s+(\S+\.topo)\s+(\S+=\S+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+"
                     r"([\d.]+)%\s+\S+\s+(\S+)\s+(.*)$")
COMPUTE_ROW = re.compile(r"^  (.+?)\s+meas\s+([\d.]+) us\s+pred\s+([\d.]+) us\s+([+-][\d.]+)%$")
COMPUTE_SUMMARY = re.compile(r"^(.+?)\s+rows\s+(\d+)\s+geomean\s+([\d.]+)%\s+worst\s+([\d.]+)%")


def tool_summary(m, n_rows):
    """(comparisons, geomean, worst) of a tool's summary line: its own
    numbers, not ones recomputed from its rounded rows."""
    n = int(m.group(2))
    if n != n_rows:
        die("a summary line counts %d rows, %d were read: '%s'" % (n, n_rows, m.group(0)))
    return n, float(m.group(3)) / 100, float(m.group(4)) / 100


def collectives(build):
    """{collective: (summary, [rows])}, published rows."""
    out = run([os.path.join(build, "bench", "validate-collectives"), "--published"])
    colls, published, rows, a2a = {}, [], [], []
    for line in out.splitlines():
        m = COLL_ROW.match(line)
        if m:
            size, pred, oop, inplace = (float(m.group(i)) for i in range(1, 5))
            rows.append({"size": int(size), "pred": pred, "oop": oop, "inplace": inplace,
                         "error": float(m.group(5)) / 100, "algo": m.group(6)})
            continue
        m = COLL_SUMMARY.match(line)
        if m:
            colls[m.group(1)] = (tool_summary(m, len(rows)), rows)
            rows = []
            continue
        m = A2A_ROW.match(line)
        if m:
            pred, pub = float(m.group(5)), float(m.group(6))
            a2a.append({"topo": m.group(1), "set": m.group(2), "ranks": int(m.group(3)),
                        "size": int(m.group(4)), "pred": pred, "pub": pub,
                        "error": error(pred, pub), "impl": m.group(8),
                        "source": m.group(9).strip()})
            continue
        m = PUB_ROW.match(line)
        if m:
            pred, pub = float(m.group(5)), float(m.group(6))
            published.append({"topo": m.group(1), "ranks": int(m.group(2)), "algo": m.group(3),
                              "size": int(m.group(4)), "pred": pred, "pub": pub,
                              "error": error(pred, pub), "chosen": m.group(8),
                              "source": m.group(9).strip()})
    if not colls or not published or not a2a:
        die("no rows read from validate-collectives (has its output changed?)")
    return colls, published, a2a


def compute(build):
    """[(kernel class, summary, [rows])] in the tool's order."""
    out = run([os.path.join(build, "bench", "validate-compute"), "--rows"])
    classes, rows = [], []
    for line in out.splitlines():
        m = COMPUTE_ROW.match(line)
        if m:
            meas, pred = float(m.group(2)), float(m.group(3))
            rows.append({"kernel": m.group(1), "meas": meas, "pred": pred,
                         "error": error(pred, meas)})
            continue
        m = COMPUTE_SUMMARY.match(line)
        if m:
            classes.append((m.group(1).strip(), tool_summary(m, len(rows)), rows))
            rows = []
    if not classes:
        die("no rows read from validate-compute (has its output changed?)")
    return classes


def end_to_end(build, steps, stack, topo=None, extra=()):
    """{phase: [rows]} from STEPS on TOPO (default E2E_TOPO), nvlemu run
    given the options EXTRA too, or None when the file is absent."""
    if not os.path.exists(os.path.join(ROOT, steps)):
        return None
    phases = {"decode": [], "prefill": []}
    rows, cmds = [], []
    with open(os.path.join(ROOT, steps)) as f:
        for n, row in enumerate(csv.DictReader(f), start=2):
            phase = row["phase"]
            if phase not in phases:
                die("%s:%d: phase '%s' (expected decode or prefill)" % (steps, n, phase))
            # TP > 1 (a tp column): the same ranks as the measurement had GPUs
            cmd = [os.path.join(ROOT, "scripts", "nvlrun"), row.get("tp") or "1",
                   os.path.join(build, "nvlemu"), "run", "--topo", topo or E2E_TOPO,
                   "--model", row["model"], "--layers", row["layers"], "--stack", stack,
                   "--batch", row["batch"], "--json", "-"] + list(extra)
            if phase == "decode":  # one decode step at context ctx
                cmd += ["--ctx", row["ctx"]]
            else:  # the prompt of q_len tokens
                cmd += ["--prompt-len", row["q_len"], "--gen-len", "1"]
            rows.append(row)
            cmds.append(cmd)
    for row, out in zip(rows, run_json_points(cmds)):
        key = "tpot_ms" if row["phase"] == "decode" else "ttft_ms"
        pred_us, meas_us = 1e3 * float(json.loads(out)[key]), float(row["measured_us"])
        phases[row["phase"]].append(dict(row, pred_us=pred_us, error=error(pred_us, meas_us)))
    return phases


def c2c_copies(build):
    """The published NVLink-C2C copy bandwidths against nvlemu cost copy."""
    with open(os.path.join(ROOT, C2C_COPIES)) as f:
        src = list(csv.DictReader(f))
    outs = run_all([[os.path.join(build, "nvlemu"), "cost", "--topo", row["topology"]]
                    + (["--set", row["set"]] if row.get("set") else [])
                    + ["--json", "-", "copy", row["size_bytes"], "--path", row["path"]]
                    for row in src])
    rows = []
    for row, out in zip(src, outs):
        pred, meas = float(json.loads(out)["gb_per_s"]), float(row["measured_gb_per_s"])
        rows.append(dict(row, pred=pred, error=error(pred, meas)))
    if not rows:
        die("no rows in " + C2C_COPIES)
    return rows


GEMM_ROLES = ("fit", "check")
# how each source timed its GEMMs (nvlemu cost gemm --harness); unstated:
# the source does not say, predicted as the kernel
GEMM_HARNESSES = ("events-loop", "kineto-flush-l2", "graph-hot-l2", "unstated")
GEMM_LIBRARIES = ("cublaslt", "cutlass", "deepgemm", "trtllm-gen")


def gemm_rows(path=GEMMS):
    """PATH's rows (relative to the repository root or absolute), each
    checked: a bad role, harness or library, a size that is not a positive
    integer or a rate that is not a positive number stops the report
    naming the file and line."""
    with open(os.path.join(ROOT, path)) as f:
        src = list(csv.DictReader(f))
    for n, row in enumerate(src, start=2):
        check_row(path, n, row, {"role": GEMM_ROLES, "harness": GEMM_HARNESSES,
                                 "library": GEMM_LIBRARIES}, ("m", "n", "k"), "tflops")
    return src


def gemm_libraries(build, path=GEMMS):
    """The published GEMM rates by library against nvlemu cost gemm, each
    under its source's harness."""
    src = gemm_rows(path)
    outs = run_all([[os.path.join(build, "nvlemu"), "cost", "--topo", row["topology"],
                     "--json", "-", "gemm", row["m"], row["n"], row["k"], "--dtype",
                     row["dtype"], "--library", row["library"]]
                    + ([] if row["harness"] == "unstated" else ["--harness", row["harness"]])
                    for row in src])
    rows = []
    for row, out in zip(src, outs):
        pred, meas = float(json.loads(out)["tflops"]), float(row["tflops"])
        flops = 2.0 * int(row["m"]) * int(row["n"]) * int(row["k"])
        rows.append(dict(row, pred=pred, error=error(pred, meas), size=flops,
                         topo=topo_name(row["topology"]), ranks=1))
    if not rows:
        die("no rows in " + path)
    return rows


def scaled_mm(build):
    """torch._scaled_mm's FP8 GEMMs on one H200 (per-tensor scales:
    --dtype fp8; a scale per row of x and per column of W^T: fp8-channel)
    against nvlemu cost gemm on topology/h200-nvl2.topo.  Nothing was fit
    to them."""
    with open(os.path.join(ROOT, SCALED_MM)) as f:
        src = list(csv.DictReader(f))
    for n, row in enumerate(src, start=2):
        if row["scaling"] not in SCALED_MM_DTYPE:
            die("%s:%d: scaling '%s' (expected %s)" % (SCALED_MM, n, row["scaling"],
                                                      " or ".join(SCALED_MM_DTYPE)))
    outs = run_all([[os.path.join(build, "nvlemu"), "cost", "--topo", SCALED_MM_TOPO,
                     "--json", "-", "gemm", row["m"], row["n"], row["k"], "--dtype",
                     SCALED_MM_DTYPE[row["scaling"]]] for row in src])
    rows = []
    for row, out in zip(src, outs):
        pred, meas = float(json.loads(out)["time_us"]), float(row["us"])
        flops = 2.0 * int(row["m"]) * int(row["n"]) * int(row["k"])
        rows.append(dict(row, pred=pred, error=error(pred, meas), size=flops,
                         dtype=SCALED_MM_DTYPE[row["scaling"]],
                         topo=topo_name(SCALED_MM_TOPO), ranks=1))
    if not rows:
        die("no rows in " + SCALED_MM)
    return rows


def held_out_h100(build):
    """The 2 x H100 NV18 pair, measured through torch.distributed + NCCL 2.28.9,
    against the collective model fit to the 2 x H200 NV18 pair
    (topology/h200-nvl2.topo, the same NVLink).  Each size's time is the
    lower of its eager and its CUDA-graph measurement: both time the same
    NCCL kernel, each with an overhead of its own (an eager call adds
    torch's host path, 25-30 us; the graph rows run slower at 2-32 MB,
    h100-x2/README.md), so the lower is the nearer to the collective."""
    meas = {}
    with open(os.path.join(ROOT, H100, "colls.csv")) as f:
        for r in csv.DictReader(f):
            if r["dtype"] == "bf16" and r["algo"] == "default":
                meas[(r["op"], int(r["size_bytes"]))] = float(r["time_us"])
    rows = []
    outs = run_all([[os.path.join(ROOT, "scripts", "nvlrun"), "2",
                     os.path.join(build, "bench", op + "_perf"), "-g", "1", "--topo",
                     os.path.join(ROOT, H100_TOPO), "-b", "8", "-e", "1G",
                     "-f", "2", "--mode", "timing", "-d", "bfloat16",
                     # torch's calls: the CUDA graph's form, each call its eager
                     # device time (what the lower of the two timings is nearest)
                     "--caller", "torch", "-G", "100"] for op in H100_OPS])
    for op, out in zip(H100_OPS, outs):
        for line in out.splitlines():
            f = line.split()
            if len(f) < 9 or not f[0].isdigit():
                continue
            size, pred = int(f[0]), float(f[5])
            got = [(meas[k], how) for k, how in (((op, size), "eager"),
                                                 ((op + "_cudagraph", size), "CUDA graph"))
                   if k in meas]
            if got:
                m, how = min(got)
                rows.append(dict(op=op, size=size, how=how, meas=m, pred=pred,
                                 error=error(pred, m)))
    if not rows:
        die("no rows in " + H100)
    return rows


def layout_args(layout, tp):
    """serve's options for a published layout as TensorRT-LLM names it:
    TPn (attention and experts tensor-parallel), EPn (experts expert-
    parallel), DEPn (and attention data-parallel); n is the row's TP."""
    m = re.fullmatch(r"(TP|EP|DEP)(\d+)", layout)
    if m is None or m.group(2) != tp:
        die("%s: layout %r: expected TP%s, EP%s or DEP%s" % (SERVING, layout, tp, tp, tp))
    return {"TP": [], "EP": ["--ep", tp],
            "DEP": ["--ep", tp, "--attn-parallel", "dp"]}[m.group(1)]


SERVING_CLASSES = ("dense", "moe")
SERVING_SCHEDULERS = ("trtllm", "vllm")
SERVING_ROLES = ("fit", "held-out")
SERVING_SLOW = ("", "yes", "budget")


def serving_rows(slow, path=SERVING):
    """SERVING's rows, each checked (a bad class, scheduler, role or slow
    mark stops the report naming the line): those the run emulates, and
    those marked slow (yes: over a minute of emulation on 2 cores; budget:
    under a minute, left out so that the default report's time stays
    within a minute of its time before them) that it leaves out unless
    SLOW.  PATH: the csv (relative to the repository root or absolute)."""
    with open(os.path.join(ROOT, path)) as f:
        src = list(csv.DictReader(f))
    for line, r in enumerate(src, 2):
        for key, ok in (("class", SERVING_CLASSES), ("scheduler", SERVING_SCHEDULERS),
                        ("role", SERVING_ROLES), ("slow", SERVING_SLOW)):
            if r.get(key) not in ok:
                die("%s:%d: %s %r: expected one of %s" % (path, line, key, r.get(key),
                                                          ", ".join(map(repr, ok))))
    run_rows = [r for r in src if slow or not r["slow"]]
    return run_rows, [r for r in src if r not in run_rows]


def serving(build, slow=False, path=SERVING):
    """The published serving throughputs against nvlemu serve with the
    row's scheduler (trtllm: trtllm-bench throughput; vllm: vllm bench
    serve), layout and extra options, every request at time 0; the rows
    marked slow only when SLOW (serving_skipped() lists the others).  Rows
    with the same command (one shape published by several releases) share
    one emulation: the same command gives the same numbers."""
    src = serving_rows(slow, path)[0]
    cmds = [(os.path.join(ROOT, "scripts", "nvlrun"), row["tp"],
             os.path.join(build, "nvlemu"), "serve", "--model", row["model"],
             "--topo", row["topology"], "--dtype", row["dtype"], "--kv-dtype",
             row["kv_dtype"], "--isl", row["isl"], "--osl", row["osl"],
             "--requests", row["requests"], "--scheduler", row["scheduler"],
             "--json", "-", *layout_args(row["layout"], row["tp"]),
             *row["options"].split())
            for row in src]
    unique = list(dict.fromkeys(cmds))
    out_of = dict(zip(unique, run_json_points([list(c) for c in unique])))
    outs = [out_of[c] for c in cmds]
    rows = []
    for row, out in zip(src, outs):
        doc = json.loads(out)
        pred = float(doc["output_tok_per_s"])
        meas = float(row["measured_output_tok_per_s"])
        pool = doc["pools"][0]
        rows.append(dict(row, pred=pred, error=error(pred, meas),
                         batch=pool["tokens"] and pool["decode_tokens"] / pool["steps"],
                         ttft=doc["ttft_ms"]["mean"], tpot=doc["tpot_ms"]["mean"]))
    if not rows:
        die("no rows in " + path)
    return rows


def serving_skipped(slow=False, path=SERVING):
    """The rows of PATH marked slow that serving() leaves out."""
    return serving_rows(slow, path)[1]
