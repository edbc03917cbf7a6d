#!/usr/bin/env python3
"""Runs `nvlemu run` as an MPI job and checks its JSON results.

Usage: check_run.py CHECK -- MPIEXEC -n N NVLEMU run ARGS...

CHECK is one of
  modes        run in data mode and in timing mode: the virtual times (TTFT,
               every decode step, every breakdown) must be identical, and the
               stable keys present and consistent
  trace        run with --trace: the file must be a Chrome trace with one
               track per rank and complete events of kernels and collectives
               (check_trace.py; with the kernels the options name)
  tp-invariant run as given and again with -n 1: the same greedy tokens
               (synthetic weights do not depend on the TP degree)
  route-skew   a mixture of experts in timing mode, routed uniformly and
               with --route-skew 3: the skewed routing touches fewer
               experts, so its decode step spends less time in gemm
  ep           a mixture of experts placed with --ep (in the command) in
               timing mode, routed uniformly and with --route-skew 2, and
               with --ep 1: dispatch and combine bytes and times reported
               under expert parallelism only, per layer too (their mean
               the per-layer figures); the skewed routing loads the
               busiest rank more and makes the others wait longer
  tiers        data mode as given and with --kv-host 0.5 --weights-host
               0.25: the same tokens (a memory tier moves time, never
               numbers), more C2C bytes and a TPOT no shorter
  fuse-norm    data mode as given (with a serving engine's --allreduce) and
               with --fuse-allreduce-norm: the same tokens (the fusion
               moves time, never numbers) and a shorter TPOT (a kernel
               fewer per allreduce)
  same-tokens FLAG...
               data mode as given and with the FLAGs added: the same tokens
               (--overlap async-tp, --a2a onesided move time, never numbers)
  a2a-time DISPATCH_MS COMBINE_MS
               timing mode with --a2a onesided: experts.dispatch_ms_per_layer
               and combine_ms_per_layer are the hand-computed values (to
               1e-9 ms), the same under experts.all_to_all.onesided, and the
               nccl column is there too; with --a2a nccl the two columns
               are the same numbers
  a2a-modes    a mixture of experts whose all-to-all traffic does not follow
               the routing (experts cut over every rank, data-parallel
               attention): data and timing mode give the same dispatch and
               combine times, both implementations' (the experts' kernels
               follow the routing, real or seeded, so the step times may
               differ)
  overlap      timing mode with --overlap async-tp and --trace: every
               row-parallel GEMM runs as chunks on the GPU's stream and
               allreduce chunks on the communication stream, each starting
               when its GEMM chunk and the previous allreduce are done; the
               exposed wait ends with the last allreduce; the hidden and
               exposed times add up to the stream's busy time
  tier-time BYTES MS
               timing mode as given (with its --kv-host/--weights-host):
               memory_per_gpu.c2c_bytes_per_step and c2c_ms_per_step are
               the hand-computed BYTES (to 1e-9) and MS (to 1e-7 ms: each
               transfer's time is rounded to a whole picosecond)
  tier-hand    timing mode as given (a Qwen2 model directory with its
               config.json, --ctx, fractions for --kv-host/--weights-host,
               bf16, ranks dividing the KV heads): the C2C bytes and time per
               decode step computed here from config.json's dimensions and
               the topology's [c2c], [host_memory], [node] and
               copy_overhead keys (nvlemu topo --json) must be the run's
               memory_per_gpu.c2c_bytes_per_step and c2c_ms_per_step
  gemm-formats FULL SLIDING WINDOW KV_BYTES
               gpt-oss in timing mode as given (its release's formats:
               experts fp4, the rest bf16) and with --dtype fp4 (every
               class): the classes' types as said; the weights per GPU
               differ by exactly the attention GEMMs' bytes in bf16 less
               their MX-FP4 bytes (gemm_weights, layers run); TTFT and
               TPOT are longer with bf16 attention; and the KV cache holds
               FULL full-attention layers x the positions and SLIDING
               layers x at most WINDOW positions, KV_BYTES a position
               and layer (both runs)
  moe-quant TOP_K HIDDEN
               a mixture of experts (top-TOP_K, HIDDEN wide; FP8 experts
               under DEP in the command) with --trace, and with bf16 and
               tensor-parallel experts: each MoE layer's moe_quantize and
               expand_rows bytes (check_run_moe.py)
  pp-moe       a mixture of experts with the command's --pp: experts.moe_layers
               and the per-layer expert tokens equal those of --pp 1 (every
               stage's MoE layers, not stage 0's)
  pp-layout LAYERS_A LAYERS_B
               timing mode with --trace, the command's pipeline split as
               --pp-layers LAYERS_A and as LAYERS_B: each layer's kernels
               and collectives (summed by name over the run, every track)
               take the same time whichever stage runs the layer (1e-9
               relative; a layer's work does not depend on its stage),
               and a mixture of experts' experts cut over the stage's TP
  replicas T   --tp T's replicas report as one alone (check_replicas.py)
  points, serve-points
               each --points FILE point's JSON equals its own job's; a bad
               line or failing point stops it at FILE:LINE (check_points.py)
"""
import json
import os
import subprocess
import sys
import tempfile

