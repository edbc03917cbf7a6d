"""The lent 4 x H100 on NVSwitch (tests/data/calibration/hgx-h100-x4): its
collectives, nccl-tests -g N, the engine all-reduce kernels, the torch
reference steps and the serving-like steps against the model, as summary
rows and the document's section."""
import csv
import json
import os

from .common import (E2E_TOPO, EMPTY_FAMILIES, H100, H100_TOPO, ROOT, die, e2e_table,
                     error, parallel, parallel_dict, pct, run, run_all, run_json_points,
                     table)
from .families import regions, summary_row
from .hgx_h200 import serve_doc as h200_serve_doc, serve_summary as h200_serve_summary
from .tools import end_to_end

HGX = "tests/data/calibration/hgx-h100-x4"
HGX_TOPO = "topology/hgx-h100.topo"
# the lent 4 x H200 (issue 31's generality check; nothing fit to it)
HGX_H200 = "tests/data/calibration/hgx-h200-x4"
HGX_H200_TOPO = "topology/hgx-h200-x4.topo"
# the serving-like steps on a lent 2 x H200 NV18 (issue 31; nothing fit to
# them), predicted on the H200 end-to-end topology as the torch steps are
H200_PAIR = "tests/data/calibration/h200-x2-serve"
H200_PAIR_TOPO = "topology/h200-nvl2.topo"   # its kernels alone: the pair's topology
# the stack of the serving-like steps: torch.compile'd layers (Inductor)
SERVE_STACK = "compiled"
HGX_OPS = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
           "sendrecv", "alltoall"]
# torch symmetric-memory kernels measured (symm.csv impl) -> nvlemu --impl
HGX_SYMM = [("one_shot_cudagraph", "oneshot"), ("two_shot_inplace_cudagraph", "twoshot")]
HGX_SYMM_PAIR = os.path.join(H100, "symm.csv")   # the 2 x H100 NV18 pair


def bench_rows(build, topo, n, op, extra, hi, env=None):
    """{size: predicted us} of build/bench/OP_perf at n ranks, sizes 8 B to
    HI, timing mode, bf16; EXTRA options after the defaults (-g N wins over
    the default -g 1); ENV as run() takes it.
    scripts/calibration/fit-hgx-small.py calls it too."""
    out = run([os.path.join(ROOT, "scripts", "nvlrun"), str(n),
               os.path.join(build, "bench", op + "_perf"), "-g", "1", "--topo",
               os.path.join(ROOT, topo), "-b", "8", "-e", hi, "-f", "2",
               "--mode", "timing", "-d", "bfloat16"] + extra, env)
    pred = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 9 and f[0].isdigit() and int(f[0]) > 0:
            pred[int(f[0])] = float(f[5])
    return pred


def _symm_rows(build, path, topo):
    """The measured engine all-reduce kernels of PATH (CUDA-graph replays)
    against all_reduce_perf --impl oneshot|twoshot -G 20 (the host's launch
    paid once per 20 calls, as the replay of 100 calls pays it once)."""
    meas = {}
    with open(os.path.join(ROOT, path)) as f:
        for r in csv.DictReader(f):
            meas[(int(r.get("gpus") or 2), r["impl"], int(r["size_bytes"]))] = \
                float(r["time_us"])
    rows = []
    cases = [(n, impl, ours) for n in sorted({k[0] for k in meas}) for impl, ours in HGX_SYMM]
    preds = parallel(lambda c: bench_rows(build, topo, c[0], "all_reduce",
                                          ["--impl", c[2], "-G", "20"], "64M"), cases)
    for (n, impl, ours), pred in zip(cases, preds):
        for (g, i, size), m in sorted(meas.items()):
            if g == n and i == impl and size in pred:
                rows.append(dict(gpus=n, impl=ours, size=size, meas=m,
                                 pred=pred[size], error=error(pred[size], m)))
    return rows


# what an answer must share with the serving-like steps to be covered by them
COMPILED = {"stack": "compiled"}


