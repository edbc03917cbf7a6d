#!/usr/bin/env python3
"""nvlemu serve against nvlemu run and against itself.

  check.py one-request   a one-request trace: serve's TTFT and TPOT are run's
                         (same model, ranks, topology: the same engine steps)
                         plus vLLM's host time of one request a step
  check.py conservation  a loaded server with preemption and prefix caching:
                         every request finishes, tokens add up, latencies are
                         ordered, the JSON agrees with the CSV
  check.py trtllm        --scheduler trtllm on a squeezed cache: no preemption,
                         prompts computed once, as many requests in flight as
                         the cache holds to completion; Llama-3.1-8B's KV
                         cache on one H100 as TensorRT-LLM logged it
  check.py placements    the same trace under three launch layouts gives
                         byte-identical CSV and JSON (but the wall time)
  check.py pipeline      --pp: one request's TTFT and TPOT are run --pp's plus
                         vLLM's host time (TP 1 x PP 3); a loaded TP 2 x PP 3 replica keeps
                         more than one and at most 3 steps in flight, every
                         request finishes, and its JSON equals the golden
                         tests/data/serve/pp3-tp2.json (--update rewrites it)
  check.py host-loop     --scheduler trtllm: a step of n requests lasts at
                         least n x the executor's host time a request (45.11
                         ms / 1536), a step without a CUDA graph its eager
                         launches too; on one layer every decode step is that
                         long, and under DEP the busiest rank's count sets it;
                         --scheduler vllm: 0.16 ms + n x 5.34 ms / 256 adds
                         to a step
  check.py frontend      --frontend-ms with every request at time 0: the run
                         without it shifted by requests x time
  check.py dep           attention-DP + EP (TensorRT-LLM's DEP) on 3 ranks:
                         one request a rank is run's batch of 3 (the same
                         TTFT and TPOT); a load finishes, every prompt once;
                         the KV cache loses the MoE runner's workspace
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "run"))
from golden import PLACEMENTS  # noqa: E402  (the launch layouts of the run tests)


def job(root, cmd, placement="default", ranks=3):
    env = dict(os.environ)
    for var in ("NCCL_ALGO", "NCCL_PROTO", "NCCL_NVLS_ENABLE"):
        env.pop(var, None)
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    full = PLACEMENTS[placement](ranks, cmd)
    p = subprocess.run(full, cwd=root, env=env, capture_output=True, text=True,
                       timeout=600)
    if p.returncode != 0:
        sys.exit(f"check: {' '.join(full)} exited {p.returncode}\n{p.stdout}{p.stderr}")
    return p.stdout


def verdict(errors, ok):
    """Prints the errors, or OK when there are none; the exit status."""
    for e in errors:
        print(e)
    if not errors:
        print(ok)
    return 1 if errors else 0


# vLLM's host time a step and a request (include/nvlemu/serve.h): the gap
# between two decode steps at 256 requests, 5.5 ms, of which 0.16 ms the
# step's own
VLLM_STEP_MS = 0.16
VLLM_REQUEST_MS = (5.5 - VLLM_STEP_MS) / 256


def one_request(a, tmp):
    model = ["--model", "qwen2.5-7b", "--layers", "6"]
    run_json, serve_json = os.path.join(tmp, "run.json"), os.path.join(tmp, "serve.json")
    job(a.root, [a.nvlemu, "run"] + model + ["--prompt-len", "1000", "--gen-len", "20",
                                             "--json", run_json])
    job(a.root, [a.nvlemu, "serve"] + model +
        ["--workload", "tests/data/serve/one-request.jsonl", "--json", serve_json])
    run, serve = json.load(open(run_json)), json.load(open(serve_json))
    bad = 0
    # serve's vLLM engine core adds its host time, 0.16 ms a step and
    # (5.5 - 0.16) ms / 256 a request, to each step (include/nvlemu/serve.h);
    # run has none
    host = VLLM_STEP_MS + VLLM_REQUEST_MS
    tt_run, tt_serve = run["ttft_ms"] + host, serve["ttft_ms"]["mean"]
    if abs(tt_serve - tt_run) > 1e-9 * tt_run:
        print(f"TTFT: serve {tt_serve!r} ms, run + host {tt_run!r} ms")
        bad += 1
    # run: the mean of its 19 decode steps; serve: (last - first token) / 19;
    # a decode step's own launch (launch_overhead, 7.2 us) may fall in the
    # host's gap before it, where the GPU is idle anyway
    tp_run, tp_serve = run["tpot_ms"] + host, serve["tpot_ms"]["mean"]
    if not tp_run - 0.0072 - 1e-9 <= tp_serve <= tp_run + 1e-9:
        print(f"TPOT: serve {tp_serve!r} ms, run + host {tp_run!r} ms "
              f"(less at most a 7.2 us launch)")
        bad += 1
    if bad == 0:
        print(f"one request: serve = run + {host} ms of host time a step: "
              f"TTFT {tt_run:.6f} ms, TPOT {tp_run:.6f} ms")
    return 1 if bad else 0


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def conservation(a, tmp):
    out_json, out_csv = os.path.join(tmp, "s.json"), os.path.join(tmp, "s.csv")
    # 3 ranks, TP 3; a KV cache squeezed to force preemption; shared prefixes
    job(a.root, [a.nvlemu, "serve", "--model", "qwen2.5-7b", "--layers", "4",
                 "--requests", "150", "--rate", "200", "--isl", "uniform:200:600",
                 "--osl", "uniform:100:300", "--prefix-groups", "3", "--prefix-len", "160",
                 "--max-batch", "48", "--max-tokens-per-step", "2048", "--chunk", "512",
                 "--set", "gpu.hbm=1.646GB", "--json", out_json, "--csv", out_csv], ranks=3)
    s = json.load(open(out_json))
    rows = read_csv(out_csv)
    errors = []
    if len(rows) != 150 or s["requests"] != 150:
        errors.append(f"{len(rows)} CSV rows, {s['requests']} in the JSON, of 150")
    out_tokens = sum(int(r["output_tokens"]) for r in rows)
    if out_tokens != s["output_tokens"]:
        errors.append(f"output tokens: CSV {out_tokens}, JSON {s['output_tokens']}")
    pool = s["pools"][0]
    prompts = sum(int(r["input_tokens"]) for r in rows)
    cached = sum(int(r["cached_tokens"]) for r in rows)
    decode = out_tokens - len(rows)      # every output after the first
    if pool["preemptions"] == 0:
        errors.append("no preemption: the test's KV squeeze did not bite")
    if pool["prefix_hits"] == 0 or cached == 0:
        errors.append("no prefix-cache hit")
    # tokens computed: each prompt once (less what the cache held) and each
    # output once, plus what preemption made it compute again
    if pool["tokens"] < prompts - cached + decode:
        errors.append(f"steps computed {pool['tokens']} tokens, fewer than the "
                      f"{prompts - cached + decode} the requests need")
    if pool["prefill_tokens"] + pool["decode_tokens"] != pool["tokens"]:
        errors.append("prefill + decode tokens != tokens")
    if pool["kv_peak_use"] > 1:
        errors.append(f"KV use peaked at {pool['kv_peak_use']} of the capacity")
    for r in rows:
        q, ttft, e2e = float(r["queue_ms"]), float(r["ttft_ms"]), float(r["e2e_ms"])
        if not 0 <= q < ttft <= e2e:
            errors.append(f"request {r['id']}: queue {q}, TTFT {ttft}, E2E {e2e}")
        if int(r["cached_tokens"]) >= int(r["input_tokens"]):
            errors.append(f"request {r['id']}: all of its prompt cached")
    for e in errors[:20]:
        print(e)
    if not errors:
        print(f"conservation: 150 requests, {out_tokens} output tokens, "
              f"{pool['preemptions']} preemptions, {pool['prefix_hits']} prefix hits, "
              f"peak KV {pool['kv_peak_use']:.3f}")
    return 1 if errors else 0


def trtllm(a, tmp):
    """TensorRT-LLM's no-evict scheduler on a squeezed cache: no preemption,
    each prompt computed once, and exactly as many requests in flight as
    the cache holds to completion (or max batch)."""
    out_json, out_csv = os.path.join(tmp, "t.json"), os.path.join(tmp, "t.csv")
    isl, osl = 300, 200
    job(a.root, [a.nvlemu, "serve", "--scheduler", "trtllm", "--model", "qwen2.5-7b",
                 "--layers", "4", "--requests", "120", "--isl", str(isl), "--osl", str(osl),
                 "--max-batch", "64", "--max-tokens-per-step", "1024",
                 "--set", "gpu.hbm=4.1583328GB", "--json", out_json, "--csv", out_csv],
        ranks=3)
    s = json.load(open(out_json))
    rows = read_csv(out_csv)
    pool, inp = s["pools"][0], s["inputs"]
    errors = []
    if inp["scheduler"] != "trtllm" or inp["block"] != 32 or inp["chunk"] != 0:
        errors.append(f"inputs: scheduler {inp['scheduler']}, block {inp['block']}, "
                      f"chunk {inp['chunk']} (expected trtllm, 32, 0: whole prompts)")
    if pool["preemptions"] != 0:
        errors.append(f"{pool['preemptions']} preemptions under no-evict admission")
    if len(rows) != 120 or pool["prefill_tokens"] != 120 * isl:
        errors.append(f"{len(rows)} requests, {pool['prefill_tokens']} prefill tokens "
                      f"(expected 120 and {120 * isl}: each prompt once)")
    per_req = -(-(isl + osl) // inp["block"])
    bound = min(inp["max_batch"], int(pool["kv_blocks"]) // per_req)
    events = []
    for r in rows:
        t0 = float(r["arrival_s"]) * 1e3 + float(r["queue_ms"])
        events += [(t0, 1), (float(r["arrival_s"]) * 1e3 + float(r["e2e_ms"]), -1)]
    live = most = 0
    for _, d in sorted(events, key=lambda e: (e[0], e[1])):
        live += d
        most = max(most, live)
    if bound < 2 or most != bound:
        errors.append(f"{most} requests in flight at most; the cache holds {bound} "
                      f"({pool['kv_blocks']} blocks, {per_req} a request)")
    # the KV cache TensorRT-LLM 0.20.0 logged for Llama-3.1-8B FP8 on one
    # H100 at fraction 0.8 and max_num_tokens 23,552 (issue 6294: 860,320
    # tokens): what the engine holds outside the model's count comes off
    # first (docs/serve.md, "The KV cache outside the profile")
    out_8b = os.path.join(tmp, "t8b.json")
    job(a.root, [a.nvlemu, "serve", "--scheduler", "trtllm", "--model",
                 os.path.join(a.root, "tests/data/hf/llama3.1-8b-config"), "--topo",
                 os.path.join(a.root, "topology/hgx-h100-8.topo"), "--dtype", "fp8",
                 "--kv-dtype", "fp8", "--mem-fraction", "0.8", "--max-batch", "4096",
                 "--max-tokens-per-step", "23552", "--requests", "2", "--isl", "16",
                 "--osl", "2", "--json", out_8b], ranks=1)
    blocks_8b = int(json.load(open(out_8b))["pools"][0]["kv_blocks"])
    if blocks_8b * inp["block"] != 860320:
        errors.append(f"Llama-3.1-8B FP8 on one H100: {blocks_8b} blocks of "
                      f"{inp['block']} positions, expected 860,320 positions "
                      "(TensorRT-LLM issue 6294's log)")
    return verdict(errors, f"trtllm: 120 requests, no preemption, {most} in flight at most = "
                           f"{int(pool['kv_blocks'])} blocks // {per_req}; Llama-3.1-8B "
                           f"on one H100 {blocks_8b * inp['block']} KV positions")


def placements(a, tmp):
    got = {}
    for p in PLACEMENTS:
        j, c = os.path.join(tmp, p + ".json"), os.path.join(tmp, p + ".csv")
        job(a.root, [a.nvlemu, "serve", "--model", "qwen2.5-7b", "--layers", "4",
                     "--workload", "tests/data/serve/chat.jsonl", "--tp", "2",
                     "--json", j, "--csv", c], placement=p, ranks=4)
        d = json.load(open(j))
        d.pop("wall_s")
        got[p] = (open(c, "rb").read(), json.dumps(d, sort_keys=True))
    first = next(iter(got))
    bad = [p for p in got if got[p] != got[first]]
    for p in bad:
        print(f"placement {p} differs from {first}")
    if not bad:
        print(f"placements: {', '.join(got)} give byte-identical CSV and JSON")
    return 1 if bad else 0


def pp_steps_in_flight(trace_path):
    """The most steps of the replica in flight at once (the trace's step
    slices: start and duration to the tokens' sampling)."""
    t = json.load(open(trace_path))
    ev = t["traceEvents"] if isinstance(t, dict) else t
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev
                   if e.get("ph") == "X" and e.get("name", "").startswith("step"))
    most = 0
    for i, (start, _) in enumerate(steps):
        most = max(most, sum(1 for s0, e0 in steps[:i + 1] if e0 > start))
    return most, len(steps)


