"""The grid of `nvlemu run` jobs: every combination of the list options
is one run; its id (a readable slug and a hash of its inputs, stable
across versions of the sweep so that saved runs are found again) and its
command line."""
import hashlib
import itertools
import json
import re

from . import families
from .launch import find_binary, mpi_prefix, resolve_model, resolve_topo


def read_set_file(path):
    """A what-if file: one SECTION.KEY=VALUE per line, '#' starts a comment."""
    sets = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                if "=" not in line:
                    raise SystemExit("sweep: %s: not KEY=VALUE: %r" % (path, line))
                sets.append(line)
    return sets


def parse_what_if(text):
    """NAME=K=V[,K=V...] or NAME=@FILE -> (name, [K=V, ...])."""
    if "=" not in text:
        raise SystemExit("sweep: --what-if %r: expected NAME=KEY=VALUE[,...] "
                         "or NAME=@FILE" % text)
    name, rest = text.split("=", 1)
    if not re.fullmatch(r"[A-Za-z0-9_.+-]+", name):
        raise SystemExit("sweep: --what-if name %r: use letters, digits, "
                         "'_', '-', '.', '+'" % name)
    if rest.startswith("@"):
        return name, read_set_file(rest[1:])
    sets = [s.strip() for s in rest.split(",") if s.strip()]
    if not sets or any("=" not in s for s in sets):
        raise SystemExit("sweep: --what-if %r: expected NAME=KEY=VALUE[,...]"
                         % text)
    return name, sets


AXES = ["model", "topo", "tp", "batch", "ctx", "prompt_len", "gen_len",
        "dtype", "kv_dtype", "launch", "attn", "what_if", "nccl_algo", "nccl_proto",
        "ep", "attn_parallel", "stack", "kv_host", "weights_host", "rank_plays",
        "overlap", "a2a", "allreduce", "fuse_norm", "pp"]


def check_values(a):
    """Refuses a value of a list option that nvlemu run would refuse."""
    for e in a.ep:
        if e != "all" and not (e.isdigit() and int(e) >= 1):
            raise SystemExit("sweep: --ep %r: expected whole numbers >= 1 or 'all'" % e)
    nvlemu = find_binary(a.nvlemu, "nvlemu")
    families.check(nvlemu, "attn_parallel", a.attn_parallel)
    for t in a.kv_host + a.weights_host:
        try:
            ok = t == "auto" or 0 <= float(t) <= 1
        except ValueError:
            ok = False
        if not ok:
            raise SystemExit("sweep: --kv-host/--weights-host %r: expected auto "
                             "or a fraction from 0 to 1" % t)
    for option in ("stack", "overlap", "a2a", "allreduce"):
        families.check(nvlemu, option, getattr(a, option))
    for v in a.fuse_allreduce_norm:
        if v not in ("no", "yes"):
            raise SystemExit("sweep: --fuse-allreduce-norm %r: expected no or yes" % v)
    families.check(nvlemu, "rank_plays", a.rank_plays)


def global_sets(a):
    """The what-ifs applied to every run: --set, then --set-file's."""
    sets = list(a.set)
    for fpath in a.set_file:
        sets += read_set_file(fpath)
    return sets


def lengths(a):
    """The (contexts, prompt lengths, generation lengths) axes."""
    ctxs, plens, glens = a.ctx, [None], [None]
    if a.prompt_len:
        if a.ctx:
            raise SystemExit("sweep: give --ctx or --prompt-len, not both")
        ctxs, plens, glens = [None], a.prompt_len, a.gen_len or [16]
    elif a.gen_len:
        raise SystemExit("sweep: --gen-len goes with --prompt-len")
    elif not ctxs:
        ctxs = [4096]
    return ctxs, plens, glens


def build_grid(a):
    ctxs, plens, glens = lengths(a)
    what_ifs = [("baseline", [])]
    for w in a.what_if:
        name, sets = parse_what_if(w)
        if name == "baseline" or name in [n for n, _ in what_ifs]:
            raise SystemExit("sweep: --what-if name %r used twice" % name)
        what_ifs.append((name, sets))
    sets = global_sets(a)
    check_values(a)
    axes = [a.model, a.topo, a.tp, a.batch, ctxs, plens, glens, a.dtype,
            a.kv_dtype, a.launch, a.attn or [None], what_ifs,
            a.nccl_algo or [None], a.nccl_proto or [None], a.ep, a.attn_parallel,
            a.stack, a.kv_host, a.weights_host, a.rank_plays, a.overlap, a.a2a,
            a.allreduce, a.fuse_allreduce_norm, a.pp]
    runs = []
    for combo in itertools.product(*axes):
        r = dict(zip(AXES, combo))
        if r["allreduce"] == "nccl" and r["fuse_norm"] == "yes":
            continue  # NCCL's allreduce is never fused (nvlemu run refuses it)
        wname, wsets = r["what_if"]
        r["what_if"] = wname
        r["set"] = sets + wsets
        for k in ("nccl_algo", "nccl_proto"):
            if r[k] == "default":
                r[k] = None
        runs.append(r)
    return runs


def ranks_of(r):
    """The ranks a model run uses: TP x PP."""
    return r["tp"] * r.get("pp", 1)


def ep_degree(r):
    """The --ep value of a run ('all': its TP degree)."""
    return r["tp"] if r["ep"] == "all" else int(r["ep"])