def _decode_regions(rows, topo):
    """The decode region of serving-like step rows on TOPO: their TP
    degrees and batches (sequences), as the HGX H200 families give theirs."""
    return regions([dict(r, ranks=int(r["tp"])) for r in rows], "decode", topo,
                   size_key="batch", unit="sequences")


def _serve_rows(build, name, known=None, data=HGX, topo=HGX_TOPO):
    """The serving-like steps of DATA/NAME (Inductor-compiled layers, CUDA
    graph, the all-reduce by NCCL or torch symmetric memory) against
    nvlemu run --stack compiled --allreduce nccl|oneshot|twoshot on TOPO;
    a case already predicted in KNOWN (rows of another file) is not rerun."""
    preds = {(r["model"], r["layers"], r["tp"], r["allreduce"], r["batch"], r["ctx"]):
             r["pred_us"] for r in known or []}
    with open(os.path.join(ROOT, data, name)) as f:
        src = list(csv.DictReader(f))
    cmds = {}
    for n, r in enumerate(src, start=2):
        ar = {"none": "nccl"}.get(r["allreduce"], r["allreduce"])
        if ar not in ("nccl", "oneshot", "twoshot"):
            die("%s/%s:%d: allreduce '%s'" % (data, name, n, r["allreduce"]))
        key = (r["model"], r["layers"], r["tp"], r["allreduce"], r["batch"], r["ctx"])
        if key not in preds:
            cmds[key] = [os.path.join(ROOT, "scripts", "nvlrun"), r["tp"],
                         os.path.join(build, "nvlemu"), "run", "--topo", topo,
                         "--model", r["model"], "--layers", r["layers"],
                         "--stack", SERVE_STACK, "--allreduce", ar,
                         "--batch", r["batch"], "--ctx", r["ctx"], "--json", "-"]
    for key, out in zip(cmds, run_json_points(list(cmds.values()))):
        preds[key] = 1e3 * float(json.loads(out)["tpot_ms"])
    rows = []
    for r in src:
        pred = preds[(r["model"], r["layers"], r["tp"], r["allreduce"], r["batch"], r["ctx"])]
        rows.append(dict(r, pred_us=pred, error=error(pred, float(r["measured_us"]))))
    return rows


def _ratios(serve):
    """Each engine kernel's step time over NCCL's for the same case,
    measured and predicted."""
    by = {(r["model"], r["tp"], r["batch"], r["allreduce"]): r for r in serve}
    out = []
    for (model, tp, batch, ar), r in sorted(by.items()):
        base = by.get((model, tp, batch, "nccl"))
        if ar in ("oneshot", "twoshot") and base is not None:
            m = float(r["measured_us"]) / float(base["measured_us"])
            p = r["pred_us"] / base["pred_us"]
            out.append(dict(model=model, tp=tp, batch=batch, ar=ar, meas=m, pred=p,
                            error=error(p, m)))
    return out



# colls.csv's two timings of one call as the benches' options: torch's eager
# call back to back (torch.distributed's host path per call, [nccl]
# torch_call, bounds the loop: --caller torch) and the replay of torch's
# CUDA graph of 100 calls (no host path: each call's eager device time,
# --caller torch -G 100; the default -g 1 bench is nccl-tests' own loop,
# harness (a))
COLL_HARNESS = (("eager", ["--caller", "torch"]),
                ("CUDA graph", ["--caller", "torch", "-G", "100"]))
# colls.csv's sendrecv: dist.send 0 -> 1 and dist.recv, the other members
# idle, on the job's N-rank communicator (the NCCL logs of its passes hold
# that one communicator only), not nccl-tests' ring shift
COLL_OP_OPTIONS = {"sendrecv": ["--pattern", "one-way"]}


