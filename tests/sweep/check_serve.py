"""check_serve.py DIR N all|none: DIR holds a finished bench/sweep --serve
of N runs; every run succeeded; results.csv, results.json, front.csv and
summary.md agree; 'all': every run meets the SLO, 'none': none does.  The
front must be exactly the feasible runs that no other feasible run
dominates (at least as many tokens/s per user and output tokens/s per GPU,
more of one), sorted by tokens/s per user."""
import csv
import json
import sys

out, n, which = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rows = list(csv.DictReader(open(out + "/results.csv")))
js = json.load(open(out + "/results.json"))
assert len(rows) == n == len(js), (len(rows), len(js), n)
for r, j in zip(rows, js):
    assert r["status"] == "ok", r
    assert r["run_id"] == j["run_id"]
    for k in ("tok_per_s_per_user", "output_tok_per_s_per_gpu", "ttft_ms.p90",
              "tpot_ms.p90", "slo_met", "inputs.model", "layout", "load"):
        assert r[k] != "", k
    assert float(r["output_tok_per_s_per_gpu"]) > 0 and float(r["tok_per_s_per_user"]) > 0
    assert r["feasible"] == ("yes" if which == "all" else "no"), r["feasible"]
kinds = {r["kind"] for r in rows}
assert kinds == {"agg", "disagg"}, kinds
assert {r["pool.prefill.gpus"] for r in rows if r["kind"] == "disagg"} == {"1"}
feas = [r for r in rows if r["feasible"] == "yes"]
pt = {r["run_id"]: (float(r["tok_per_s_per_user"]), float(r["output_tok_per_s_per_gpu"]))
      for r in rows}


def dominated(a, b):  # b dominates a
    return b[0] >= a[0] and b[1] >= a[1] and (b[0] > a[0] or b[1] > a[1])


expect = [r["run_id"] for r in feas
          if not any(dominated(pt[r["run_id"]], pt[q["run_id"]]) for q in feas)]
front = [r["run_id"] for r in rows if r["front"] == "yes"]
assert sorted(front) == sorted(expect), (front, expect)
for r in feas:  # every feasible run off the front is dominated by one on it
    if r["run_id"] not in front:
        assert any(dominated(pt[r["run_id"]], pt[f]) for f in front), r["run_id"]
fc = list(csv.DictReader(open(out + "/front.csv")))
assert [r["run_id"] for r in fc] == sorted(front, key=lambda i: pt[i][0]), fc
for a in fc:
    for b in fc:
        assert not dominated(pt[a["run_id"]], pt[b["run_id"]]), (a, b)
md = open(out + "/summary.md").read()
assert "Pareto front" in md and "Best at each per-user speed" in md, md
table = [l for l in md.split("Pareto front (")[1].split("\n\n")[1].splitlines()[2:]]
assert len(table) == max(1, len(front)), table
if which == "none":
    assert "no run meets the SLO" in md
print("check_serve: %d rows, %d on the front" % (n, len(front)))