def pipeline(a, tmp):
    bad = 0
    model = ["--model", "qwen2.5-7b", "--layers", "6", "--pp", "3"]
    run_json, serve_json = os.path.join(tmp, "run.json"), os.path.join(tmp, "serve.json")
    job(a.root, [a.nvlemu, "run"] + model + ["--prompt-len", "1000", "--gen-len", "20",
                                             "--json", run_json])
    job(a.root, [a.nvlemu, "serve"] + model +
        ["--workload", "tests/data/serve/one-request.jsonl", "--json", serve_json])
    run, serve = json.load(open(run_json)), json.load(open(serve_json))
    for key in ("ttft_ms", "tpot_ms"):
        # serve's vLLM host time, a step's and a request's, adds to a step
        want = run[key] + VLLM_STEP_MS + VLLM_REQUEST_MS
        if abs(serve[key]["mean"] - want) > 1e-9 * want:
            print(f"PP 3, one request: {key} serve {serve[key]['mean']!r}, "
                  f"run + host {want!r}")
            bad += 1
    j, tr = os.path.join(tmp, "pp.json"), os.path.join(tmp, "pp.trace.json")
    job(a.root, [a.nvlemu, "serve", "--model", "qwen2.5-7b", "--layers", "6", "--pp", "3",
                 "--tp", "2", "--concurrency", "24", "--requests", "48", "--isl", "128",
                 "--osl", "16", "--max-batch", "8", "--json", j, "--trace", tr], ranks=6)
    most, n = pp_steps_in_flight(tr)
    if not 1 < most <= 3:
        print(f"TP 2 x PP 3: {most} steps in flight at most (expected 2 or 3)")
        bad += 1
    d = json.load(open(j))
    d.pop("wall_s")
    d.pop("validation", None)  # families.json's, regenerated apart
    if d["requests"] != 48:
        print(f"TP 2 x PP 3: {d['requests']} requests finished of 48")
        bad += 1
    golden = os.path.join(a.root, "tests", "data", "serve", "pp3-tp2.json")
    if a.update:
        with open(golden, "w") as f:
            json.dump(d, f, indent=1, sort_keys=True)
            f.write("\n")
    elif d != json.load(open(golden)):
        print(f"TP 2 x PP 3: the JSON differs from {golden} (check.py pipeline --update "
              "rewrites it when the model changed on purpose)")
        bad += 1
    if bad == 0:
        print(f"pipeline: one request serve = run --pp 3 + host (TTFT {run['ttft_ms']:.6f} ms, "
              f"TPOT {run['tpot_ms']:.6f} ms); TP 2 x PP 3: {n} steps, up to {most} "
              "in flight, JSON = golden")
    return 1 if bad else 0


