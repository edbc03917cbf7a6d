"""summary.md of an `nvlemu run` grid: the command, what the numbers are,
one table row per run, the side-by-side tables of the axes that vary
(expert placements, communication, GPU vs die TP), the best runs."""
import json
import os

from .grid import AXES, TABLE_LATER, ep_degree, ranks_of
from .launch import command_line
from .outputs import num, write_markdown


def placement_name(r):
    if ep_degree(r) == 1 and r["attn_parallel"] == "tp":
        return "TP (experts TP)"
    return "EP %s, attention %s" % (r["ep"], r["attn_parallel"].upper())


def placement_table(rows, varying):
    """Tokens/s per GPU of each expert placement side by side (one row per
    value of the other varying axes, GPUs included), when the placement
    varies."""
    if "ep" not in varying and "attn_parallel" not in varying:
        return []
    others = [k for k in AXES if (k in varying or k == "tp")
              and k not in ("ep", "attn_parallel")]
    places, groups = [], {}
    for r in rows:
        key = tuple(json.dumps(r[k]) for k in others)
        name = placement_name(r)
        if name not in places:
            places.append(name)
        groups.setdefault(key, {"row": r, "cells": {}})["cells"][name] = r
    L = ["Expert placements side by side (tokens/s per GPU; TPOT ms; expert "
         "tokens of the busiest rank / the mean, per MoE layer):", "",
         "| " + " | ".join(["GPUs" if k == "tp" else k for k in others] + places) + " |",
         "|" + "---|" * (len(others) + len(places))]
    for g in groups.values():
        cells = [str(g["row"][k]) for k in others]
        for p in places:
            r = g["cells"].get(p)
            if r is None or r["status"] != "ok":
                cells.append("-" if r is None else "FAILED")
            else:
                cells.append("%s (%s ms, x%s)" % (
                    num(r.get("tokens_per_s_per_gpu"), "%.1f"), num(r.get("tpot_ms")),
                    num(r.get("experts.imbalance"), "%.2f")))
        L.append("| " + " | ".join(cells) + " |")
    return L + [""]


def comm_table(rows, varying):
    """Where the communication goes when --overlap or --a2a varies: per run,
    the decode step's collective time, async TP's hidden time, the MoE
    all-to-alls per layer (the run's implementation and the other one)."""
    if "overlap" not in varying and "a2a" not in varying:
        return []
    L = ["Communication per decode step (ms): collective = the GPU's exposed "
         "communication; hidden = async TP's communication under the GEMM "
         "chunks; dispatch + combine per MoE layer, NCCL / one-sided "
         "(* the run's):", "",
         "| GPUs | batch | overlap | a2a | TPOT | tok/s/GPU | collective | "
         "hidden | dispatch+combine nccl | dispatch+combine onesided |",
         "|" + "---|" * 10]
    for r in rows:
        if r["status"] != "ok":
            continue

        def a2a(name):
            d = r.get("experts.all_to_all.%s.dispatch_ms_per_layer" % name)
            c = r.get("experts.all_to_all.%s.combine_ms_per_layer" % name)
            if d is None or c is None:
                return "-"
            return "%.4f%s" % (d + c, " *" if impl == name else "")
        impl = r.get("a2a", TABLE_LATER["a2a"])
        L.append("| %s |" % " | ".join([
            str(r["tp"]), str(r["batch"]), r.get("overlap", TABLE_LATER["overlap"]),
            impl,
            num(r.get("tpot_ms")), num(r.get("tokens_per_s_per_gpu"), "%.1f"),
            num(r.get("decode_step_breakdown.collective_ms")),
            num(r.get("overlap.hidden_ms_per_step")), a2a("nccl"),
            a2a("onesided")]))
    return L + [""]


def gpus_of(r):
    """GPU packages a run uses: its ranks, or half of them when each rank
    plays one of a package's two dies."""
    return ranks_of(r) // 2 if r.get("rank_plays") == "die" else ranks_of(r)