def _colls(build, data=HGX, topo=HGX_TOPO):
    """The seven collectives at 2, 3 and 4 ranks (DATA/colls.csv) on TOPO,
    the lower of the eager call and the CUDA-graph replay, each predicted
    under its own harness (COLL_HARNESS) and the lower of the predictions
    of the harnesses measured compared (send/recv has eager rows only: its
    calls are torch's point-to-point path, host-bound below ~1 MB)."""
    meas = {}
    with open(os.path.join(ROOT, data, "colls.csv")) as f:
        for r in csv.DictReader(f):
            if r["algo"] == "default":
                meas[(int(r["gpus"]), r["op"], int(r["size_bytes"]))] = float(r["time_us"])
    coll = []
    cases = [(n, op, how) for n in (2, 3, 4) for op in HGX_OPS for how, _ in COLL_HARNESS]
    extra = dict(COLL_HARNESS)
    preds = dict(zip(cases, parallel(
        lambda c: bench_rows(build, topo, c[0], c[1],
                             extra[c[2]] + COLL_OP_OPTIONS.get(c[1], []), "4G"), cases)))
    for n, op, how in cases:
        if how != COLL_HARNESS[0][0]:
            continue
        for size in sorted(preds[(n, op, how)]):
            keys = (((n, op, size), "eager"), ((n, op + "_cudagraph", size), "CUDA graph"))
            got = [(meas[k], h) for k, h in keys if k in meas and size in preds[(n, op, h)]]
            if got:
                m, how_m = min(got)
                p = min(preds[(n, op, h)][size] for _, h in got)
                coll.append(dict(gpus=n, op=op, size=size, how=how_m, meas=m, pred=p,
                                 error=error(p, m)))
    if not coll:
        die("no rows in " + data)
    return coll


def _g_colls(build, graph="0"):
    """nccl-tests itself, one process driving N GPUs (-g N), eager (GRAPH
    "0") or GRAPH calls per CUDA graph launch (-G GRAPH: the kernels' own
    time, no host floor), the second pass where it has one (more
    warm-up)."""
    gmeas = {}
    with open(os.path.join(ROOT, HGX, "nccl-tests-g.csv")) as f:
        for r in csv.DictReader(f):
            if r["graph"] == graph and r["place"] == "oop" and r["algo"] == "default":
                key = (int(r["gpus"]), r["op"], int(r["size_bytes"]))
                if key not in gmeas or r["pass"] == "2":
                    gmeas[key] = float(r["time_us"])
    gcoll = []
    cases = [(n, op) for n in sorted({k[0] for k in gmeas})
             for op in sorted({k[1] for k in gmeas if k[0] == n})]
    extra = [] if graph == "0" else ["-G", graph]
    preds = parallel(lambda c: bench_rows(build, HGX_TOPO, c[0], c[1],
                                          ["-g", str(c[0])] + extra, "4G"), cases)
    for (n, op), pred in zip(cases, preds):
        for size, p in sorted(pred.items()):
            if (n, op, size) in gmeas:
                m = gmeas[(n, op, size)]
                gcoll.append(dict(gpus=n, op=op, size=size, meas=m, pred=p,
                                  error=error(p, m)))
    return gcoll


# nccl-harness.csv's harnesses as the *_perf benches' options: (a) mpirun
# -np N, one process per GPU, eager (the default -g 1 loop,
# nvl_coll_process_loop_time_ps); (c) one process -g N -G 20, the kernels
# alone (the README there; (b) and (d) are the other two pairings)
HARNESS = {"a": ("mpirun -np N (one process per GPU), eager", lambda n: []),
           "c": ("-g N -G 20 (CUDA graph)", lambda n: ["-g", str(n), "-G", "20"])}