def dep(a, tmp):
    """--attn-parallel dp --ep 3: three equal requests at once go one to a
    rank, so serve's steps are run's batch of 3 under the same layout; a
    loaded run computes every prompt once and names the layout DEP3."""
    lay = ["--model", "qwen3-30b-a3b", "--layers", "2", "--ep", "3",
           "--attn-parallel", "dp"]
    run_json, serve_json = os.path.join(tmp, "run.json"), os.path.join(tmp, "serve.json")
    job(a.root, [a.nvlemu, "run"] + lay + ["--batch", "3", "--prompt-len", "200",
                                           "--gen-len", "10", "--json", run_json])
    job(a.root, [a.nvlemu, "serve", "--scheduler", "trtllm"] + lay +
        ["--requests", "3", "--isl", "200", "--osl", "10", "--json", serve_json])
    run, serve = json.load(open(run_json)), json.load(open(serve_json))
    errors = []
    if abs(serve["ttft_ms"]["mean"] - run["ttft_ms"]) > 1e-9 * run["ttft_ms"]:
        errors.append(f"TTFT: serve {serve['ttft_ms']['mean']!r} ms, run {run['ttft_ms']!r} ms")
    if abs(serve["tpot_ms"]["mean"] - run["tpot_ms"]) > 1e-9 * run["tpot_ms"]:
        errors.append(f"TPOT: serve {serve['tpot_ms']['mean']!r} ms, run {run['tpot_ms']!r} ms")
    load_json = os.path.join(tmp, "load.json")
    job(a.root, [a.nvlemu, "serve", "--scheduler", "trtllm"] + lay +
        ["--requests", "90", "--rate", "400", "--isl", "uniform:100:400", "--osl", "30",
         "--max-batch", "8", "--json", load_json])
    s = json.load(open(load_json))
    pool = s["pools"][0]
    prompts = pool["prefill_tokens"]
    if s["requests"] != 90 or pool["preemptions"] != 0 or pool["layout"] != "DEP3":
        errors.append(f"{s['requests']} requests, {pool['preemptions']} preemptions, "
                      f"layout {pool['layout']!r} (expected 90, 0, 'DEP3')")
    if pool["decode_tokens"] + prompts != pool["tokens"] or pool["tokens"] != prompts + 90 * 29:
        errors.append(f"tokens {pool['tokens']}: prompts {prompts} + 90 x 29 decodes expected")
    # TensorRT-LLM's memory profile holds the CUTLASS MoE runner's workspace
    # for the whole gathered step: 1,000 more tokens a rank (past the layer
    # working set's 8,192-row chunk) are 3,000 gathered rows of hidden 2,048
    # in and out (bf16: 4 bytes a value) and 8 expanded rows each of two
    # 2,048-wide bf16 buffers and six 4-byte maps, 0.90 of it out of the KV
    # cache (docs/serve.md, "The MoE runner's workspace")
    kv = []
    for tokens in (9000, 10000):
        out = os.path.join(tmp, f"kv-dep-{tokens}.json")
        job(a.root, [a.nvlemu, "serve", "--scheduler", "trtllm"] + lay +
            ["--requests", "3", "--isl", "16", "--osl", "2", "--max-batch", "8",
             "--max-tokens-per-step", str(tokens), "--json", out])
        kv.append(json.load(open(out))["pools"][0]["kv_gb_per_gpu"])
    want = 0.90 * 3000 * (2048 * 4 + 8 * (2 * 2048 * 2 + 6 * 4)) / 1e9
    if abs((kv[0] - kv[1]) - want) > 1e-6 * want:
        errors.append(f"1,000 more tokens a step take {kv[0] - kv[1]!r} GB of KV cache, "
                      f"expected {want!r} (the MoE runner's workspace)")
    return verdict(errors, f"dep: serve = run (TTFT {run['ttft_ms']:.6f} ms, "
                           f"TPOT {run['tpot_ms']:.6f} ms); 90 requests on DEP3, every prompt once; "
                           "the MoE runner's workspace out of the KV cache")