def die_table(rows, varying):
    """GPU-level and die-level TP side by side at the same GPU count (one
    row per GPU count that both kinds of runs use and value of the other
    varying axes), when what the ranks play varies."""
    if "rank_plays" not in varying:
        return []
    others = [k for k in varying if k not in ("tp", "rank_plays")]
    groups = {}
    for r in rows:
        key = (gpus_of(r),) + tuple(json.dumps(r[k]) for k in others)
        groups.setdefault(key, {"row": r, "cells": {}})["cells"][r["rank_plays"]] = r
    L = ["GPU-level vs die-level tensor parallelism at the same GPU count "
         "(TPOT ms; tokens/s per GPU):", "",
         "| GPUs | " + " | ".join(others + ["GPU TP", "die TP"]) + " |",
         "|" + "---|" * (len(others) + 3)]
    def order(k):  # numbers as numbers
        return tuple(float(v) if v.replace(".", "").isdigit() else 0 for v in k[1:]) + (k[0],)
    for key in sorted(groups, key=order):
        g = groups[key]
        if len(g["cells"]) < 2:
            continue  # no run of the other kind uses that many GPUs
        cells = [str(key[0])] + [str(g["row"][k]) for k in others]
        for p in ("gpu", "die"):
            r = g["cells"].get(p)
            if r is None:
                cells.append("-")
            elif r["status"] != "ok":
                cells.append("TP %d: %s" % (r["tp"], "does not fit" if r["status"] ==
                                            "does not fit" else "FAILED"))
            else:
                cells.append("TP %d: %s ms, %s" % (r["tp"], num(r.get("tpot_ms")),
                                                   num(r.get("tokens_per_s_per_gpu"), "%.1f")))
        L.append("| " + " | ".join(cells) + " |")
    return L + [""]


def intro(rows, varying):
    """The command and what the numbers are."""
    L = ["Command (from the repository root):", "", "    " + command_line(), ""]
    ok = [r for r in rows if r["status"] == "ok"]
    shown = ok + [r for r in rows if r["status"] == "does not fit"]
    if shown:
        r0 = shown[0]
        L += ["Model %s on %s (%s), %s mode; times are emulated GPU times. "
              "TPOT is one decode step; tokens/s per GPU = batch / TPOT / %s; "
              "rack = all the TP groups that fit in the system." % (
                  r0.get("inputs.model"), r0.get("inputs.system"), r0.get("topo"),
                  r0.get("inputs.mode"),
                  "GPUs (TP, or TP / 2 where ranks play dies)"
                  if any(r.get("rank_plays") == "die" for r in rows)
                  else "GPUs (TP x PP)" if any(r.get("pp", 1) != 1 for r in rows)
                  else "TP"), ""]
        if rows[0]["set"] and "what_if" not in varying:
            L += ["What-ifs applied to every run: `%s`" % "`, `".join(rows[0]["set"]), ""]
    return L


