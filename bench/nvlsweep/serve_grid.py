"""The grid of `nvlemu serve` jobs: layouts (aggregated TP T, one replica
emulated; disaggregated prefill:decode pools, all their GPUs emulated)
that fill a system of --system-gpus GPUs, times every list option, times
the load points; each run's id and command line."""
import argparse
import hashlib
import itertools
import json
import os
import re

from . import families
from .grid import global_sets
from .launch import REPO, find_binary, mpi_prefix, resolve_model, resolve_topo
from .options import build_parser, split_list
from .outputs import fmt_load

SERVE_AXES = ["model", "topo", "layout", "ep", "max_batch", "max_tokens", "dtype",
              "kv_dtype", "stack", "allreduce", "load"]


def topo_gpus(topo):
    """The GPU count of a topology file ([system] gpus = N)."""
    section = None
    with open(os.path.join(REPO, topo) if not os.path.isabs(topo) else topo) as f:
        for line in f:
            line = line.split(";", 1)[0].split("#", 1)[0].strip()
            m = re.fullmatch(r"\[([^\]]+)\]", line)
            if m:
                section = m.group(1).strip()
            elif section == "system" and re.match(r"gpus\s*=", line):
                return int(line.split("=", 1)[1].strip())
    raise SystemExit("sweep: %s: no [system] gpus = N" % topo)


def parse_pool(text, what):
    """A disaggregated pool: tpTxR (R replicas of TP T) or N (one of N)."""
    m = re.fullmatch(r"(?:tp)?(\d+)(?:x(\d+))?", text.strip().lower())
    if not m or int(m.group(1)) < 1 or (m.group(2) and int(m.group(2)) < 1):
        raise SystemExit("sweep: --disagg %r: expected P:D, each pool tpTxR "
                         "(R replicas of TP T) or N GPUs" % what)
    tp, reps = int(m.group(1)), int(m.group(2) or 1)
    return tp, reps


def serve_layouts(a):
    """[(name, spec)]: spec = {"kind": "agg", "tp": T} or {"kind": "disagg",
    "pools": [(tp, replicas), (tp, replicas)]}."""
    out = []
    for t in a.tp or []:
        for p in a.pp:
            # "pp" only with a pipeline: older sweeps keep their run ids
            spec = {"kind": "agg", "tp": t, **({"pp": p} if p > 1 else {})}
            out.append(("tp%d" % t + ("pp%d" % p if p > 1 else ""), spec))
    for d in a.disagg or []:
        if d.count(":") != 1:
            raise SystemExit("sweep: --disagg %r: expected P:D" % d)
        pre, dec = (parse_pool(x, d) for x in d.split(":"))
        name = "tp%dx%d:tp%dx%d" % (pre + dec)
        if name in [n for n, _ in out]:
            raise SystemExit("sweep: --disagg %r given twice" % d)
        out.append((name, {"kind": "disagg", "pools": [pre, dec]}))
    if not out:
        raise SystemExit("sweep: no layout (--tp and/or --disagg)")
    return out


def layout_gpus(spec):
    if spec["kind"] == "agg":
        return spec["tp"] * spec.get("pp", 1)
    return sum(t * r for t, r in spec["pools"])


def layout_label(r):
    """A layout in words: 'TP 8 x 9' or 'disagg 8 (TP 8) : 24 (3 x TP 8)'."""
    s = r["spec"]
    if s["kind"] == "agg":
        pp = " x PP %d" % s["pp"] if s.get("pp", 1) > 1 else ""
        text = "TP %d%s x %d" % (s["tp"], pp, r["copies"])
    else:
        text = "disagg %s" % " : ".join(
            "%d%s" % (t * n, " (TP %d)" % t if n == 1 else " (%d x TP %d)" % (n, t))
            for t, n in s["pools"])
    return text


# the grid options of nvlemu run that --serve does not take
NOT_SERVE = ["batch", "ctx", "prompt_len", "gen_len", "launch", "attn", "overlap", "a2a",
             "fuse_allreduce_norm", "rank_plays", "attn_parallel", "kv_host",
             "weights_host", "what_if", "nccl_algo", "nccl_proto", "rope_scaling"]