def host_loop(a, tmp):
    """The engines' host loops: one layer of a small model decodes 600
    requests far faster than the host handles them.  TensorRT-LLM's
    executor overlaps its host work with the GPU, so every decode step
    (TPOT) is 600 x 45.11 ms / 1536 (the measured host time a request,
    include/nvlemu/serve.h); under DEP on 3 ranks with 600 requests (200 a
    rank) it is 200 x that.  vLLM's engine core runs its host work
    between steps (0.16 ms a step and 5.34 ms / 256 a request): each
    request is in 8 steps (its prompt of 16, 7 decodes), so the run's
    launch part is 600 x 8 x the request's part plus the run's steps x
    the step's, plus at most 1 ms of the GPU's own launches.  The executor's
    figure was measured on a GB200's Grace; on the DGX B200's Xeon
    (hgx-b200.topo's [host] torch_op, 13.48 us a PyTorch call against
    Grace's 37.08) a request costs 13.48 / 37.08 of it."""
    per_req_ms = 45.11 / 1536
    xeon = ["--topo", os.path.join(a.root, "topology", "hgx-b200.topo")]
    cases = [("trtllm", 1, 600 * per_req_ms, []),
             ("trtllm", 3, 200 * per_req_ms, []),
             ("trtllm", 1, 600 * per_req_ms * 13.48 / 37.08, xeon),
             ("vllm", 1, None, [])]
    errors, seen = [], []
    for i, (sched, ranks, ms, topo) in enumerate(cases):
        out = os.path.join(tmp, f"{sched}{ranks}-{i}.json")
        lay = ["--ep", "3", "--attn-parallel", "dp"] if ranks == 3 else []
        job(a.root, [a.nvlemu, "serve", "--scheduler", sched, "--model", "qwen3-30b-a3b",
                     "--layers", "1", "--requests", "600", "--isl", "16", "--osl", "8",
                     "--json", out] + lay + topo, ranks=ranks)
        res = json.load(open(out))
        tpot = res["tpot_ms"]
        if ms is None:
            launch = res["pools"][0]["step_time_ms_by_part"]["launch"]
            host = 600 * 8 * VLLM_REQUEST_MS + res["pools"][0]["steps"] * VLLM_STEP_MS
            seen.append(f"{sched}: launch {launch:.6f} ms")
            if not host <= launch <= host + 1.0:
                errors.append(f"vllm: launch part {launch!r} ms, expected {host!r} "
                              f"ms of host time plus at most 1 ms")
            continue
        seen.append(f"{sched} on {ranks}{' (Xeon)' if topo else ''}: "
                    f"{tpot['min']:.6f}..{tpot['max']:.6f} ms")
        if not (abs(tpot["min"] - ms) <= 1e-6 * ms and abs(tpot["max"] - ms) <= 1e-6 * ms):
            errors.append(f"{sched} on {ranks} rank(s): TPOT {tpot['min']!r}..{tpot['max']!r} "
                          f"ms, expected {ms!r} (the host's loop)")
    # The prefill step (all 600 prompts, no CUDA graph) is eager: before
    # its requests the host launches its k kernels, 0.37 x torch_op each
    # (7.2 us, [gpu] launch_overhead, where torch_op is 0).  Two runs give
    # k twice; both must be the same whole number.
    ks = []
    for torch_op, launch_us in (("37.08us", 0.37 * 37.08), ("0us", 7.2)):
        out = os.path.join(tmp, f"eager-{torch_op}.json")
        job(a.root, [a.nvlemu, "serve", "--scheduler", "trtllm", "--model",
                     "qwen3-30b-a3b", "--layers", "1", "--requests", "600",
                     "--isl", "16", "--osl", "8", "--set",
                     f"host.torch_op={torch_op}", "--json", out])
        ttft = json.load(open(out))["ttft_ms"]
        ks.append((ttft["max"] - 600 * per_req_ms) * 1e3 / launch_us)
    seen.append(f"eager prefill: {ks[0]:.6f} and {ks[1]:.6f} kernels")
    if not (ks[0] >= 10 and abs(ks[0] - round(ks[0])) < 1e-3 and
            abs(ks[1] - ks[0]) < 1e-3):
        errors.append(f"eager prefill step: {ks!r} kernels launched, expected "
                      f"one whole number (at least 10) from both hosts")
    return verdict(errors, "host-loop: " + "; ".join(seen))


