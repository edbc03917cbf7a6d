"""check_run.py's trace check: the trace's tracks and events, and the
kernels the command's --stack and --allreduce put in it."""
import json
import os
import sys
import tempfile


def check_trace_stack(cmd, ev, names):
    """What the command's options say the trace's kernels are: under
    --stack compiled, Inductor's three RoPE / KV-write kernels; with a
    symmetric-memory all-reduce (--allreduce oneshot|twoshot, unfused),
    the copy into its buffer before every all-reduce of a layer (the
    attention's and the MLP's)."""
    opt = lambda o: cmd[cmd.index(o) + 1] if o in cmd else None
    if opt("--stack") == "compiled":
        for need in ("rope_q", "rope_k_kv_write", "v_kv_write"):
            if need not in names:
                sys.exit("check_run.py: --stack compiled, no '%s' in the trace" % need)
        if "rope_kv_write" in names:
            sys.exit("check_run.py: --stack compiled ran the fused RoPE kernel")
    if opt("--allreduce") in ("oneshot", "twoshot") and "--fuse-allreduce-norm" not in cmd:
        count = {}
        for e in ev:
            if e["tid"] == 0 and e["args"].get("layer", -1) >= 0 and \
                    e["name"] in ("allreduce", "symm_copy_in"):
                count[e["name"]] = count.get(e["name"], 0) + 1
        if not count.get("allreduce") or count.get("symm_copy_in") != count["allreduce"]:
            sys.exit("check_run.py: rank 0's layers ran %s: a copy into the symmetric "
                     "buffer before every all-reduce expected" % count)


def check_trace(cmd, run, check_keys):
    """check_run.py's trace check (its usage says what it checks); RUN and
    CHECK_KEYS are check_run.py's."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        doc = run(cmd, ["--trace", path])
        check_keys(doc)
        with open(path) as f:
            trace = json.load(f)
    ranks = doc["inputs"]["tp"]
    ev = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    tids = sorted({e["tid"] for e in ev})
    if tids != list(range(ranks)):
        sys.exit("check_run.py: tracks %s, expected one per rank" % tids)
    names = {e["name"] for e in ev}
    for need in ("qkv_proj", "attention", "down_proj", "lm_head"):
        if need not in names:
            sys.exit("check_run.py: no '%s' event in the trace" % need)
    if ranks > 1 and "allreduce" not in names:
        sys.exit("check_run.py: no allreduce in the trace")
    if any(e["dur"] < 0 for e in ev):
        sys.exit("check_run.py: negative duration")
    check_trace_stack(cmd, ev, names)
    meta = [e for e in trace["traceEvents"] if e["ph"] == "M"
            and e["name"] == "thread_name"]
    if len(meta) != ranks:
        sys.exit("check_run.py: %d track names for %d ranks" % (len(meta), ranks))
    print("check_run.py: trace with %d events on %d tracks" % (len(ev), ranks))