def _harness_rows(build):
    """The lent 4 x H200's nccl-tests under harnesses (a) and (c), Ring,
    NVLS off (HGX_H200/nccl-harness.csv, the lower of the out-of-place and
    in-place times, as the pair's nccl-tests families compare: the bench
    predicts one time for both, and 5 of the 180 pairs have one of the two
    4-16 x the other, a stall of the host) against the benches
    on HGX_H200_TOPO with the same options."""
    meas = {}
    with open(os.path.join(ROOT, HGX_H200, "nccl-harness.csv")) as f:
        for r in csv.DictReader(f):
            if r["harness"] in HARNESS and r["place"] in ("oop", "ip"):
                k = (r["harness"], int(r["gpus"]), r["op"], int(r["size_bytes"]))
                meas[k] = min(meas.get(k, float("inf")), float(r["time_us"]))
    env = dict(os.environ, NCCL_ALGO="Ring", NCCL_NVLS_ENABLE="0", **EMPTY_FAMILIES)
    cases = sorted({k[:3] for k in meas})
    preds = parallel(lambda c: bench_rows(build, HGX_H200_TOPO, c[1], c[2],
                                          HARNESS[c[0]][1](c[1]), "16M", env), cases)
    return [dict(harness=h, gpus=n, op=op, size=size, meas=meas[(h, n, op, size)], pred=p,
                 error=error(p, meas[(h, n, op, size)]))
            for (h, n, op), pred in zip(cases, preds) for size, p in sorted(pred.items())
            if (h, n, op, size) in meas]


def _harness_summary(rows):
    """One held-out family per harness and GPU count (nothing fit to them)."""
    return [summary_row(
        "held-out machine: nccl-tests %s, Ring, %d GPUs on HGX H200" % (HARNESS[h][0], n),
        [r["error"] for r in sel], HGX_H200 + "/nccl-harness.csv", held_out=True,
        where=regions(sel, topo="hgx-h200-x4", cls_key="op"))
        for h in sorted(HARNESS) for n in sorted({r["gpus"] for r in rows})
        for sel in [[dict(r, ranks=n) for r in rows if r["harness"] == h and r["gpus"] == n]]
        if sel]


def hgx_h100(build, steps=True):
    """(summary rows, document sections) of the HGX H100 x4 families; the
    step families (minutes of emulation) only with STEPS."""
    def serve(data=HGX, topo=HGX_TOPO):
        if not steps:
            return [], []
        first = _serve_rows(build, "serve-steps.csv", data=data, topo=topo)
        return first, _serve_rows(build, "serve-steps-repeat.csv", first, data, topo)
    tps = (1, 2, 4) if steps else ()
    d = parallel_dict({
        "coll": lambda: _colls(build), "gcoll": lambda: _g_colls(build),
        "gcoll_graph": lambda: _g_colls(build, "20"),
        "harness_h200": lambda: _harness_rows(build),
        "coll_h200": lambda: _colls(build, HGX_H200, HGX_H200_TOPO),
        "symm_pair": lambda: _symm_rows(build, HGX_SYMM_PAIR, H100_TOPO),
        "symm": lambda: _symm_rows(build, os.path.join(HGX, "symm.csv"), HGX_TOPO),
        "symm_h200": lambda: _symm_rows(build, os.path.join(HGX_H200, "symm.csv"),
                                        HGX_H200_TOPO),
        "symm_h200_pair": lambda: _symm_rows(build, os.path.join(H200_PAIR, "alone-symm.csv"),
                                             H200_PAIR_TOPO),
        "e2e": lambda: dict(zip(tps, parallel(
            lambda tp: end_to_end(build, os.path.join(HGX, "steps-tp%d.csv" % tp), "torch",
                                  HGX_TOPO), tps))),
        "serve": serve, "pair": lambda: serve(H200_PAIR, E2E_TOPO),
        "h200": lambda: serve(HGX_H200, HGX_H200_TOPO)})
    d["serve"], d["serve_rep"] = d["serve"]
    d["ratios"], d["ratios_rep"] = _ratios(d["serve"]), _ratios(d["serve_rep"])
    h200 = [(rows, _ratios(rows)) for rows in d["h200"]]
    summary = (_coll_summary(d) + _harness_summary(d["harness_h200"]) +
               _step_summary(d, steps) + _pair_summary(d["pair"]) +
               h200_serve_summary(h200))
    doc = _coll_doc(d)
    if steps:
        doc += _step_doc(d) + _pair_doc(d["pair"]) + h200_serve_doc(h200)
    return summary, doc