from check_run_moe import check_moe_quant
from check_points import RUN, SERVE, check_points
from check_replicas import check_replicas
from check_trace import check_trace

KEYS = ["ttft_ms", "tpot_ms", "tokens_per_s", "tokens_per_s_per_gpu",
        "decode_step_breakdown", "prefill_breakdown", "tpot_ms_steps", "inputs"]


def run(cmd, extra):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "out.json")
        full = cmd + extra + ["--json", path]
        p = subprocess.run(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
        sys.stdout.write(p.stdout)
        if p.returncode != 0:
            sys.exit("check_run.py: %s exited %d" % (" ".join(full), p.returncode))
        with open(path) as f:
            return json.load(f)


def one_rank(cmd):
    """The command on one rank, without a placement (--ep, --attn-parallel)."""
    out, skip = [], False
    for i, a in enumerate(cmd):
        if skip:
            skip = False
        elif a in ("--ep", "--attn-parallel"):
            skip = True
        elif i > 0 and cmd[i - 1] == "-n":
            out.append("1")
        else:
            out.append(a)
    return out


def check_keys(doc):
    for k in KEYS:
        if k not in doc:
            sys.exit("check_run.py: key %s missing" % k)
    if not doc["ttft_ms"] > 0 or not doc["tpot_ms"] > 0:
        sys.exit("check_run.py: non-positive TTFT or TPOT")
    batch, tp = doc["inputs"]["batch"], doc["inputs"]["tp"]
    want = batch / (doc["tpot_ms"] / 1e3)
    if abs(doc["tokens_per_s"] - want) > 1e-6 * want:
        sys.exit("check_run.py: tokens_per_s %g != batch / TPOT %g"
                 % (doc["tokens_per_s"], want))
    if abs(doc["tokens_per_s_per_gpu"] * tp - want) > 1e-6 * want:
        sys.exit("check_run.py: tokens_per_s_per_gpu is not tokens_per_s / TP")
    b = doc["decode_step_breakdown"]
    shares = sum(v for k, v in b.items() if k.endswith("_share"))
    if abs(shares - 1) > 1e-9:
        sys.exit("check_run.py: decode shares sum to %g" % shares)
    steps = doc["tpot_ms_steps"]
    if abs(sum(steps) / len(steps) - doc["tpot_ms"]) > 1e-9 * doc["tpot_ms"]:
        sys.exit("check_run.py: tpot_ms is not the mean of tpot_ms_steps")


def check_overlap(doc, trace):
    """The two streams' schedule in the trace (see the usage above)."""
    ranks = doc["inputs"]["tp"]
    ev = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and "tid" in e}
    comm_tracks = [t for t, n in names.items() if n.endswith("communication stream")]
    if len(comm_tracks) != ranks:
        sys.exit("check_run.py: %d communication-stream tracks for %d ranks"
                 % (len(comm_tracks), ranks))
    ps = lambda x: round(x * 1e6)  # trace microseconds -> picoseconds
    ops = 0
    for r in range(ranks):
        mine = sorted((e for e in ev if e["tid"] in (r, 2 * ranks + r)),
                      key=lambda e: (e["ts"], e["tid"]))
        gemm = [e for e in mine if e["tid"] == r
                and e["name"] in ("o_proj", "down_proj")]
        comm = [e for e in mine if e["name"] == "allreduce_chunk"]
        expo = [e for e in mine if e["name"] == "allreduce_exposed"]
        if not comm or len(gemm) != len(comm):
            sys.exit("check_run.py: rank %d: %d GEMM chunks, %d allreduce "
                     "chunks" % (r, len(gemm), len(comm)))
        for i, (g, c) in enumerate(zip(gemm, comm)):
            ready = ps(g["ts"] + g["dur"])
            if ps(c["ts"]) < ready - 1:
                sys.exit("check_run.py: rank %d: allreduce chunk %d starts "
                         "before its GEMM chunk ends" % (r, i))
            if i % 4 and ps(c["ts"]) < ps(comm[i - 1]["ts"] + comm[i - 1]["dur"]) - 1:
                sys.exit("check_run.py: rank %d: allreduce chunks %d and %d "
                         "overlap" % (r, i - 1, i))
        for e in expo:
            ends = [ps(c["ts"] + c["dur"]) for c in comm]
            if min(abs(ps(e["ts"] + e["dur"]) - t) for t in ends) > 1:
                sys.exit("check_run.py: rank %d: an exposed wait does not end "
                         "with an allreduce chunk" % r)
        ops += len(comm) // 4
    o = doc["overlap"]
    if not (o["mode"] == "async-tp" and o["comm_ms_per_step"] > 0
            and 0 <= o["hidden_ms_per_step"] <= o["comm_ms_per_step"]
            and abs(o["exposed_ms_per_step"] + o["hidden_ms_per_step"]
                    - o["comm_ms_per_step"]) < 1e-9):
        sys.exit("check_run.py: overlap %s" % o)
    print("check_run.py: %d pipelined GEMMs; %.4f ms of %.4f ms hidden per "
          "step" % (ops, o["hidden_ms_per_step"], o["comm_ms_per_step"]))


