"""A MoE layer's parts against measured kernels and a measured step (issue
32): torch's grouped GEMMs (h100-moe, h200-moe-prefill, h200-fp8-k,
h200-grouped-decode)
against `nvlemu cost grouped --stack torch`, torch's routing kernels
(h100-moe/route.csv) and the eager parts of a torch MoE decode step on
one H200 (h200-moe-step) against the kernels of `nvlemu run --stack
torch`, its compiled attention and routing against `--stack compiled`'s,
and that step end to end under `--stack compiled` (the stack it ran);
TensorRT-LLM's own MoE layer at Qwen3's expert shapes (trtllm-moe-op)
against the fused stack's MoE kernels of `nvlemu run`.
Summary rows and the document's section."""
import collections
import csv
import json
import os
import shutil
import tempfile

from .common import ROOT, error, geomean, pct, run, run_all, table
from .families import regions, summary_row
from .tools import end_to_end

CAL = "tests/data/calibration"
H100_TOPO, H200_TOPO = "topology/hgx-h100.topo", "topology/hgx-h200.topo"
GROUPED = CAL + "/h100-moe/grouped.csv"
ROUTE = CAL + "/h100-moe/route.csv"
PREFILL = CAL + "/h200-moe-prefill/grouped-prefill.csv"
DEP8 = CAL + "/h200-fp8-k/grouped-decode.csv"
DECODE = CAL + "/h200-grouped-decode/grouped-decode.csv"
STEP = CAL + "/h200-moe-step"
TRTLLM_OP = CAL + "/trtllm-moe-op/moe-op.csv"
# TensorRT-LLM's MoE layer (trtllm-moe-op): its balanced rows of these
# tokens against the fused stack's kernels of the op (the router GEMM and
# the DEP exchange left out: the measurement hands the op its logits and
# runs one GPU); nothing is fit to them, every group held out
TRTLLM_OP_TOKENS = (256, 32768)
TRTLLM_OP_KERNELS = ("topk_softmax", "moe_quantize", "sort_pairs", "expand_rows",
                     "experts_gate_up", "silu_mul", "experts_down", "moe_sum")
TRTLLM_OP_GROUPS = (("topology/hgx-h200.topo", "fp8"), ("topology/hgx-b200.topo", "fp4"))
# the fit rule (scripts/calibration/fit-moe-grouped.py): the grouped GEMM's
# panel constants on h100-moe's uniform rows and the DEP8 file's gate+up
# rows (K 4,096); everything else here is held out, the step included
DEP8_FIT_K = "4096"
# torch's one-CTA radix sort (scripts/calibration/fit-torch-radix-sort.py):
# its two constants fit on route.csv's argsort rows at these batches; the
# rows of these batches are the routing family's fit rows, the rest held out
ROUTE_FIT_BATCHES = (1, 64)
# torch's FP8 kernel at decode shapes (scripts/calibration/
# fit-torch-fp8-grouped.py): its start fit on h100-moe's Qwen3-30B-A3B
# uniform rows of at most this many rows an expert
FP8_FIT_MODEL, FP8_FIT_MAX_ROWS = "qwen3-30b-a3b", 128
# torch's bf16 kernel at decode shapes (scripts/calibration/
# fit-torch-grouped-decode.py): fit on all 128 experts at these rows each
DECODE_FIT_ROWS = ("2", "8", "32", "128")
# route.csv's kernels and the step's parts -> the kernels nvlemu run
# --stack torch issues for them (src/engine/moe.c, moe_torch.c)
TOPK = ("topk_float", "topk_softmax", "topk_select", "topk_sort", "topk_sum", "topk_div")
ARGSORT = ("sort_arange", "sort_index_copy", "sort_ids_copy", "sort_block", "sort_histogram",
           "sort_digit_offsets", "sort_lookback_reset", "sort_onesweep")