def kv_gb(a, tmp, sched, max_batch, max_tokens=4096):
    out = os.path.join(tmp, f"kv-{sched}-{max_batch}-{max_tokens}.json")
    job(a.root, [a.nvlemu, "serve", "--model", "qwen2.5-7b", "--scheduler", sched,
                 "--requests", "3", "--isl", "16", "--osl", "2", "--max-batch",
                 str(max_batch), "--max-tokens-per-step", str(max_tokens), "--json", out],
        ranks=3)
    return json.load(open(out))["pools"][0]["kv_gb_per_gpu"]


def sampler_profile(a, tmp):
    """The KV cache each scheduler's memory profile leaves, as --max-batch
    grows by 300 sequences on TP 3 (docs/serve.md, "Memory and the prefix
    cache"): vLLM's profile samples max-batch rows of the whole vocabulary
    (152,064 logits a row) at 14 bytes a logit, its peak apart from the
    forward's; TensorRT-LLM's holds the float32 logits of the rank's vocabulary
    shard (50,688) beside the forward's, 0.90 of it out of the KV cache."""
    errors = []
    for sched, want in (("vllm", 300 * 152064 * 14 / 1e9),
                        ("trtllm", 0.90 * 300 * 50688 * 4 / 1e9)):
        got = kv_gb(a, tmp, sched, 300) - kv_gb(a, tmp, sched, 600)
        if abs(got - want) > 1e-9 * want:
            errors.append(f"{sched}: 300 more sequences take {got!r} GB of KV cache, "
                          f"expected {want!r}")
    # vLLM samples min(max_num_seqs, max_num_batched_tokens) rows
    if kv_gb(a, tmp, "vllm", 300, 256) != kv_gb(a, tmp, "vllm", 600, 256):
        errors.append("vllm: sequences past --max-tokens-per-step 256 changed the KV cache")
    return verdict(errors, "sampler-profile: vllm 14 bytes a logit of the whole "
                           "vocabulary (at most a row a token), trtllm the float32 logits of the shard")