def tier_hand(cmd):
    """Per decode step at context C (positions C - 1 cached), per layer: the
    host shares of the layer's weights and of the past KV prefetched
    (copy_overhead + [c2c] lat + bytes / bw each), the new positions' host
    share written back; the step's token ids in and sampled tokens out (4
    bytes each).  bw = min([c2c] bw x line / (line + header), [host_memory] bw
    x gpus_per_superchip
    / the job's GPUs on GPU 0's superchip)."""
    doc = run(cmd, ["--mode", "timing"])
    check_keys(doc)
    inp = doc["inputs"]
    nvlemu = cmd[cmd.index("run") - 1]
    sets = [x for s in inp["set"] for x in ("--set", s)]
    p = subprocess.run([nvlemu, "topo", inp["topology"], "--json", "-"] + sets,
                       stdout=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        sys.exit("check_run.py: nvlemu topo failed")
    spec = json.loads(p.stdout)["spec"]
    with open(os.path.join(inp["model"], "config.json")) as f:
        cfg = json.load(f)
    tp, batch, ctx = inp["tp"], inp["batch"], inp["ctx"]
    k, w = inp["kv_host"], inp["weights_host"]
    if cfg["model_type"] != "qwen2" or cfg["num_key_value_heads"] % tp or \
            inp["dtype"] != "bf16" or inp["kv_dtype"] != "bf16" or not ctx:
        sys.exit("check_run.py: tier-hand computes bf16 Qwen2 runs at --ctx "
                 "on ranks dividing the KV heads only")
    h, L = cfg["hidden_size"], cfg["num_hidden_layers"]
    hd = h // cfg["num_attention_heads"]
    q = cfg["num_attention_heads"] // tp * hd
    kv = cfg["num_key_value_heads"] // tp * hd
    inter = cfg["intermediate_size"] // tp
    # bf16: q, k, v, o and the MLP's three matrices, the q/k/v biases and
    # the two RMSNorm weights, 2 bytes each
    layer = 2 * ((q + 2 * kv) * h + h * q + 3 * inter * h + (q + 2 * kv) + 2 * h)
    kv_pos = 2 * kv * 2  # k and v of one position, bf16
    past = batch * (ctx - 1)
    per = spec["node"]["gpus_per_superchip"]
    sharers = min(tp, per)
    c2c = spec["c2c"]
    bw = min(c2c["bw"] * c2c["line"] / (c2c["line"] + c2c["header"]),
             spec["host_memory"]["bw"] * per / sharers)
    fixed_s = (spec["gpu"]["copy_overhead"] + spec["c2c"]["lat"]) * 1e-12
    prefetch = w * layer + k * past * kv_pos
    want_bytes = L * (prefetch + k * batch * kv_pos) + 4 * batch + 4 * batch
    want_ms = L * (fixed_s + prefetch / bw) * 1e3 if prefetch > 0 else 0.0
    m = doc["memory_per_gpu"]
    for key, want, tol in (("c2c_bytes_per_step", want_bytes, 1e-9 * want_bytes),
                           ("c2c_ms_per_step", want_ms, 1e-9 * L)):
        if abs(m[key] - want) > tol:
            sys.exit("check_run.py: %s %r, computed by hand %r" % (key, m[key], want))
    print("check_run.py: C2C %.0f bytes and %.6f ms per step (%d layers x "
          "%.0f bytes prefetched at %.0f GB/s), as computed by hand" % (
              want_bytes, want_ms, L, prefetch, bw / 1e9))


def layer_times(cmd, layers):
    """Each (layer, event name)'s summed duration in the trace of the
    command run with --pp-layers layers."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        doc = run(cmd, ["--mode", "timing", "--pp-layers", layers, "--trace",
                        path])
        with open(path) as f:
            trace = json.load(f)
    ex = doc["experts"]
    if ex and ex["expert_tp"] != doc["inputs"]["tp"] // ex["ep"]:
        sys.exit("check_run.py: experts cut over %d ranks, the stage has TP "
                 "%d" % (ex["expert_tp"], doc["inputs"]["tp"]))
    sums = {}
    for e in trace["traceEvents"]:
        li = e.get("args", {}).get("layer")
        if e["ph"] == "X" and isinstance(li, int) and li >= 0:
            sums[(li, e["name"])] = sums.get((li, e["name"]), 0.0) + e["dur"]
    return sums


def pp_layout(cmd, a, b):
    ta, tb = layer_times(cmd, a), layer_times(cmd, b)
    for key in sorted(set(ta) | set(tb)):
        x, y = ta.get(key, 0.0), tb.get(key, 0.0)
        if abs(x - y) > 1e-9 * max(x, y):
            sys.exit("check_run.py: layer %d's %s takes %r us with "
                     "--pp-layers %s, %r us with %s" % (key[0], key[1], x, a,
                                                        y, b))
    print("check_run.py: %d (layer, kernel) times equal under --pp-layers "
          "%s and %s" % (len(ta), a, b))


def check_modes(cmd):
    data = run(cmd, ["--mode", "data"])
    timing = run(cmd, ["--mode", "timing"])
    for doc in (data, timing):
        check_keys(doc)
    for k in ["ttft_ms", "tpot_ms_steps", "decode_step_breakdown",
              "decode_layer_breakdown", "prefill_breakdown"]:
        if data[k] != timing[k]:
            sys.exit("check_run.py: %s differs between data and timing "
                     "mode:\n%s\n%s" % (k, data[k], timing[k]))
    if "new_tokens" not in data:
        sys.exit("check_run.py: data mode reported no tokens")
    print("check_run.py: data and timing mode agree on every time")


def check_tp_invariant(cmd):
    many = run(cmd, [])
    one_cmd = one_rank(cmd)
    one = run(one_cmd, [])
    if many.get("new_tokens") != one.get("new_tokens") or "new_tokens" not in one:
        sys.exit("check_run.py: tokens differ: TP %d %s, TP 1 %s" % (
            many["inputs"]["tp"], many.get("new_tokens"), one.get("new_tokens")))
    print("check_run.py: TP %d and TP 1 generate %s" % (
        many["inputs"]["tp"], one["new_tokens"]))


def check_route_skew(cmd):
    uniform = run(cmd, ["--mode", "timing"])
    skewed = run(cmd, ["--mode", "timing", "--route-skew", "3"])
    for doc in (uniform, skewed):
        check_keys(doc)
    g_u = uniform["decode_step_breakdown"]["gemm_ms"]
    g_s = skewed["decode_step_breakdown"]["gemm_ms"]
    if not g_s < g_u:
        sys.exit("check_run.py: decode gemm %s (skew 3) not below %s "
                 "(uniform)" % (g_s, g_u))
    print("check_run.py: decode gemm %s uniform, %s with skew 3" % (g_u, g_s))


def check_ep(cmd):
    uniform = run(cmd, ["--mode", "timing"])
    skewed = run(cmd, ["--mode", "timing", "--route-skew", "2"])
    tp = run(cmd, ["--mode", "timing", "--ep", "1",
                   "--attn-parallel", "tp"])
    for doc in (uniform, skewed, tp):
        check_keys(doc)
    u, s, t = uniform["experts"], skewed["experts"], tp["experts"]
    if u["ep"] <= 1 or t["ep"] != 1:
        sys.exit("check_run.py: expected --ep > 1 in the command")
    for k in ("dispatch_bytes_per_layer", "combine_bytes_per_layer",
              "dispatch_ms_per_layer", "combine_ms_per_layer"):
        if not u[k] > 0 or t[k] != 0:
            sys.exit("check_run.py: %s %s under EP, %s under TP" % (k, u[k], t[k]))
    if not (u["imbalance"] >= 1 and s["imbalance"] > u["imbalance"]):
        sys.exit("check_run.py: imbalance %s uniform, %s skewed" % (
            u["imbalance"], s["imbalance"]))
    if not s["imbalance_wait_ms_per_step"] > u["imbalance_wait_ms_per_step"]:
        sys.exit("check_run.py: imbalance wait %s uniform, %s skewed" % (
            u["imbalance_wait_ms_per_step"], s["imbalance_wait_ms_per_step"]))
    per = u["per_layer"]
    if len(per) != u["moe_layers"] or not per:
        sys.exit("check_run.py: %d per-layer rows for %s MoE layers" % (
            len(per), u["moe_layers"]))
    for k in ("dispatch_ms", "combine_bytes", "expert_tokens_max"):
        mean = sum(l[k] for l in per) / len(per)
        want = u[{"dispatch_ms": "dispatch_ms_per_layer",
                  "combine_bytes": "combine_bytes_per_layer",
                  "expert_tokens_max": "expert_tokens_per_layer_max"}[k]]
        if abs(mean - want) > 1e-6 * max(1.0, abs(want)):
            sys.exit("check_run.py: per-layer %s mean %s != %s" % (k, mean, want))
    if t["imbalance"] != 1:
        sys.exit("check_run.py: experts TP should be balanced: %s" % t["imbalance"])
    print("check_run.py: tokens/s per GPU: EP %d %.1f, TP %.1f; imbalance "
          "x%.2f uniform, x%.2f skewed (wait %.4f vs %.4f ms per step)" % (
              u["ep"], uniform["tokens_per_s_per_gpu"],
              tp["tokens_per_s_per_gpu"], u["imbalance"], s["imbalance"],
              u["imbalance_wait_ms_per_step"], s["imbalance_wait_ms_per_step"]))


def check_tiers(cmd):
    plain = run(cmd, ["--mode", "data"])
    tier = run(cmd, ["--mode", "data", "--kv-host", "0.5",
                     "--weights-host", "0.25"])
    for doc in (plain, tier):
        check_keys(doc)
    if "new_tokens" not in plain or plain["new_tokens"] != tier["new_tokens"]:
        sys.exit("check_run.py: tokens differ with host tiers: %s vs %s" % (
            plain.get("new_tokens"), tier.get("new_tokens")))
    mp, mt = plain["memory_per_gpu"], tier["memory_per_gpu"]
    if not (mt["kv_host_share"] == 0.5 and mt["weights_host_share"] == 0.25
            and mt["c2c_bytes_per_step"] > mp["c2c_bytes_per_step"]
            and mt["c2c_ms_per_step"] > 0 and mp["c2c_ms_per_step"] == 0):
        sys.exit("check_run.py: C2C traffic %s without, %s with tiers" % (mp, mt))
    if not tier["tpot_ms"] >= plain["tpot_ms"]:
        sys.exit("check_run.py: TPOT %s with tiers < %s without" % (
            tier["tpot_ms"], plain["tpot_ms"]))
    print("check_run.py: the same tokens %s; C2C %.0f bytes per step, "
          "TPOT %.4f ms vs %.4f ms" % (tier["new_tokens"],
                                      mt["c2c_bytes_per_step"],
                                      tier["tpot_ms"], plain["tpot_ms"]))


def check_fuse_norm(cmd):
    plain = run(cmd, ["--mode", "data"])
    fused = run(cmd, ["--mode", "data", "--fuse-allreduce-norm"])
    for doc in (plain, fused):
        check_keys(doc)
    if "new_tokens" not in plain or plain["new_tokens"] != fused["new_tokens"]:
        sys.exit("check_run.py: tokens differ with the fused norm: %s vs %s" % (
            plain.get("new_tokens"), fused.get("new_tokens")))
    if not fused["tpot_ms"] < plain["tpot_ms"]:
        sys.exit("check_run.py: TPOT %s fused, not below %s unfused" % (
            fused["tpot_ms"], plain["tpot_ms"]))
    print("check_run.py: the same tokens %s; TPOT %.4f ms fused, %.4f ms "
          "not" % (fused["new_tokens"], fused["tpot_ms"], plain["tpot_ms"]))


def check_tier_time(cmd):
    want_bytes, want_ms = float(sys.argv[2]), float(sys.argv[3])
    doc = run(cmd, ["--mode", "timing"])
    check_keys(doc)
    m = doc["memory_per_gpu"]
    for k, want, tol in (("c2c_bytes_per_step", want_bytes, 1e-9 * want_bytes),
                         ("c2c_ms_per_step", want_ms, 1e-7)):
        if abs(m[k] - want) > tol:
            sys.exit("check_run.py: %s %r, hand-computed %r" % (k, m[k], want))
    print("check_run.py: C2C %r bytes and %r ms per step, as computed by "
          "hand" % (m["c2c_bytes_per_step"], m["c2c_ms_per_step"]))


def check_same_tokens(cmd):
    flags = sys.argv[2:sys.argv.index("--")]
    plain = run(cmd, ["--mode", "data"])
    other = run(cmd, ["--mode", "data"] + flags)
    if "new_tokens" not in plain or plain["new_tokens"] != other["new_tokens"]:
        sys.exit("check_run.py: tokens differ with %s: %s vs %s" % (
            " ".join(flags), plain.get("new_tokens"), other.get("new_tokens")))
    if plain["tpot_ms"] == other["tpot_ms"]:
        sys.exit("check_run.py: %s changed no time" % " ".join(flags))
    print("check_run.py: the same tokens %s with %s; TPOT %.4f vs %.4f ms"
          % (other["new_tokens"], " ".join(flags), other["tpot_ms"],
             plain["tpot_ms"]))


def check_a2a_time(cmd):
    want = {"dispatch_ms_per_layer": float(sys.argv[2]),
            "combine_ms_per_layer": float(sys.argv[3])}
    one = run(cmd, ["--mode", "timing", "--a2a", "onesided"])
    nccl = run(cmd, ["--mode", "timing", "--a2a", "nccl"])
    ex, nx = one["experts"], nccl["experts"]
    for k, v in want.items():
        for got in (ex[k], ex["all_to_all"]["onesided"][k],
                    nx["all_to_all"]["onesided"][k]):
            if abs(got - v) > 1e-9:
                sys.exit("check_run.py: %s %r, hand-computed %r" % (k, got, v))
        if ex["all_to_all"]["nccl"][k] != nx[k]:
            sys.exit("check_run.py: nccl %s %r in the onesided run's "
                     "table, %r when run" % (k, ex["all_to_all"]["nccl"][k],
                                             nx[k]))
    print("check_run.py: one-sided dispatch %r and combine %r ms per "
          "layer, as computed by hand; NCCL %r and %r" % (
              ex["dispatch_ms_per_layer"], ex["combine_ms_per_layer"],
              nx["dispatch_ms_per_layer"], nx["combine_ms_per_layer"]))


def check_a2a_modes(cmd):
    data = run(cmd, ["--mode", "data"])
    timing = run(cmd, ["--mode", "timing"])
    d, t = data["experts"]["all_to_all"], timing["experts"]["all_to_all"]
    if d != t or not all(d[i] and d[i]["dispatch_ms_per_layer"] > 0
                         for i in ("nccl", "onesided")):
        sys.exit("check_run.py: all-to-all times differ between data and "
                 "timing mode:\n%s\n%s" % (d, t))
    print("check_run.py: data and timing mode agree on the all-to-alls: %s"
          % d)


def check_async_tp(cmd):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        doc = run(cmd, ["--mode", "timing", "--overlap", "async-tp",
                        "--trace", path, "--trace-steps", "1"])
        with open(path) as f:
            trace = json.load(f)
    check_overlap(doc, trace)


def pp_moe(cmd):
    """A mixture of experts' MoE layers and per-layer expert tokens with the
    command's pipeline equal those without one (--pp 1 appended): every
    stage's layers counted, not stage 0's alone."""
    keys = ["moe_layers", "expert_tokens_per_layer_mean",
            "expert_tokens_per_layer_max"]
    with_pp, without = run(cmd, []), run(cmd, ["--pp", "1"])
    for k in keys:
        x, y = with_pp["experts"][k], without["experts"][k]
        if abs(x - y) > 1e-9 * max(abs(x), abs(y)):
            sys.exit("check_run.py: experts.%s is %r with the pipeline, %r "
                     "without" % (k, x, y))
    print("check_run.py: experts' %s equal with and without the pipeline"
          % ", ".join(keys))


def attn_bytes(doc):
    """The attention GEMMs' bytes of one layer (data + scales)."""
    return sum(g["weight_bytes"] + g["scale_bytes"]
               for g in doc["gemm_weights"]["gemms"]
               if g["class"] == "attention")


def check_gemm_formats(cmd):
    full, sliding, window, kv_bytes = (float(a) for a in sys.argv[2:6])
    rel = run(cmd, ["--mode", "timing"])
    fp4 = run(cmd, ["--mode", "timing", "--dtype", "fp4"])
    classes = rel["gemm_weights"]["classes"]
    if (classes["attention"], classes["experts"], classes["router"],
            classes["lm_head"]) != ("bf16", "fp4", "bf16", "bf16"):
        sys.exit("check_run.py: release classes %s" % classes)
    if fp4["gemm_weights"]["classes"]["attention"] != "fp4":
        sys.exit("check_run.py: --dtype fp4 classes %s"
                 % fp4["gemm_weights"]["classes"])
    layers = rel["inputs"]["layers"]
    want = layers * (attn_bytes(rel) - attn_bytes(fp4)) / 1e9
    got = (rel["memory_per_gpu"]["weights_gb"] -
           fp4["memory_per_gpu"]["weights_gb"])
    if want <= 0 or abs(got - want) > 1e-9 * rel["memory_per_gpu"]["weights_gb"]:
        sys.exit("check_run.py: weights differ by %.9f GB, the attention "
                 "GEMMs' bf16 less MX-FP4 bytes are %.9f GB" % (got, want))
    if not (rel["tpot_ms"] > fp4["tpot_ms"] and rel["ttft_ms"] > fp4["ttft_ms"]):
        sys.exit("check_run.py: bf16 attention is not slower: TPOT %s vs %s"
                 % (rel["tpot_ms"], fp4["tpot_ms"]))
    i = rel["inputs"]
    pos = i["prompt_len"] + i["gen_len"] - 1
    kv = kv_bytes * i["batch"] * (full * pos + sliding * min(pos, window)) / 1e9
    for doc in (rel, fp4):
        if abs(doc["memory_per_gpu"]["kv_cache_gb"] - kv) > 1e-12:
            sys.exit("check_run.py: KV cache %.12f GB, want %.12f GB"
                     % (doc["memory_per_gpu"]["kv_cache_gb"], kv))
    print("check_run.py: weights differ by the attention GEMMs' %.6f GB; "
          "TPOT %.4f vs %.4f ms; KV %.6f GB" % (got, rel["tpot_ms"],
                                                 fp4["tpot_ms"], kv))


def check_pp_layout(cmd):
    pp_layout(cmd, sys.argv[2], sys.argv[3])


# The checks by name (the first argument).
CHECKS = {
    "modes": check_modes,
    "trace": lambda cmd: check_trace(cmd, run, check_keys),
    "tp-invariant": check_tp_invariant,
    "route-skew": check_route_skew,
    "ep": check_ep,
    "tiers": check_tiers,
    "fuse-norm": check_fuse_norm,
    "tier-time": check_tier_time,
    "same-tokens": check_same_tokens,
    "a2a-time": check_a2a_time,
    "a2a-modes": check_a2a_modes,
    "overlap": check_async_tp,
    "tier-hand": tier_hand,
    "pp-layout": check_pp_layout,
    "replicas": lambda cmd: check_replicas(cmd, run, int(sys.argv[2])),
    "pp-moe": pp_moe,
    "gemm-formats": check_gemm_formats,
    "points": lambda cmd: check_points(cmd, run, RUN),
    "serve-points": lambda cmd: check_points(cmd, run, SERVE),
    "moe-quant": lambda cmd: check_moe_quant(cmd, run, int(sys.argv[2]),
                                             int(sys.argv[3])),
}


def main():
    check = sys.argv[1]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    if check not in CHECKS:
        sys.exit("check_run.py: unknown check " + check)
    CHECKS[check](cmd)


if __name__ == "__main__":
    main()
