"""summary.md of an `nvlemu serve` grid: the workload and the SLO, every
run with its latencies, throughput and step shares, the Pareto front, the
best layout at each per-user speed."""
import os

from .launch import command_line
from .outputs import fmt_load, num, write_markdown

SERVE_PARTS = ["gemm", "attention", "collective", "other", "launch", "wait", "c2c"]


def best_at(rows, speed):
    """The feasible run of most output tokens/s per GPU among those giving
    each user at least `speed` tokens/s (None if none does)."""
    c = [r for r in rows if r["feasible"] and r["tok_per_s_per_user"] >= speed]
    return max(c, key=lambda r: r["output_tok_per_s_per_gpu"]) if c else None


def step_shares(r):
    tot = sum(r.get("step_ms." + p) or 0 for p in SERVE_PARTS)
    if not tot:
        return {p: None for p in SERVE_PARTS}
    return {p: 100.0 * (r.get("step_ms." + p) or 0) / tot for p in SERVE_PARTS}


def serve_intro(a, rows):
    """The system, the workload, the load points and the SLO."""
    L = []
    ok = [r for r in rows if r["status"] == "ok"]
    if ok:
        r0 = ok[0]
        L += ["Model %s on %s (a system of %d GPUs), `nvlemu serve` in timing mode; "
              "times are emulated GPU times (stack %s). Workload: %s, input %s tokens, "
              "output %s tokens per request, %s requests served by the emulated GPUs "
              "of each run. Load (%s, %s): %s. An aggregated TP T layout is "
              "%d / T replicas of which one is emulated (`--replicas`); a "
              "disaggregated layout emulates all its GPUs. Per-GPU numbers divide "
              "by the emulated GPUs; tokens/s per user = mean over requests of "
              "1 / TPOT." % (
                  r0.get("inputs.model"), r0.get("inputs.topology"), r0["system_gpus"],
                  ", ".join(sorted({r["stack"] for r in rows})),
                  "closed loop (each finished request lets the next one in)" if a.concurrency
                  else "Poisson arrivals",
                  a.isl, a.osl, a.requests if not a.requests.startswith("x") else
                  "%s x the emulated replica's load value" % a.requests[1:],
                  "requests in flight" if a.concurrency else "requests/s",
                  "each replica's (each disaggregated layout copy's)" if a.load_per == "replica"
                  else "the system's, shared by its replicas",
                  ", ".join(fmt_load(x) for x in sorted({r["load"] for r in rows})),
                  r0["system_gpus"]), ""]
        if a.slo_ttft or a.slo_tpot:
            L += ["SLO: TTFT <= %s ms and TPOT <= %s ms for at least %g%% of the "
                  "requests (a run meeting it is feasible; the others are listed but "
                  "never on the front)." % (
                      "%g" % a.slo_ttft if a.slo_ttft else "any",
                      "%g" % a.slo_tpot if a.slo_tpot else "any",
                      100 * a.slo_attainment), ""]
        else:
            L += ["No SLO (--slo-ttft, --slo-tpot): every run is feasible.", ""]
        if rows[0]["set"]:
            L += ["What-ifs applied to every run: `%s`" % "`, `".join(rows[0]["set"]), ""]
    return L