def sliding_window(a, tmp):
    """gpt-oss-20b's first two layers (one sliding, window 128; one full)
    on one GPU under trtllm's rule (blocks of 32 positions), as --max-batch
    grows by 300 sequences (docs/serve.md, "Memory and the prefix cache"):
    a KV position costs the full layer's 2048 bytes (8 KV heads x 64 x K
    and V, bf16) alone; kv_gb_per_gpu holds the blocks and every
    sequence's window of 128 positions of the sliding layer set aside
    (vLLM's SlidingWindowManager, TensorRT-LLM's max_attention_window),
    so 300 more sequences move only 0.90 x their float32 logits (201,088
    a row) out of it: their windows move from the blocks to the windows'
    room."""
    pools = {}
    for n in (300, 600):
        out = os.path.join(tmp, f"swa-{n}.json")
        job(a.root, [a.nvlemu, "serve", "--model", "gpt-oss-20b", "--layers", "2",
                     "--scheduler", "trtllm", "--requests", "3", "--isl", "16",
                     "--osl", "2", "--max-batch", str(n), "--json", out], ranks=1)
        pools[n] = json.load(open(out))["pools"][0]
    pos_bytes, window_bytes, block = 2048, 128 * 2048, 32
    errors = []
    for n, p in pools.items():
        blocks_bytes = p["kv_gb_per_gpu"] * 1e9 - n * window_bytes
        per = blocks_bytes / (p["kv_blocks"] * block * pos_bytes)
        if not 1 <= per < 1 + 1 / p["kv_blocks"]:
            errors.append(f"max batch {n}: {p['kv_gb_per_gpu']} GB in "
                          f"{p['kv_blocks']} blocks and {n} windows: not "
                          f"{pos_bytes} bytes a position")
    want = 0.90 * 300 * 201088 * 4 / 1e9
    got = pools[300]["kv_gb_per_gpu"] - pools[600]["kv_gb_per_gpu"]
    if abs(got - want) > 1e-9 * want:
        errors.append(f"300 more sequences take {got!r} GB of KV cache, expected {want!r}")
    return verdict(errors, "sliding-window: a position costs the full layer's "
                           "KV, each sequence's window set aside")