def check_serve_options(a):
    """Refuses nvlemu run's options and bad values; the load points of
    --concurrency (integers) or --rate (numbers)."""
    defaults = build_parser().parse_args([])
    for k in NOT_SERVE:
        if getattr(a, k) != getattr(defaults, k):
            raise SystemExit("sweep: --%s is nvlemu run's, not a --serve "
                             "option" % k.replace("_", "-"))
    if bool(a.concurrency) == bool(a.rate):
        raise SystemExit("sweep: give the load points as --concurrency "
                         "LIST or --rate LIST (one of them)")
    if a.disagg and a.concurrency:
        raise SystemExit("sweep: disaggregated layouts need --rate "
                         "(nvlemu serve has no closed loop for them)")
    loads = a.concurrency or []
    if a.rate:
        try:
            loads = [float(x) for x in a.rate]
        except ValueError:
            raise SystemExit("sweep: --rate %s: expected numbers" % ",".join(a.rate))
        if any(x <= 0 for x in loads):
            raise SystemExit("sweep: --rate: expected positive numbers")
    m = re.fullmatch(r"x(\d+(?:\.\d+)?)|(\d+)", a.requests.strip())
    if not m or float(m.group(1) or m.group(2)) <= 0:
        raise SystemExit("sweep: --requests %r: expected N or xK" % a.requests)
    if not 0 < a.slo_attainment <= 1:
        raise SystemExit("sweep: --slo-attainment: from 0 (excluded) to 1")
    for e in a.ep:
        if e != "all" and not (e.isdigit() and int(e) >= 1):
            raise SystemExit("sweep: --ep %r: expected whole numbers >= 1 or 'all'" % e)
    nvlemu = find_binary(a.nvlemu, "nvlemu")
    families.check(nvlemu, "stack", a.stack)
    families.check(nvlemu, "allreduce", a.allreduce)
    return loads


def own_loads(a, layouts):
    """{layout: its own load points} from --loads LAYOUT=LIST."""
    own = {}
    for text in a.loads:
        if "=" not in text:
            raise SystemExit("sweep: --loads %r: expected LAYOUT=LIST" % text)
        name, vals = text.split("=", 1)
        name = name.strip().lower()
        if ":" in name:
            name = "tp%dx%d:tp%dx%d" % tuple(x for p_ in name.split(":")
                                            for x in parse_pool(p_, text))
        elif re.fullmatch(r"(tp)?\d+", name):
            name = "tp%d" % int(name.lstrip("tp"))
        if name not in [n for n, _ in layouts]:
            raise SystemExit("sweep: --loads %r: no layout %s among %s" % (
                text, name, ", ".join(n for n, _ in layouts)))
        try:
            own[name] = [(int if a.concurrency else float)(x) for x in split_list(vals)]
        except (ValueError, argparse.ArgumentTypeError):
            raise SystemExit("sweep: --loads %r: expected numbers" % text)
        if any(x <= 0 for x in own[name]):
            raise SystemExit("sweep: --loads %r: expected positive numbers" % text)
    return own