def _pair_summary(pair):
    """The held-out families of the 2 x H200 pair's serving-like steps:
    each all-reduce's steps, then each engine kernel's step over NCCL's,
    in the first run and the repeat."""
    summary = []
    for tag, rows, name in (("", pair[0], "serve-steps.csv"),
                            (", repeat run", pair[1], "serve-steps-repeat.csv")):
        for ar in ("nccl", "oneshot", "twoshot"):
            errs = [r["error"] for r in rows if r["allreduce"] == ar]
            if errs:
                summary.append(summary_row(
                    "held-out machine, serving-like decode on 2 x H200 NV18, TP 2, all-reduce "
                    "%s%s (--stack compiled)" % (ar, tag), errs, H200_PAIR + "/" + name,
                    held_out=True, attributes=COMPILED,
                    where=_decode_regions([r for r in rows if r["allreduce"] == ar],
                                          "h200-nvl2")))
        ratios = _ratios(rows)
        for ar in ("oneshot", "twoshot"):
            errs = [r["error"] for r in ratios if r["ar"] == ar]
            if errs:
                summary.append(summary_row(
                    "held-out machine, %s step / NCCL step on 2 x H200 NV18, TP 2%s"
                    % (ar, tag), errs, H200_PAIR + "/" + name, held_out=True))
    return summary


def _pair_doc(pair):
    """The 2 x H200 pair's serving-like steps and their ratios."""
    first, rep = pair
    if not first:
        return []
    doc = ["### Serving-like decode on 2 x H200 NV18, TP 2 (%s, held out)\n" % E2E_TOPO,
           "A lent 2 x H200 (NV18; " + H200_PAIR + "/README.md), the harness of the HGX "
           "H100 steps above (`measure-hgx.sh serve`), two runs on one machine a minute "
           "apart; nothing was fit to them.\n"]
    rmeas = {(r["model"], r["batch"], r["allreduce"]): r["measured_us"] for r in rep}
    doc.append(table(["model", "layers", "all-reduce", "batch", "ctx", "measured (us)",
                      "repeat (us)", "predicted (us)", "error"],
                     [[r["model"], r["layers"], r["allreduce"], r["batch"], r["ctx"],
                       r["measured_us"], rmeas.get((r["model"], r["batch"], r["allreduce"]), "-"),
                       "%.1f" % r["pred_us"], pct(r["error"])] for r in first]))
    rrat = {(r["model"], r["batch"], r["ar"]): r for r in _ratios(rep)}
    doc.append(table(["model", "batch", "kernel", "measured ratio", "repeat ratio",
                      "predicted ratio", "error"],
                     [[r["model"], r["batch"], r["ar"], "%.3f" % r["meas"],
                       "%.3f" % rrat[k]["meas"] if k in rrat else "-", "%.3f" % r["pred"],
                       pct(r["error"])]
                      for r in _ratios(first) for k in [(r["model"], r["batch"], r["ar"])]]))
    return doc