def run_table(rows, varying):
    """One row per run: its varying inputs, times, shares and status."""
    L = []
    hdr = ["model", "tp", "batch", "ctx" if rows and rows[0]["ctx"] else "prompt/gen",
           "dtype", "what-if", "NCCL_ALGO", "TTFT ms", "TPOT ms", "tok/s/GPU",
           "tok/s rack", "compute", "comm", "idle", "status"]
    shown = {"model", "tp", "batch", "ctx", "prompt_len", "gen_len", "dtype", "what_if",
             "nccl_algo"}
    extra = [k for k in varying if k not in shown]
    hdr[7:7] = extra
    # memory tiers: the KV / weight share each run put in host memory, and
    # NVLink-C2C's busy share of the decode step
    tiers = any(r.get("memory_per_gpu.kv_host_share") or
                r.get("memory_per_gpu.weights_host_share") for r in rows)
    if tiers:
        hdr[-1:-1] = ["KV in host", "weights in host", "C2C util"]
    L.append("| " + " | ".join(hdr) + " |")
    L.append("|" + "---|" * len(hdr))
    for r in rows:
        tot = r.get("decode_step_breakdown.total_ms")

        def share(k):
            v = r.get("decode_step_breakdown.%s_ms" % k)
            return "%.0f%%" % (100.0 * v / tot) if v is not None and tot else "-"
        cells = [str(r["model"]), str(r["tp"]), str(r["batch"]),
                 str(r["ctx"]) if r["ctx"] else "%s/%s" % (r["prompt_len"], r["gen_len"]),
                 r["dtype"], r["what_if"] + (" (`%s`)" % "`, `".join(r["set"]) if
                                            r["set"] and r["what_if"] != "baseline" else ""),
                 r["nccl_algo"] or "default"] + [
                 str(r[k]) if r[k] is not None else "default" for k in extra] + [
                 num(r.get("ttft_ms"), "%.1f"), num(r.get("tpot_ms")),
                 num(r.get("tokens_per_s_per_gpu"), "%.1f"),
                 num(r.get("tokens_per_s_rack"), "%.0f"),
                 share("compute"), share("communication"), share("idle")] + ([
                 num(r.get("memory_per_gpu.kv_host_share"), "%.2f"),
                 num(r.get("memory_per_gpu.weights_host_share"), "%.2f"),
                 num(100 * r["memory_per_gpu.c2c_utilisation"], "%.0f%%")
                 if r.get("memory_per_gpu.c2c_utilisation") is not None else "-"]
                 if tiers else []) + [
                 r["status"] if r["status"] == "ok" else
                 "does not fit: " + r["error"] if r["status"] == "does not fit" else
                 "FAILED: " + r["error"].replace("|", "/")]
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    return L


def closing(a, out, rows):
    """The best runs, the runs that do not fit, the files and the plots."""
    L = []
    ok = [r for r in rows if r["status"] == "ok"]
    if ok:
        best = max(ok, key=lambda r: r.get("tokens_per_s_per_gpu") or 0)
        fast = min(ok, key=lambda r: r.get("tpot_ms") or 1e30)
        L += ["Most tokens/s per GPU: %.1f (TP %d, %s). Lowest TPOT: %.3f ms "
              "(TP %d, %s)." % (best["tokens_per_s_per_gpu"], best["tp"], best["series"],
                                fast["tpot_ms"], fast["tp"], fast["series"]), ""]
    oom = [r for r in rows if r["status"] == "does not fit"]
    if oom:
        L += ["%s: their weights, KV cache, activations and reserve exceed the "
              "GPU's HBM (and host memory, where a tier was asked for), so nvlemu "
              "run refused them: %s." % (
                  "No run fits" if not ok else "Runs that do not fit",
                  ", ".join("TP %d %s" % (r["tp"], r["series"]) for r in oom)), ""]
    L += ["Files: `results.csv` and `results.json` (one row per run, every input "
          "and number), `runs/<id>.json` (nvlemu run --json), `runs/<id>.log` and "
          "`runs/<id>.sweep.json` (the command and its output), `plots/`.", ""]
    if os.path.isdir(os.path.join(out, "plots")) and a.plots:
        for name, cap in (("tokens_per_gpu", "tokens/s per GPU"), ("tpot", "TPOT"),
                          ("breakdown", "decode step breakdown")):
            if os.path.exists(os.path.join(out, "plots", name + ".png")):
                L.append("![%s](plots/%s.png)" % (cap, name))
        L.append("")
    return L


def write_summary(a, out, rows, varying):
    title = a.title or "nvlemu sweep"
    L = ["# %s" % title, ""] + intro(rows, varying) + run_table(rows, varying)
    L += placement_table(rows, varying)
    L += comm_table(rows, varying)
    L += die_table(rows, varying)
    L += closing(a, out, rows)
    write_markdown(out, L)