def serve_run(a, combo, sets, skipped):
    """One combination's run, or None (and why in skipped) when the layout
    does not fit the system or the EP degree does not fit the layout."""
    model, topo, (lname, spec), ep, mb, mt, dt, kv, st, ar, sc, load = combo
    sysg = a.system_gpus or topo_gpus(resolve_topo(topo))
    g = layout_gpus(spec)
    if g > sysg:
        skipped.append("%s (%d GPUs) on a %d-GPU system" % (lname, g, sysg))
        return None
    tps = [spec["tp"]] if spec["kind"] == "agg" else [t for t, _ in spec["pools"]]
    epn = None if ep == "all" else int(ep)
    if ep == "all":
        if len(set(tps)) > 1:
            skipped.append("%s with --ep all (pools of different TP)" % lname)
            return None
        epn = tps[0]
    if any(t % epn for t in tps):
        skipped.append("%s with EP %d (does not divide TP)" % (lname, epn))
        return None
    r = {"model": model, "topo": topo, "layout": lname, "spec": spec, "ep": epn,
         "max_batch": mb, "max_tokens": mt, "dtype": dt, "kv_dtype": kv,
         "stack": st, "allreduce": ar, "load": load, "system_gpus": sysg,
         "copies": sysg // g, "ranks": g, "set": sets}
    if sc != "vllm":  # a key only off the default: older sweeps keep their ids
        r["scheduler"] = sc
    return r


def build_serve_grid(a):
    loads = check_serve_options(a)
    layouts = serve_layouts(a)
    own = own_loads(a, layouts)
    sets = global_sets(a)
    runs, skipped = [], []
    families.check(find_binary(a.nvlemu, "nvlemu"), "scheduler", a.scheduler)
    combos = [(m, t, lay, e, mb, mt, dt, kv, st, ar, sc, ld)
              for m, t, lay, e, mb, mt, dt, kv, st, ar, sc
              in itertools.product(a.model, a.topo, layouts, a.ep, a.max_batch,
                                   a.max_tokens_per_step, a.dtype, a.kv_dtype, a.stack,
                                   a.allreduce, a.scheduler)
              for ld in own.get(lay[0], loads)]
    for combo in combos:
        r = serve_run(a, combo, sets, skipped)
        if r is not None:
            runs.append(r)
    return runs, skipped


def serve_load(a, r):
    """(system load, the emulated job's load, its --requests): the load
    values are the system's or one replica's (layout copy's), --load-per."""
    copies = r["copies"]
    per_copy = r["load"] if a.load_per == "replica" else r["load"] / copies
    system = r["load"] * copies if a.load_per == "replica" else r["load"]
    m = re.fullmatch(r"x(\d+(?:\.\d+)?)|(\d+)", a.requests.strip())
    if m.group(1):
        n = max(1, int(round(float(m.group(1)) * per_copy)))
    else:
        n = int(m.group(2))
    return system, per_copy, n


def serve_run_id(a, r):
    key = {k: r[k] for k in SERVE_AXES if k != "layout"}
    if "scheduler" in r:
        key["scheduler"] = r["scheduler"]
    key.update(spec=r["spec"], copies=r["copies"], set=r["set"], isl=a.isl, osl=a.osl,
               requests=a.requests, load_per=a.load_per, seed=a.seed, layers=a.layers,
               kind="concurrency" if a.concurrency else "rate",
               cost=a.gpu_hour_cost, mode=a.mode)
    h = hashlib.sha1(json.dumps(key, sort_keys=True).encode()).hexdigest()[:8]
    parts = ["serve", r["layout"].replace(":", "-")]
    if r["ep"] != 1:
        parts.append("ep%d" % r["ep"])
    parts += ["mb%d" % r["max_batch"], r["dtype"]]
    if r["allreduce"] != "nccl":
        parts.append("ar-" + r["allreduce"])
    if r["stack"] != "fused":
        parts.append(r["stack"])
    if "scheduler" in r:
        parts.append(r["scheduler"])
    parts.append(("c" if a.concurrency else "r") + fmt_load(r["load"]))
    slug_ = re.sub(r"[^A-Za-z0-9_.+-]", "_", "-".join(parts))
    return "%s-%s" % (slug_, h)


def serve_command(a, r, nvlemu, mpirun, json_path):
    system, per_copy, n = serve_load(a, r)
    s = r["spec"]
    cmd = mpi_prefix(mpirun, r["ranks"], a.hostfile)
    cmd += [nvlemu, "serve", "--model", resolve_model(r["model"]),
            "--topo", resolve_topo(r["topo"])]
    if s["kind"] == "agg":
        cmd += ["--tp", str(s["tp"])]
        if s.get("pp", 1) > 1:
            cmd += ["--pp", str(s["pp"])]
        if r["copies"] > 1:
            cmd += ["--replicas", str(r["copies"])]
        # nvlemu serve reads the load and the requests as the system's
        load, reqs = per_copy * r["copies"], n * r["copies"]
    else:
        (pt, pr), (dt, dr) = s["pools"]
        cmd += ["--prefill-gpus", str(pt * pr), "--decode-gpus", str(dt * dr),
                "--prefill-tp", str(pt), "--decode-tp", str(dt)]
        load, reqs = per_copy, n  # no replicas: the job is one copy
    if a.concurrency:
        cmd += ["--concurrency", str(int(round(load)))]
    else:
        cmd += ["--rate", "%.9g" % load]
    cmd += ["--requests", str(reqs), "--isl", a.isl, "--osl", a.osl, "--seed", str(a.seed),
            "--max-batch", str(r["max_batch"]), "--max-tokens-per-step", str(r["max_tokens"]),
            "--dtype", r["dtype"], "--kv-dtype", r["kv_dtype"]]
    if r["ep"] != 1:
        cmd += ["--ep", str(r["ep"])]
    if r["stack"] != "fused":
        cmd += ["--stack", r["stack"]]
    if r["allreduce"] != "nccl":
        cmd += ["--allreduce", r["allreduce"]]
    if "scheduler" in r:
        cmd += ["--scheduler", r["scheduler"]]
    if a.gpu_hour_cost:
        cmd += ["--gpu-hour-cost", "%g" % a.gpu_hour_cost]
    if a.layers:
        cmd += ["--layers", str(a.layers)]
    for x in r["set"]:
        cmd += ["--set", x]
    # the SLO is the sweep's (from each request's times), not the run's:
    # one set of runs answers under any --slo-ttft / --slo-tpot
    cmd += ["--json", json_path, "--csv", json_path[:-len(".json")] + ".requests.csv"]
    return cmd, system
