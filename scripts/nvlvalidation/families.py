"""The families: each summary row with its scope (where its rows lie, the
attributes an answer must share, held out or not), the summary of every
source but the HGX H100's, and FAMILIES, the file nvlemu reads."""
import json
import os
import re

from .common import (C2C_COPIES, COLL_SOURCE, COMPUTE_SOURCE, E2E_TOPO, GEMMS, H100,
                     SCALED_MM,
                     H100_STEPS, H100_TOPO, H100_TP2_STEPS, PUBLISHED_NCCL, PUBLISHED_SOURCE,
                     SERVING, geomean, pct, topo_name)
from .nccl import nccl_families


def regions(rows, cls=None, topo=None, ranks=None, size_key="size", cls_key=None,
            unit="bytes"):
    """Where a family's rows lie: one region per (class, hardware, ranks)
    with the sizes its rows span (None: the rows carry no size), from the
    rows' own keys (cls_key, topo or topology, ranks or tp, size_key), else
    the arguments.  Sizes are in the class's unit: bytes for collectives
    and copies, FLOPs for gemm, sequences (batch) for decode and prefill
    steps."""
    out = {}
    for r in rows:
        c = r.get(cls_key) if cls_key else cls
        hw = topo_name(str(r.get("topo") or r.get("topology") or topo or ""))
        n = int(r.get("ranks") or r.get("tp") or ranks or 0)
        size = r.get(size_key)
        reg = out.setdefault((c, hw, n), {"class": c, "hardware": hw, "ranks": [n, n],
                                          "sizes": None, "size_unit": unit})
        if size is not None:
            v = float(size)
            reg["sizes"] = [v, v] if reg["sizes"] is None else [min(reg["sizes"][0], v),
                                                                 max(reg["sizes"][1], v)]
    return [r for r in out.values() if r["class"] and r["hardware"] and r["ranks"][0] > 0]


def record(family, n, geo, worst, source, held_out=False, attributes=None, where=None):
    """One summary row with its scope: where its rows lie (regions()), the
    attributes an answer must share to be covered (such as {"stack":
    "torch"}) and whether nothing was fit to it (held_out)."""
    return {"family": family, "comparisons": n, "geomean_error": geo, "worst_error": worst,
            "source": source, "held_out": bool(held_out),
            "attributes": dict(attributes or {}), "regions": list(where or [])}


def summary_row(family, errors, source, **scope):
    if not errors:
        return record(family, 0, None, None, source, **scope)
    return record(family, len(errors), geomean(errors), max(errors), source, **scope)


def tool_row(family, summary, source, **scope):
    n, geo, worst = summary
    return record(family, n, geo, worst, source, **scope)


def as_record(row):
    """A summary row as a record (a plain list row covers nothing)."""
    if isinstance(row, dict):
        return row
    family, n, geo, worst, source = row
    num = lambda x: None if x in ("-", None) else float(str(x).rstrip("%")) / 100
    return record(family, n, num(geo), num(worst), source)


def summary_cells(rec):
    geo, worst = rec["geomean_error"], rec["worst_error"]
    return [rec["family"], rec["comparisons"], "-" if geo is None else pct(geo),
            "-" if worst is None else pct(worst), "yes" if rec["held_out"] else "",
            rec["source"]]


def write_families(path, summary):
    """FAMILIES: every summary row with its scope, for nvlemu's provenance."""
    doc = {"generated_by": "scripts/validation-report",
           "error": "max(pred/meas, meas/pred) - 1; geomean exp(mean log(1 + error)) - 1",
           "families": [as_record(r) for r in summary]}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def absent(steps):
    """The note for a missing STEPS, naming it without citing a path that
    does not exist (scripts/check-doc-refs)."""
    return "no %s in %s yet" % (os.path.join(os.path.basename(os.path.dirname(steps)),
                                             os.path.basename(steps)),
                                os.path.dirname(os.path.dirname(steps)) or ".")


NCCL_NAMES = {"AllReduce": "all_reduce", "AllGather": "all_gather",
              "ReduceScatter": "reduce_scatter", "Broadcast": "broadcast",
              "Reduce": "reduce", "AllToAll": "alltoall", "SendRecv": "sendrecv"}
GEMM_SHAPE = re.compile(r"\bm=(\d+) n=(\d+) k=(\d+)\b")


def gemm_flops(kernel):
    """2 m n k of a compute row's label ("qkv m=1 n=4608 k=3584 bf16"),
    None for a row that is not a GEMM."""
    m = GEMM_SHAPE.search(kernel)
    return m and 2.0 * int(m.group(1)) * int(m.group(2)) * int(m.group(3))




def summary(res):
    """Every summary row of RES (the sources' results, a namespace as
    scripts/validation-report's main fills it), in the document's order."""
    rows = (_measured_rows(res) + _run_rows(res) + res.aic[0] + res.prefill[0]
            + res.moe[0] + res.aic_kernels[0])
    if res.hgx is not None:
        rows += res.hgx[0]
    return rows