COUNTS = ("counts_zeros", "counts_ones", "counts_scatter_add", "counts_scan_init",
          "counts_cumsum", "counts_int")
SORT = ARGSORT + ("sort_token",) + COUNTS
UNPERMUTE = ("unpermute_zeros", "unpermute_weights", "unpermute_scale", "unpermute_index_add")
# the step's compiled regions (attention, routing) -> the kernels nvlemu
# run --stack compiled issues for them (plan.c's compiled rows, moe_torch.c)
COMPILED_PARTS = {"attn+route": (
    "rmsnorm", "add_rmsnorm", "qkv_proj", "qk_norm", "rope_q", "rope_k_kv_write",
    "v_kv_write", "attention", "o_proj", "router", "topk_softmax", "topk_select",
    "topk_sort", "topk_renorm")}
# (route.csv times the ops alone, h100-moe/README.md: its sort is the
# argsort without the order // k, its unpermute d * w and index_add_
# without the zeroed output and the weights' gather)
ROUTE_KERNELS = {"router": ("router",), "topk_softmax": TOPK,
                 "sort+counts_offsets": ARGSORT + COUNTS, "permute": ("expand_rows",),
                 "silu_mul": ("silu", "mul"),
                 "unpermute": ("unpermute_scale", "unpermute_index_add")}
STEP_PARTS = {"sort": SORT, "permute": ("expand_rows",),
              "gate_up": ("gate_up_prepare", "experts_gate_up"), "silu_mul": ("silu", "mul"),
              "down": ("down_prepare", "experts_down"), "unpermute": UNPERMUTE,
              "lm_head": ("lm_head", "sample")}


def _read(path):
    with open(os.path.join(ROOT, path)) as f:
        return list(csv.DictReader(f))


def _compare(build, topo, src, groups_key, meas_key, dtype):
    """Each row of SRC (measured MEAS_KEY us) against nvlemu cost grouped
    rows N K --groups G: the rows spread evenly over the groups that got
    any (a routed row's active experts)."""
    src = [r for r in src if r[meas_key] not in ("", "nan")]
    outs = run_all([[os.path.join(build, "nvlemu"), "cost", "--topo", topo, "--json", "-",
                     "grouped", r["rows"], r["n"], r["k"], "--groups", r[groups_key],
                     "--dtype", dtype, "--stack", "torch"] for r in src])
    got = []
    for r, out in zip(src, outs):
        j = json.loads(out)
        pred, meas = float(j["time_us"]), float(r[meas_key])
        got.append(dict(r, pred_us=pred, meas_us=meas, error=error(pred, meas),
                        flops=j.get("flops"), topo=topo))
    return got


def _trace_kernels(build, topo, model, batch, layers, ctx, stack="torch"):
    """{kernel: us} of one decode step of nvlemu run --stack STACK, summed
    over its layers (the trace's second pass)."""
    tmp = tempfile.mkdtemp(prefix="nvl-moe-")
    try:
        path = os.path.join(tmp, "t.json")
        run([os.path.join(ROOT, "scripts", "nvlrun"), "1", os.path.join(build, "nvlemu"),
             "run", "--topo", topo, "--model", model, "--layers", str(layers), "--stack",
             stack, "--batch", str(batch), "--ctx", str(ctx), "--trace", path,
             "--trace-steps", "1"])
        with open(path) as f:
            d = json.load(f)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    sums = collections.defaultdict(float)
    for e in d["traceEvents"] if isinstance(d, dict) else d:
        if e.get("ph") == "X" and e.get("pid", 0) == 0 and e["args"].get("pass") == 1:
            sums[e["name"]] += float(e["dur"])
    return sums


