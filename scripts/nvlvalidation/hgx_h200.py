"""The serving-like decode steps on the lent 4 x H200 on NVSwitch
(tests/data/calibration/hgx-h200-x4/serve-steps*.csv, issue 31; nothing
fit to them), predicted on topology/hgx-h200-x4.topo: the summary rows and
the document's section.  The rows and ratios come from hgx.py's
_serve_rows and _ratios."""
from .common import pct, table
from .families import regions, summary_row

DATA = "tests/data/calibration/hgx-h200-x4"
TOPO = "topology/hgx-h200-x4.topo"
RUNS = (("", "serve-steps.csv"), (", repeat run", "serve-steps-repeat.csv"))


def serve_summary(runs):
    """RUNS: [(rows, ratios)] of the first run and the repeat.  One held-out
    family per TP and all-reduce and per engine kernel's step over NCCL's
    step at TP 2 and 4, in each run."""
    out = []
    for (tag, name), (rows, ratios) in zip(RUNS, runs):
        for tp in (1, 2, 4):
            for ar in ("none", "nccl", "oneshot", "twoshot"):
                sel = [dict(r, ranks=tp) for r in rows
                       if int(r["tp"]) == tp and r["allreduce"] == ar]
                if sel:
                    out.append(summary_row(
                        "held-out machine, serving-like decode on HGX H200, TP %d, all-reduce "
                        "%s%s (--stack compiled)" % (tp, ar, tag), [r["error"] for r in sel],
                        DATA + "/" + name, held_out=True, attributes={"stack": "compiled"},
                        where=regions(sel, "decode", "hgx-h200-x4", size_key="batch",
                                      unit="sequences")))
        for tp in ("2", "4"):
            for ar in ("oneshot", "twoshot"):
                errs = [r["error"] for r in ratios if r["tp"] == tp and r["ar"] == ar]
                if errs:
                    out.append(summary_row(
                        "held-out machine, %s step / NCCL step on HGX H200, TP %s%s"
                        % (ar, tp, tag), errs, DATA + "/" + name, held_out=True))
    return out


def serve_doc(runs):
    """The section: every step of the first run beside the repeat's and the
    prediction, then the engine kernels' step ratios."""
    (first, ratios), (rep, ratios_rep) = runs
    if not first:
        return []
    doc = ["### Serving-like decode on HGX H200, TP 1, 2, 4 (%s, held out)\n" % TOPO,
           "The lent 4 x H200 (" + DATA + "/README.md, *Serving-like steps*), the harness "
           "of the HGX H100 steps above (`measure-steps.py --serve-only`), two runs a "
           "minute apart; nothing was fit to them.\n"]
    key = lambda r: (r["model"], r["tp"], r["batch"], r["allreduce"])
    rmeas = {key(r): r["measured_us"] for r in rep}
    doc.append(table(["model", "layers", "TP", "all-reduce", "batch", "ctx",
                      "measured (us)", "repeat (us)", "predicted (us)", "error"],
                     [[r["model"], r["layers"], r["tp"], r["allreduce"], r["batch"], r["ctx"],
                       r["measured_us"], rmeas.get(key(r), "-"), "%.1f" % r["pred_us"],
                       pct(r["error"])] for r in first]))
    rrat = {(r["model"], r["tp"], r["batch"], r["ar"]): r for r in ratios_rep}
    doc.append(table(["model", "TP", "batch", "kernel", "measured ratio", "repeat ratio",
                      "predicted ratio", "error"],
                     [[r["model"], r["tp"], r["batch"], r["ar"], "%.3f" % r["meas"],
                       "%.3f" % rrat[k]["meas"] if k in rrat else "-", "%.3f" % r["pred"],
                       pct(r["error"])]
                      for r in ratios for k in [(r["model"], r["tp"], r["batch"], r["ar"])]]))
    return doc