# Axes added after runs were saved: left out of a run's hash at these
# values, so that adding an axis never renames the runs saved before it.
HASH_DEFAULTS = {"ep": "1", "attn_parallel": "tp", "stack": "fused",
                 "kv_host": "0", "weights_host": "0", "rope_scaling": None,
                 "rank_plays": "gpu", "overlap": "none", "a2a": "nccl",
                 "allreduce": "nccl", "fuse_norm": "no", "pp": 1}
# Axes added after tables were saved: a column of results.csv/.json only
# in the sweeps where a run leaves the default, so that regenerating an
# older sweep rewrites its tables unchanged.
TABLE_LATER = {"kv_host": "0", "weights_host": "0", "rank_plays": "gpu",
               "overlap": "none", "a2a": "nccl", "allreduce": "nccl",
               "fuse_norm": "no", "pp": 1}
# ... and the axes that nvlemu 0.1's every-axis (legacy) hash did not have.
LEGACY_LATER = {"stack": "fused", "kv_host": "0", "weights_host": "0",
                "rope_scaling": None, "rank_plays": "gpu", "overlap": "none",
                "a2a": "nccl", "allreduce": "nccl", "fuse_norm": "no", "pp": 1}


def run_id(r, layers, mode, legacy=False, rope=None):
    """The run's file name: a readable slug and a hash of its inputs
    (legacy: the hash over every axis, as sweeps of nvlemu 0.1 saved the
    runs of some grids)."""
    key = dict(r, layers=layers, mode=mode, rope_scaling=rope)
    for k, v in (LEGACY_LATER if legacy else HASH_DEFAULTS).items():
        if key.get(k) == v:
            del key[k]
    h = hashlib.sha1(json.dumps(key, sort_keys=True).encode()).hexdigest()[:8]
    parts = ["tp%d" % r["tp"], "b%d" % r["batch"]]
    parts.append("ctx%d" % r["ctx"] if r["ctx"] else "p%dg%d" % (r["prompt_len"], r["gen_len"]))
    parts.append(r["dtype"])
    if r["what_if"] != "baseline":
        parts.append(r["what_if"])
    if r["nccl_algo"]:
        parts.append(r["nccl_algo"])
    if ep_degree(r) != 1:
        parts.append("ep%d" % ep_degree(r))
    if r["attn_parallel"] != "tp":
        parts.append("attn" + r["attn_parallel"])
    if r["stack"] != "fused":
        parts.append(r["stack"])
    for k, tag in (("kv_host", "kvhost"), ("weights_host", "whost")):
        if r[k] != "0":
            parts.append(tag + r[k])
    if r["rank_plays"] != "gpu":
        parts.append(r["rank_plays"])
    for k, v in (("overlap", "none"), ("a2a", "nccl")):
        if r[k] != v:
            parts.append(r[k])
    if r["allreduce"] != "nccl":
        parts.append("ar-" + r["allreduce"])
    if r["fuse_norm"] == "yes":
        parts.append("fusednorm")
    if r["pp"] != 1:
        parts.append("pp%d" % r["pp"])
    slug = re.sub(r"[^A-Za-z0-9_.+-]", "_", "-".join(parts))
    return "%s-%s" % (slug, h)


def run_command(a, r, nvlemu, mpirun, json_path):
    cmd = mpi_prefix(mpirun, ranks_of(r), a.hostfile)
    cmd += [nvlemu, "run", "--model", resolve_model(r["model"]),
            "--topo", resolve_topo(r["topo"]), "--batch", str(r["batch"])]
    if r["ctx"]:
        cmd += ["--ctx", str(r["ctx"])]
    else:
        cmd += ["--prompt-len", str(r["prompt_len"]), "--gen-len", str(r["gen_len"])]
    cmd += ["--dtype", r["dtype"], "--kv-dtype", r["kv_dtype"], "--launch", r["launch"]]
    if r["attn"]:
        cmd += ["--attn", r["attn"]]
    if ep_degree(r) != 1:
        cmd += ["--ep", str(ep_degree(r))]
    if r["attn_parallel"] != "tp":
        cmd += ["--attn-parallel", r["attn_parallel"]]
    if r["stack"] != "fused":
        cmd += ["--stack", r["stack"]]
    for k in ("kv_host", "weights_host"):
        if r[k] != "0":
            cmd += ["--" + k.replace("_", "-"), r[k]]
    if a.rope_scaling:
        cmd += ["--rope-scaling", a.rope_scaling]
    if r["rank_plays"] != "gpu":
        cmd += ["--rank-plays", r["rank_plays"]]
    for k, v in (("overlap", "none"), ("a2a", "nccl")):
        if r[k] != v:
            cmd += ["--" + k, r[k]]
    if r["allreduce"] != "nccl":
        cmd += ["--allreduce", r["allreduce"]]
    if r["fuse_norm"] == "yes":
        cmd += ["--fuse-allreduce-norm"]
    if r["pp"] != 1:
        cmd += ["--pp", str(r["pp"])]
    if a.layers:
        cmd += ["--layers", str(a.layers)]
    if a.mode:
        cmd += ["--mode", a.mode]
    for s in r["set"]:
        cmd += ["--set", s]
    cmd += ["--json", json_path]
    env = {}
    if r["nccl_algo"]:
        env["NCCL_ALGO"] = r["nccl_algo"]
    if r["nccl_proto"]:
        env["NCCL_PROTO"] = r["nccl_proto"]
    return cmd, env