def _parts(measured, kernels, mapping, keys):
    """One row per (KEYS of a measured row, part): measured us against the
    sum of the part's modeled kernels."""
    out = []
    for r, ks in zip(measured, kernels):
        for part, names in mapping.items():
            meas = sum(float(r[k]) for k in part.split("+")) if "+" in part else float(r[part])
            pred = sum(ks.get(n, 0.0) for n in names)
            if meas > 0 and pred > 0:
                out.append(dict({k: r[k] for k in keys}, part=part, meas_us=meas,
                                pred_us=pred, error=error(pred, meas)))
    return out


def _route_rows(build):
    by = collections.OrderedDict()
    for r in _read(ROUTE):
        by.setdefault((r["model"], int(r["batch"])), {})[r["kernel"]] = r["us"]
    meas = [dict(v, model=m, batch=b) for (m, b), v in by.items()]
    kern = [_trace_kernels(build, H100_TOPO, r["model"], r["batch"], 1, 16) for r in meas]
    return _parts(meas, kern, ROUTE_KERNELS, ("model", "batch"))


def _step_parts(build, stack, mapping):
    by = collections.OrderedDict()
    for r in _read(STEP + "/parts.csv"):
        by.setdefault((r["model"], int(r["layers"]), int(r["batch"])), {})[r["part"]] = r["us"]
    meas = [dict(v, model=m, layers=n, batch=b) for (m, n, b), v in by.items()]
    kern = [_trace_kernels(build, H200_TOPO, r["model"], r["batch"], r["layers"], 512, stack)
            for r in meas]
    return _parts(meas, kern, mapping, ("model", "batch"))