def _coll_summary(d):
    """The summary rows of the collectives, nccl-tests -g N and the engine
    kernels."""
    summary = []
    # hgx-h100.topo's hop_lat is fit to the 2-GPU colls.csv rows below 1 MB
    # and its [nccl] launch_overhead to the -g 2 rows below 1 MB
    # (scripts/calibration/fit-hgx-small.py): those two families are fit
    # data, every other one here is held out
    for n in (2, 3, 4):
        for tag, keep in ((">= 1 MB", lambda s: s >= (1 << 20)),
                          ("< 1 MB", lambda s: s < (1 << 20))):
            rows = [dict(r, ranks=n) for r in d["coll"] if r["gpus"] == n and keep(r["size"])]
            fit = n == 2 and tag == "< 1 MB"
            summary.append(summary_row(
                "%s: collectives on HGX H100, %d GPUs (NVSwitch), %s"
                % ("HGX H100 (fit: hop_lat)" if fit else "held-out machine", n, tag),
                [r["error"] for r in rows], HGX, held_out=not fit,
                where=regions(rows, topo="hgx-h100", cls_key="op")))
    for n in (2, 3, 4):
        for tag, keep in ((">= 1 MB", lambda s: s >= (1 << 20)),
                          ("< 1 MB", lambda s: s < (1 << 20))):
            rows = [dict(r, ranks=n) for r in d["coll_h200"]
                    if r["gpus"] == n and keep(r["size"])]
            summary.append(summary_row(
                "held-out machine: collectives on HGX H200, %d GPUs (NVSwitch), %s"
                % (n, tag), [r["error"] for r in rows], HGX_H200, held_out=True,
                where=regions(rows, topo="hgx-h200-x4", cls_key="op")))
    gcoll = d["gcoll"]
    for n in sorted({r["gpus"] for r in gcoll}):
        for tag, keep in ((">= 1 MB", lambda s: s >= (1 << 20)),
                          ("< 1 MB", lambda s: s < (1 << 20))):
            rows = [dict(r, ranks=n) for r in gcoll if r["gpus"] == n and keep(r["size"])]
            fit = n == 2 and tag == "< 1 MB"
            summary.append(summary_row(
                "%s: nccl-tests -g %d on HGX H100 (one process), %s"
                % ("HGX H100 (fit: [nccl] launch_overhead)" if fit else "held-out machine",
                   n, tag), [r["error"] for r in rows], HGX + "/nccl-tests-g.csv",
                held_out=not fit, where=regions(rows, topo="hgx-h100", cls_key="op")))
    # -G 20: the NCCL kernels alone (CUDA-graph launches of 20 calls), all_reduce
    for n in sorted({r["gpus"] for r in d["gcoll_graph"]}):
        rows = [dict(r, ranks=n) for r in d["gcoll_graph"] if r["gpus"] == n]
        summary.append(summary_row(
            "held-out machine: nccl-tests -g %d -G 20 (CUDA graph) on HGX H100" % n,
            [r["error"] for r in rows], HGX + "/nccl-tests-g.csv", held_out=True,
            where=regions(rows, topo="hgx-h100", cls_key="op")))
    for impl in ("oneshot", "twoshot"):
        summary.append(summary_row(
            "engine all_reduce %s (torch symm-mem) on 2 x H100 NV18, CUDA graph" % impl,
            [r["error"] for r in d["symm_pair"] if r["impl"] == impl], HGX_SYMM_PAIR))
        for n in (2, 3, 4):
            rows = [dict(r, ranks=n) for r in d["symm"]
                    if r["impl"] == impl and r["gpus"] == n]
            summary.append(summary_row(
                "held-out machine: engine all_reduce %s on HGX H100, %d GPUs, CUDA graph"
                % (impl, n), [r["error"] for r in rows], HGX + "/symm.csv", held_out=True,
                where=regions(rows, "allreduce-" + impl, "hgx-h100")))
        for n in (2, 3, 4):
            rows = [dict(r, ranks=n) for r in d["symm_h200"]
                    if r["impl"] == impl and r["gpus"] == n]
            summary.append(summary_row(
                "held-out machine: engine all_reduce %s on HGX H200, %d GPUs, CUDA graph"
                % (impl, n), [r["error"] for r in rows], HGX_H200 + "/symm.csv",
                held_out=True, where=regions(rows, "allreduce-" + impl, "hgx-h200-x4")))
        rows = [dict(r, ranks=2) for r in d["symm_h200_pair"] if r["impl"] == impl]
        summary.append(summary_row(
            "held-out machine: engine all_reduce %s on 2 x H200 NV18, CUDA graph" % impl,
            [r["error"] for r in rows], H200_PAIR + "/alone-symm.csv", held_out=True,
            where=regions(rows, "allreduce-" + impl, "h200-nvl2")))
    return summary