def trtllm_weights(a, tmp):
    """trtllm-bench's engine size counts each GEMM class's weights as its
    type stores them: gpt-oss-120b's release (MX-FP4 experts, bf16
    attention) on a GPU squeezed to 1 GB needs more than --dtype fp4 (the
    attention in FP4 too) by exactly the attention's 36 x (2880 x (64 + 8
    + 8) x 64 + 64 x 64 x 2880) parameters counted one element each
    instead of 0.5 + 1/16, at BYTES_PER_ELEM 0.5 (src/serving/policy.c)."""
    need = {}
    for dtype in ([], ["--dtype", "fp4"]):
        p = subprocess.run([a.nvlemu, "serve", "--model", "gpt-oss-120b",
                            "--topo", "topology/hgx-h100-8.topo", "--set",
                            "gpu.hbm=1GB", "--scheduler", "trtllm",
                            "--requests", "4", "--isl", "100", "--osl", "10"]
                           + dtype, cwd=a.root, capture_output=True, text=True,
                           timeout=120)
        m = re.search(r"the model needs ([0-9.]+) GiB", p.stderr)
        if p.returncode == 0 or m is None:
            sys.exit(f"check: trtllm-weights: no refusal naming the model's "
                     f"GiB:\n{p.stdout}{p.stderr}")
        need[bool(dtype)] = float(m.group(1))
    attn = 36 * (2880 * (64 + 8 + 8) * 64 + 64 * 64 * 2880)
    want = attn * (1 - (0.5 + 1 / 16)) * 0.5 / 2 ** 30
    got = need[False] - need[True]
    errors = [] if abs(got - want) <= 0.01 else [
        f"release {need[False]} GiB - fp4 {need[True]} GiB = {got:.3f}, "
        f"expected {want:.3f} (the attention in bf16)"]
    return verdict(errors, f"trtllm-weights: the release's bf16 attention adds "
                           f"{got:.2f} GiB (expected {want:.3f})")