def _trtllm_op(build):
    """TensorRT-LLM's measured MoE layers (TRTLLM_OP's balanced rows) against
    the fused stack's kernels of that op in one decode step of `nvlemu run`
    at `tokens` rows a rank's experts see: the batch of one rank (EP 1) or
    the gathered batch of 8 attention-DP ranks (EP 8), one layer, the mean
    over the ranks."""
    src = [r for r in _read(TRTLLM_OP)
           if r["distribution"] == "balanced" and
           (r["topology"], r["dtype"]) in TRTLLM_OP_GROUPS and
           TRTLLM_OP_TOKENS[0] <= int(r["tokens"]) <= TRTLLM_OP_TOKENS[1]]
    tmp = tempfile.mkdtemp(prefix="nvl-trtllm-op-")
    try:
        cmds = []
        for i, r in enumerate(src):
            cmd = [os.path.join(ROOT, "scripts", "nvlrun"), r["ep"],
                   os.path.join(build, "nvlemu"), "run", "--topo", r["topology"],
                   "--model", r["model"], "--dtype", r["dtype"], "--kv-dtype", "fp8",
                   "--layers", "1", "--ctx", "16", "--batch", r["tokens"],
                   "--trace", os.path.join(tmp, "%d.json" % i), "--trace-steps", "1"]
            if r["ep"] != "1":
                cmd += ["--ep", r["ep"], "--attn-parallel", "dp"]
            cmds.append(cmd)
        run_all(cmds)
        got = []
        for i, r in enumerate(src):
            with open(os.path.join(tmp, "%d.json" % i)) as f:
                d = json.load(f)
            # the mean over the ranks (threads): their experts' rows are the
            # seeded routing's, the measurement's balanced on average
            ranks = collections.defaultdict(float)
            for e in d["traceEvents"] if isinstance(d, dict) else d:
                if (e.get("ph") == "X" and e.get("pid", 0) == 0 and
                        e["args"].get("pass") == 1 and e["name"] in TRTLLM_OP_KERNELS):
                    ranks[e.get("tid", 0)] += float(e["dur"])
            pred = sum(ranks.values()) / len(ranks)
            meas = float(r["op_us"])
            got.append(dict(r, pred_us=pred, meas_us=meas, error=error(pred, meas)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    fams = []
    for topo, dtype in TRTLLM_OP_GROUPS:
        for model in ("qwen3-235b-a22b", "qwen3-30b-a3b"):
            for ep in ("8", "1"):
                rows = [r for r in got if (r["topology"], r["dtype"], r["model"], r["ep"]) ==
                        (topo, dtype, model, ep)]
                if rows:
                    fams.append((rows, "TensorRT-LLM's MoE layer on %s, %s %s, EP %s (--stack "
                                 "fused)" % (rows[0]["gpu"].replace("NVIDIA ", ""), model,
                                             dtype, ep), True))
    return fams


def _family(rows, name, source, held, topo):
    return summary_row(name, [r["error"] for r in rows], source, held_out=held,
                       where=regions(rows, "grouped", topo, 1, size_key="flops", unit="FLOP"))


def moe_kernels(build):
    """(summary rows, document lines) of the MoE families."""
    h100 = _read(GROUPED)
    uni = _compare(build, H100_TOPO, [r for r in h100 if r["kind"] == "uniform"],
                   "active_experts", "bf16_us", "bf16")
    routed = _compare(build, H100_TOPO, [r for r in h100 if r["kind"] == "routed"],
                      "active_experts", "bf16_us", "bf16")
    fp8 = _compare(build, H100_TOPO, h100, "active_experts", "fp8_us", "fp8")
    fp8_fit = [r for r in fp8 if r["model"] == FP8_FIT_MODEL and r["kind"] == "uniform"
               and int(r["tokens_or_batch"]) <= FP8_FIT_MAX_ROWS]
    pre = {dt: _compare(build, H200_TOPO, _read(PREFILL), "experts", dt + "_grouped_us", dt)
           for dt in ("bf16", "fp8")}
    dep = {dt: _compare(build, H200_TOPO, _read(DEP8), "experts", dt + "_grouped_us", dt)
           for dt in ("bf16", "fp8")}
    dec = _compare(build, H200_TOPO, [dict(r, rows=str(int(r["active"]) *
                                             int(r["rows_per_expert"])))
                                      for r in _read(DECODE)], "active", "us", "bf16")
    dec_fit = [r for r in dec
               if r["active"] == "128" and r["rows_per_expert"] in DECODE_FIT_ROWS]
    route, parts = _route_rows(build), _step_parts(build, "torch", STEP_PARTS)
    compiled = _step_parts(build, "compiled", COMPILED_PARTS)
    # the step ran its attention and routing compiled: --stack compiled
    steps = end_to_end(build, STEP + "/steps.csv", "compiled")["decode"]
    fams = [(uni, "MoE grouped GEMM on H100: torch._grouped_mm bf16, uniform rows (fit)",
             GROUPED, False, H100_TOPO),
            (routed, "MoE grouped GEMM on H100: torch._grouped_mm bf16, routed rows",
             GROUPED, True, H100_TOPO),
            (fp8_fit, "MoE grouped GEMM on H100: torch._scaled_grouped_mm fp8, Qwen3-30B-A3B "
             "uniform rows to 128 an expert (fit)", GROUPED, False, H100_TOPO),
            ([r for r in fp8 if r not in fp8_fit], "MoE grouped GEMM on H100: "
             "torch._scaled_grouped_mm fp8", GROUPED, True, H100_TOPO)]
    fams += [(pre["bf16"], "MoE grouped GEMM on H200 at prefill shapes: torch bf16",
              PREFILL, True, H200_TOPO),
             ([r for r in dep["bf16"] if r["k"] == DEP8_FIT_K], "MoE grouped GEMM on H200 at "
              "DEP8 decode shapes: torch bf16, gate+up (fit)", DEP8, False, H200_TOPO),
             ([r for r in dep["bf16"] if r["k"] != DEP8_FIT_K], "MoE grouped GEMM on H200 at "
              "DEP8 decode shapes: torch bf16, down", DEP8, True, H200_TOPO),
             (dec_fit, "MoE grouped GEMM on H200 at decode shapes: torch bf16, 128 experts "
              "(fit)", DECODE, False, H200_TOPO),
             ([r for r in dec if r not in dec_fit], "MoE grouped GEMM on H200 at decode "
              "shapes: torch bf16", DECODE, True, H200_TOPO),
             (pre["fp8"], "MoE grouped GEMM on H200 at prefill shapes: torch fp8", PREFILL,
              True, H200_TOPO),
             (dep["fp8"], "MoE grouped GEMM on H200 at DEP8 decode shapes: torch fp8", DEP8,
              True, H200_TOPO)]
    rows = [_family(*f) for f in fams]
    trtllm = _trtllm_op(build)
    rows += [summary_row(name, [r["error"] for r in op], TRTLLM_OP, held_out=held)
             for op, name, held in trtllm]
    route_fit = [r for r in route if r["batch"] in ROUTE_FIT_BATCHES]
    rows.append(summary_row("MoE routing kernels on H100 (torch, --stack torch), batch 1 and "
                            "64 (fit)", [r["error"] for r in route_fit], ROUTE, held_out=False))
    rows.append(summary_row("MoE routing kernels on H100 (torch, --stack torch)",
                            [r["error"] for r in route if r not in route_fit], ROUTE,
                            held_out=True))
    rows.append(summary_row("MoE decode step's parts on H200 (--stack torch)",
                            [r["error"] for r in parts], STEP + "/parts.csv", held_out=True))
    rows.append(summary_row("MoE decode step's compiled attention and routing on H200 "
                            "(--stack compiled)", [r["error"] for r in compiled],
                            STEP + "/parts.csv", held_out=True))
    for model in ("qwen3-30b-a3b", "qwen3-235b-a22b"):
        sel = [dict(r, ranks=1) for r in steps if r["model"] == model]
        rows.append(summary_row("end to end: MoE decode on H200, %s (--stack compiled)" % model,
                                [r["error"] for r in sel], STEP + "/steps.csv",
                                held_out=True, attributes={"stack": "compiled"},
                                where=regions(sel, "decode", H200_TOPO, 1, size_key="batch",
                                              unit="sequences")))
    return rows, _doc(fams, route, parts + compiled, steps, trtllm)


def _signed(r):
    return "%+.1f%%" % (100 * (r["pred_us"] / r["meas_us"] - 1))


def _doc(fams, route, parts, steps, trtllm):
    doc = ["## A MoE layer's parts (issue 32)\n",
           "Torch's grouped GEMMs against `nvlemu cost grouped M N K --groups G --dtype D "
           "--stack torch` on the measuring machine's topology (M rows spread evenly over G "
           "groups: a routed row's active experts), torch's routing kernels and the eager "
           "parts of a torch MoE decode step against the kernels `nvlemu run --stack torch` "
           "issues for them (`--trace`, the decode step's sum over its layers), its compiled "
           "attention and routing (attn+route) against `--stack compiled`'s, and that step "
           "end to end under `--stack compiled`, the stack it ran. "
           "Model minus measured, signed, in the detailed tables: negative is too fast. "
           "Fit rule (`scripts/calibration/fit-moe-grouped.py`): the grouped GEMM's two "
           "panel constants (src/cost/cost.c) on the H100's uniform rows and the H200 "
           "DEP8 file's gate+up rows (K 4,096); the three constants of torch's bf16 "
           "kernel at decode shapes (`scripts/calibration/fit-torch-grouped-decode.py`) "
           "on h200-grouped-decode's rows of 128 experts of 2, 8, 32 and 128 rows; "
           "torch's FP8 spill constant "
           "(`scripts/calibration/fit-fp8-spill.py`) on the four slow 128 x 256 rows of "
           "h200-moe-compiled/fp8-tile.csv; the start of torch's FP8 kernel at decode shapes "
           "(`scripts/calibration/fit-torch-fp8-grouped.py`) on h100-moe's Qwen3-30B-A3B "
           "uniform rows of 1-128 rows an expert; torch's one-CTA radix sort's two constants "
           "(`scripts/calibration/fit-torch-radix-sort.py`) on route.csv's argsort rows at "
           "batch 1 and 64 (that file's rows at those batches are the routing family's fit "
           "rows); gatherTopK's issue a pass measured, not fit, on one H200's rows of known "
           "passes (`scripts/calibration/fit-topk-select.py`, h200-topk-passes); every other "
           "row held out, the step included.\n"]
    for rows, name, _src, _held, _topo in fams:
        doc.append("### %s\n" % name)
        doc.append("%d rows: %s geomean, worst %s.\n" % (
            len(rows), pct(geomean([r["error"] for r in rows])),
            pct(max(r["error"] for r in rows))))
        doc.append(table(["groups", "rows", "n", "k", "measured (us)", "model (us)", "error"],
                         [[r.get("active_experts") or r.get("active") or r.get("experts"),
                           r["rows"], r["n"], r["k"], "%.1f" % r["meas_us"], "%.1f" % r["pred_us"], _signed(r)]
                          for r in rows]))
    for title, rows in (("Routing kernels on H100 (" + ROUTE + ")", route),
                        ("The MoE decode step's parts on H200 (" + STEP + "/parts.csv, "
                         "4 layers)", parts)):
        doc.append("### %s\n" % title)
        doc.append(table(["model", "batch", "part", "measured (us)", "model (us)", "error"],
                         [[r["model"], r["batch"], r["part"], "%.1f" % r["meas_us"],
                           "%.1f" % r["pred_us"], _signed(r)] for r in rows]))
    doc.append("### TensorRT-LLM's MoE layer (%s)\n" % TRTLLM_OP)
    doc.append("TensorRT-LLM's `moe.forward` (CUTLASS backend, balanced routing, CUDA "
               "graph; NVIDIA AI Configurator's tables, its README) against the fused "
               "stack's kernels of the op in one decode step of `nvlemu run` at that many "
               "rows (EP 8: the batch of 8 attention-DP ranks), one layer's mean over the "
               "ranks, the router GEMM and the exchange left out.\n")
    doc.append(table(["gpu", "model", "dtype", "EP", "tokens", "rows an expert",
                      "measured (us)", "model (us)", "error"],
                     [[r["gpu"], r["model"], r["dtype"], r["ep"], r["tokens"],
                       r["rows_per_expert"], "%.1f" % r["meas_us"], "%.1f" % r["pred_us"],
                       _signed(r)] for op, _n, _h in trtllm for r in op]))
    doc.append("### MoE decode on H200, end to end (--stack compiled)\n")
    doc.append(table(["model", "layers", "batch", "ctx", "measured (us)", "predicted (us)",
                      "error"],
                     [[r["model"], r["layers"], r["batch"], r["ctx"], r["measured_us"],
                       "%.1f" % r["pred_us"], "%+.1f%%" % (100 * (r["pred_us"] /
                                                                  float(r["measured_us"]) - 1))]
                      for r in steps]))
    return doc


if __name__ == "__main__":
    # PYTHONPATH=scripts python3 -m nvlvalidation.moe [BUILD]: the
    # TensorRT-LLM MoE layer's rows and families alone
    import sys
    for op_rows, op_name, _held in _trtllm_op(sys.argv[1] if len(sys.argv) > 1 else "build"):
        for r in op_rows:
            print("%s %s %s EP %s, %s tokens (%s rows an expert): measured %.1f us, "
                  "model %.1f us, %s" % (r["gpu"], r["model"], r["dtype"], r["ep"],
                                         r["tokens"], r["rows_per_expert"], r["meas_us"],
                                         r["pred_us"], _signed(r)))
        print("%s: %d rows, geomean %s, worst %s" % (
            op_name, len(op_rows), pct(geomean([r["error"] for r in op_rows])),
            pct(max(r["error"] for r in op_rows))))