def _step_summary(d, steps):
    """The summary rows of the torch reference steps, the serving-like steps
    and the engine kernels' step ratios."""
    summary, serve = [], d["serve"]
    for tp, e in d["e2e"].items():
        for phase, rows in e.items():
            summary.append(summary_row("held-out machine, end to end on HGX H100, TP %d: "
                                       "%s (--stack torch)" % (tp, phase),
                                       [r["error"] for r in rows],
                                       HGX + "/steps-tp%d.csv" % tp, held_out=True,
                                       attributes={"stack": "torch"},
                                       where=regions(rows, phase, "hgx-h100", tp,
                                                     size_key="batch", unit="sequences")))
    for tp in (1, 2, 4):
        for ar in ("none", "nccl", "oneshot", "twoshot"):
            errs = [r["error"] for r in serve if int(r["tp"]) == tp and r["allreduce"] == ar]
            if errs:
                summary.append(summary_row(
                    "held-out machine, serving-like decode on HGX H100, TP %d, all-reduce "
                    "%s (--stack compiled)" % (tp, ar), errs, HGX + "/serve-steps.csv",
                    attributes=COMPILED,
                    where=_decode_regions([r for r in serve if int(r["tp"]) == tp and
                                           r["allreduce"] == ar], "hgx-h100")))
    for tp in ((2, 4) if steps else ()):
        rep = [r for r in d["serve_rep"] if int(r["tp"]) == tp]
        summary.append(summary_row(
            "held-out machine, serving-like decode on HGX H100, TP %d, repeat run, all "
            "three all-reduces (--stack compiled)" % tp, [r["error"] for r in rep],
            HGX + "/serve-steps-repeat.csv", attributes=COMPILED,
            where=_decode_regions(rep, "hgx-h100")))
    # the engine kernels' gain over NCCL: measured and predicted step ratios
    for tag, rs, path in (("", d["ratios"], "serve-steps.csv"),
                          (", repeat run", d["ratios_rep"],
                           "serve-steps-repeat.csv"))[:2 * steps]:
        for tp in ("2", "4"):
            for ar in ("oneshot", "twoshot"):
                summary.append(summary_row(
                    "held-out machine, %s step / NCCL step on HGX H100, TP %s%s"
                    % (ar, tp, tag),
                    [r["error"] for r in rs if r["tp"] == tp and r["ar"] == ar],
                    HGX + "/" + path))
    return summary