def frontend(a, tmp):
    """--frontend-ms F with N requests at time 0: processor sharing hands
    them all to the scheduler at N x F (docs/serve.md, "The workload"), so
    the run is the one without a front end shifted by N x F: the makespan
    and every TTFT longer by exactly that, the TPOTs the same."""
    n, f_ms = 40, 5.0
    outs = {}
    for fe in ("0", str(f_ms)):
        out = os.path.join(tmp, f"fe-{fe}.json")
        job(a.root, [a.nvlemu, "serve", "--model", "qwen2.5-7b", "--layers", "2",
                     "--requests", str(n), "--isl", "128", "--osl", "8",
                     "--frontend-ms", fe, "--launch", "persistent", "--json", out])
        outs[fe] = json.load(open(out))
    base, fe = outs["0"], outs[str(f_ms)]
    shift_s = n * f_ms / 1e3
    # --launch persistent: under graph launches a first step after idle time
    # has its launch hidden in the idle (7.2 us less here than at time 0)
    tol_s = 1e-9
    errors = []
    if abs(fe["makespan_s"] - base["makespan_s"] - shift_s) > tol_s:
        errors.append(f"makespan {fe['makespan_s']!r} s, expected "
                      f"{base['makespan_s'] + shift_s!r}")
    for k in ("min", "mean", "max"):
        if abs(fe["ttft_ms"][k] - base["ttft_ms"][k] - shift_s * 1e3) > tol_s * 1e3:
            errors.append(f"TTFT {k} {fe['ttft_ms'][k]!r} ms, expected "
                          f"{base['ttft_ms'][k] + shift_s * 1e3!r}")
    if fe["tpot_ms"] != base["tpot_ms"]:
        errors.append(f"TPOT {fe['tpot_ms']!r} differs from {base['tpot_ms']!r}")
    if fe["inputs"]["frontend_ms"] != f_ms:
        errors.append(f"the JSON's inputs.frontend_ms is {fe['inputs']['frontend_ms']!r}")
    return verdict(errors, f"frontend: {n} requests x {f_ms} ms reach the scheduler "
                           f"together; makespan and TTFT +{shift_s} s, TPOT unchanged")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("check", choices=["one-request", "conservation", "placements",
                                      "trtllm", "pipeline", "dep", "sampler-profile",
                                      "host-loop", "frontend", "sliding-window",
                                      "trtllm-weights"])
    ap.add_argument("--update", action="store_true",
                    help="pipeline: rewrite its golden JSON")
    ap.add_argument("--nvlemu", default="build/nvlemu")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))
    a = ap.parse_args()
    a.root = os.path.abspath(a.root)
    a.nvlemu = os.path.abspath(os.path.join(a.root, a.nvlemu))
    with tempfile.TemporaryDirectory() as tmp:
        return {"one-request": one_request, "conservation": conservation,
                "placements": placements, "trtllm": trtllm,
                "pipeline": pipeline, "dep": dep,
                "sampler-profile": sampler_profile,
                "host-loop": host_loop, "frontend": frontend,
                "sliding-window": sliding_window,
                "trtllm-weights": trtllm_weights}[a.check](a, tmp)


if __name__ == "__main__":
    sys.exit(main())