def _measured_rows(res):
    """The rows of the bench tools, the published bandwidths and rates and
    the 2 x H100 pair."""
    summary = []
    for name, (counts, rows) in res.colls.items():
        summary.append(tool_row("collectives: %s on h200-nvl2" % name, counts, COLL_SOURCE,
                                where=regions(rows, NCCL_NAMES[name], "h200-nvl2", 2)))
    for name, counts, rows in res.classes:
        cls = name.split()[0].rstrip(",").replace("element-wise", "elementwise")
        sized = [dict(r, size=gemm_flops(r["kernel"])) for r in rows]
        summary.append(tool_row("compute: " + name, counts, COMPUTE_SOURCE,
                                held_out="(check)" in name,
                                attributes={"library": "cublaslt"} if cls == "gemm" else None,
                                where=regions(sized, cls, "h200-nvl2", 1, unit="FLOP")))
    summary.append(summary_row("published all_reduce bus bandwidths",
                               [r["error"] for r in res.published], PUBLISHED_SOURCE,
                               where=regions(res.published, "all_reduce")))
    summary.append(summary_row("published one-sided all-to-all bandwidths",
                               [r["error"] for r in res.a2a], PUBLISHED_SOURCE,
                               where=regions(res.a2a, "alltoall-onesided")))
    summary.append(summary_row("published NVLink-C2C copy bandwidths",
                               [r["error"] for r in res.copies], C2C_COPIES, held_out=True,
                               where=regions(res.copies, "copy-c2c", ranks=1,
                                             size_key="size_bytes")))
    gemms = res.gemms
    for lib, dt, role in sorted({(r["library"], r["dtype"], r["role"]) for r in gemms}):
        rows = [r for r in gemms if (r["library"], r["dtype"], r["role"]) == (lib, dt, role)]
        summary.append(summary_row("published GEMM rates: %s %s (%s)" % (lib, dt, role),
                                   [r["error"] for r in rows], GEMMS,
                                   held_out=role == "check",
                                   attributes={"library": lib, "dtype": dt},
                                   where=regions(rows, "gemm", unit="FLOP")))
    for scaling in ("tensor", "row"):
        rows = [r for r in res.scaled if r["scaling"] == scaling]
        summary.append(summary_row("H200 FP8 GEMMs: torch._scaled_mm, %swise scales (check)"
                                   % scaling, [r["error"] for r in rows], SCALED_MM,
                                   held_out=True,
                                   attributes={"library": "cublaslt",
                                               "dtype": rows[0]["dtype"] if rows else ""},
                                   where=regions(rows, "gemm", unit="FLOP")))
    for big in (True, False):
        rows = [r for r in res.h100 if (r["size"] >= (1 << 20)) == big]
        summary.append(summary_row("held-out machine: collectives on 2 x H100 NV18, %s 1 MB"
                                   % (">=" if big else "<"), [r["error"] for r in rows],
                                   H100, held_out=True,
                                   where=regions(rows, topo="h100-nvl2", ranks=2,
                                                 cls_key="op")))
    return summary


SCHEDULER_NAMES = {"trtllm": "TensorRT-LLM", "vllm": "vLLM"}


def serving_families(serves):
    """[(name, rows)]: the serving rows by scheduler, model class and role
    (fit or held out), in the order they first appear."""
    out = {}
    for r in serves:
        # rows whose host's device rate is fit (a --set of its GPU's clock,
        # docs/serve.md "The lab host's device rate") are a family of their
        # own, named so: their error is the model's given that rate
        host = "clock_scale" in r.get("options", "")
        out.setdefault((r["scheduler"], r["class"], r["role"], host), []).append(r)
    return [("published serving throughputs (%s, %s%s%s)"
             % (SCHEDULER_NAMES[sch], cls,
                ", the lab host's device rate fit" if host else "",
                "" if role == "held-out" else ", fit"), rows)
            for (sch, cls, role, host), rows in out.items()]


def _run_rows(res):
    """The rows of the published nccl-tests, the serving throughputs and the
    end-to-end steps."""
    summary, nccl = [], res.nccl
    for f in nccl_families(nccl or []):
        rows = [dict(r, ranks=r["gpus"]) for r in nccl
                if (r["system"], r["collective"], r["nvls"], r["role"]) ==
                (f["hardware"], f["collective"], f["nvls"], f["role"])]
        summary.append(summary_row("published nccl-tests (%s): %s" % (f["role"], f["family"]),
                                   [r["error"] for r in rows], PUBLISHED_NCCL,
                                   held_out=f["role"] == "held-out",
                                   where=regions(rows, f["collective"])))
    for name, rows in serving_families(res.serves or []):
        # a served answer shares the family's scheduler and model class
        # (src/cli/serve_report.c's query): a MoE serve is not covered by
        # the dense rows of the same GPUs
        summary.append(summary_row(name, [r["error"] for r in rows], SERVING,
                                   held_out=rows[0]["role"] == "held-out",
                                   attributes={"stack": "fused",
                                               "scheduler": rows[0]["scheduler"],
                                               "model_class": rows[0]["class"]},
                                   where=regions(rows, "serving", size_key=None)))
    stack = res.stack
    if res.e2e is None:
        summary.append(["end to end (decode, prefill)", 0, "-", "-", absent(res.steps)])
    else:
        for phase, rows in res.e2e.items():
            summary.append(summary_row("end to end: %s (--stack %s)" % (phase, stack),
                                       [r["error"] for r in rows], res.steps,
                                       attributes={"stack": stack},
                                       where=regions(rows, phase, E2E_TOPO, 1,
                                                     size_key="batch", unit="sequences")))
    for tag, e, path in (("TP 1", res.e2e_h100, H100_STEPS), ("TP 2", res.e2e_h100_tp2,
                                                              H100_TP2_STEPS)):
        if e is not None:
            for phase, rows in e.items():
                summary.append(summary_row("held-out GPU, end to end on H100, %s: %s "
                                           "(--stack %s)" % (tag, phase, stack),
                                           [r["error"] for r in rows], path, held_out=True,
                                           attributes={"stack": stack},
                                           where=regions(rows, phase, H100_TOPO, 1,
                                                         size_key="batch",
                                                         unit="sequences")))
    return summary