def _coll_doc(d):
    """The section's head, its collectives and engine kernels and the torch
    reference steps."""
    doc = []
    doc.append("## Held-out machine: HGX H100, 2-4 GPUs on NVSwitch (%s)\n" % HGX_TOPO)
    doc.append("The lent 4 x H100 SXM (every pair NV18 through NVSwitch, NVLink multicast "
               "off; " + HGX + "/README.md), measured with `scripts/device/measure-hgx.sh`, "
               "predicted on `" + HGX_TOPO + "`, whose NVLink and NCCL constants are "
               "h100-nvl2.topo's (the H200 pair's fit) except two fit to this machine's "
               "2-GPU rows below 1 MB (`scripts/calibration/fit-hgx-small.py`): `hop_lat` "
               "on the collectives below, `[nccl] launch_overhead` on nccl-tests -g 2; the "
               "3- and 4-GPU rows, -g 3 and -g 4 and every step are their check. "
               "Collectives: torch.distributed + "
               "NCCL 2.28.9, one process per GPU, bf16, NCCL's own choice, the lower of the "
               "eager call and the CUDA-graph replay (as for the pair above), against the "
               "lower of the benches' predictions under the same two harnesses (eager: "
               "`--caller torch`, torch's host path per call; graph: `--caller torch -G 100`, "
               "each call its eager device time); "
               "sendrecv, eager only (torch's point-to-point path, host-bound below ~1 "
               "MB), was measured 0 -> 1 only (the others idle, on the N-rank communicator: "
               "NCCL's channels per peer follow N), predicted by `sendrecv_perf --pattern "
               "one-way`. Engine kernels: "
               "torch symmetric memory's one-shot and in-place two-shot, CUDA-graph "
               "replays, against `all_reduce_perf --impl oneshot|twoshot -G 20`. Time per "
               "call in us.\n")
    doc.append("### Collectives\n")
    doc.append(table(["GPUs", "collective", "size (B)", "timing", "measured us",
                      "predicted us", "error"],
                     [[r["gpus"], r["op"], r["size"], r["how"], "%.1f" % r["meas"],
                       "%.1f" % r["pred"], pct(r["error"])] for r in d["coll"]]))
    doc.append("### Collectives on HGX H200 (%s, held out)\n" % HGX_H200_TOPO)
    doc.append("The lent 4 x H200 (" + HGX_H200 + "/README.md), the same harness and "
               "NCCL, predicted on a topology that carries this section's H100 constants "
               "with the H200's memory; nothing was fit to it.\n")
    doc.append(table(["GPUs", "collective", "size (B)", "timing", "measured us",
                      "predicted us", "error"],
                     [[r["gpus"], r["op"], r["size"], r["how"], "%.1f" % r["meas"],
                       "%.1f" % r["pred"], pct(r["error"])] for r in d["coll_h200"]]))
    doc.append("### Engine all-reduce kernels\n")
    doc.append(table(["machine", "GPUs", "kernel", "size (B)", "measured us",
                      "predicted us", "error"],
                     [[w, r["gpus"], r["impl"], r["size"], "%.1f" % r["meas"],
                       "%.1f" % r["pred"], pct(r["error"])]
                      for w, rs in (("2 x H100 NV18", d["symm_pair"]),
                                    ("HGX H100", d["symm"]), ("HGX H200", d["symm_h200"]),
                                    ("2 x H200 NV18", d["symm_h200_pair"]))
                      for r in rs]))
    for tp, e in d["e2e"].items():
        for phase, rows in e.items():
            doc.append("### %s on HGX H100, TP %d (--stack torch)\n" % (phase, tp))
            doc.append(e2e_table(rows))
    return doc


def _step_doc(d):
    """The serving-like steps and the engine kernels' step ratios."""
    doc = []
    doc.append("### Serving-like decode on HGX H100 (--stack compiled)\n")
    doc.append("Inductor-compiled layers in a CUDA graph (`measure-steps.py --serve`), "
               "the all-reduce by NCCL or torch symmetric memory's one-shot / two-shot "
               "(`none` at TP 1, predicted with nccl, which a single rank never calls).\n")
    doc.append(table(["model", "layers", "TP", "all-reduce", "batch", "ctx",
                      "measured (us)", "predicted (us)", "error"],
                     [[r["model"], r["layers"], r["tp"], r["allreduce"], r["batch"],
                       r["ctx"], r["measured_us"], "%.1f" % r["pred_us"], pct(r["error"])]
                      for r in d["serve"]]))
    doc.append("### Engine kernel step / NCCL step\n")
    doc.append("The same ratio in the first run (serve-steps.csv) and in a repeat on "
               "another lent machine (serve-steps-repeat.csv, TP 2 alone on two GPUs, then "
               "TP 4): the engine kernels' steps were 4-10 % faster in the repeat, NCCL's "
               "1-5 %, so the measured gain over NCCL moves by about 5 % between runs.\n")
    rep = {(r["model"], r["tp"], r["batch"], r["ar"]): r for r in d["ratios_rep"]}
    doc.append(table(["model", "TP", "batch", "kernel", "measured ratio",
                      "repeat ratio", "predicted ratio", "error", "error (repeat)"],
                     [[r["model"], r["tp"], r["batch"], r["ar"], "%.3f" % r["meas"],
                       "%.3f" % rep[k]["meas"] if k in rep else "-", "%.3f" % r["pred"],
                       pct(r["error"]), pct(rep[k]["error"]) if k in rep else "-"]
                      for r in d["ratios"]
                      for k in [(r["model"], r["tp"], r["batch"], r["ar"])]]))
    return doc