def serve_run_table(a, rows, varying, lk):
    """Every run: its layout and varying axes, latencies, throughput,
    SLO share, step shares, front mark and status."""
    L = []
    extra = [k for k in varying if k not in ("layout",)]
    hdr = ["layout"] + extra + [lk, "TTFT p50/p90 ms", "TPOT p50/p90 ms", "tok/s/user",
                                "out tok/s/GPU", "SLO met", "step: gemm/attn/coll/other",
                                "front", "status"]
    if a.gpu_hour_cost:
        hdr[-2:-2] = ["cost / M out tok"]
    L += ["All runs (step: the shares of the GPUs' step time, all pools; SLO met: "
          "the share of requests meeting both bounds; front: * on the Pareto front):", "",
          "| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    for r in rows:
        sh = step_shares(r)
        cells = ([r["layout_label"]] +
                 [str(r.get(k, "vllm" if k == "scheduler" else "")) for k in extra] +
                 [fmt_load(r["load"])])
        if r["status"] == "ok":
            cells += ["%s / %s" % (num(r.get("ttft_ms.p50"), "%.1f"),
                                   num(r.get("ttft_ms.p90"), "%.1f")),
                      "%s / %s" % (num(r.get("tpot_ms.p50"), "%.1f"),
                                   num(r.get("tpot_ms.p90"), "%.1f")),
                      num(r.get("tok_per_s_per_user"), "%.1f"),
                      num(r.get("output_tok_per_s_per_gpu"), "%.1f"),
                      num(100 * r["slo_met"], "%.0f%%")
                      if r.get("slo_met") is not None else "-",
                      "/".join("%.0f" % sh[p] if sh[p] is not None else "-"
                               for p in ("gemm", "attention", "collective", "other"))]
            if a.gpu_hour_cost:
                cells.append(num(r.get("cost_per_m_output_tokens"), "%.3f"))
            cells += ["*" if r["front"] else "",
                      "ok" if r["feasible"] else "misses the SLO"]
        else:
            cells += ["-"] * (len(hdr) - len(cells) - 2) + ["", "FAILED: " +
                                                            r["error"].replace("|", "/")]
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    return L


def front_table(front, lk):
    L = []
    L += ["Pareto front (feasible runs no other feasible run beats on both output "
          "tokens/s per GPU and tokens/s per user), by tokens/s per user:", "",
          "| tok/s/user | out tok/s/GPU | layout | %s | TTFT p90 ms | TPOT p90 ms |" % lk,
          "|---|---|---|---|---|---|"]
    for r in front:
        L.append("| %.1f | %.1f | %s | %s | %s | %s |" % (
            r["tok_per_s_per_user"], r["output_tok_per_s_per_gpu"], r["series"],
            fmt_load(r["load"]), num(r.get("ttft_ms.p90"), "%.0f"),
            num(r.get("tpot_ms.p90"), "%.1f")))
    if not front:
        L.append("| - | - | no run meets the SLO | - | - | - |")
    L.append("")
    return L


def speed_tables(rows, speeds, lk):
    """The best run at each per-user speed, and each layout's best there."""
    L = []
    L += ["Best at each per-user speed: the feasible run of most output tokens/s "
          "per GPU among those giving each user at least that speed (sampled load "
          "points, not interpolated):", "",
          "| tok/s/user at least | best layout | %s | out tok/s/GPU | its tok/s/user |" % lk,
          "|---|---|---|---|---|"]
    for s in speeds:
        b = best_at(rows, s)
        L.append("| %g | %s | %s | %s | %s |" % (
            s, b["series"] if b else "none feasible", fmt_load(b["load"]) if b else "-",
            num(b["output_tok_per_s_per_gpu"], "%.1f") if b else "-",
            num(b["tok_per_s_per_user"], "%.1f") if b else "-"))
    L.append("")
    series = []
    for r in rows:
        if r["series"] not in series:
            series.append(r["series"])
    if len(series) > 1:
        L += ["Each layout at each per-user speed (its best feasible run there: "
              "output tokens/s per GPU, with its %s in brackets; - : none of its "
              "runs is feasible that fast):" % lk, "",
              "| layout | " + " | ".join(">= %g tok/s/user" % s for s in speeds) + " |",
              "|" + "---|" * (len(speeds) + 1)]
        for s_ in series:
            rs = [r for r in rows if r["series"] == s_]
            cells = []
            for s in speeds:
                b = best_at(rs, s)
                cells.append("%.1f (%s)" % (b["output_tok_per_s_per_gpu"],
                                            fmt_load(b["load"])) if b else "-")
            L.append("| %s | %s |" % (s_, " | ".join(cells)))
        L.append("")
    return L


def write_serve_summary(a, out, rows, front, speeds, varying, skipped, plots):
    title = a.title or "nvlemu sweep --serve"
    L = ["# %s" % title, "", "Command (from the repository root):", "",
         "    " + command_line(), ""]
    lk = "concurrency" if a.concurrency else "rate"
    L += serve_intro(a, rows)
    L += serve_run_table(a, rows, varying, lk)
    if skipped:
        L += ["Not run: " + "; ".join(skipped) + ".", ""]
    L += front_table(front, lk)
    if speeds:
        L += speed_tables(rows, speeds, lk)
    L += ["Files: `results.csv` and `results.json` (one row per run: every input, "
          "every number of `nvlemu serve --json`, each pool under `pool.<name>.`, "
          "`slo_met`, `feasible`, `front`), `front.csv`, `runs/<id>.json`, "
          "`runs/<id>.requests.csv.gz` (`nvlemu serve --csv`), `runs/<id>.log` and "
          "`runs/<id>.sweep.json` (the command and its output), `plots/`.", ""]
    for p in plots:
        if p.endswith(".png"):
            name = os.path.basename(p)[:-4]
            L.append("![%s](plots/%s.png)" % (name.replace("_", " "), name))
    if plots:
        L.append("")
    write_markdown(out, L)
