"""check_sweep.py DIR N: DIR holds a finished sweep of N runs: results.csv,
results.json and summary.md agree, every run succeeded, and each row holds
its inputs and the reported numbers."""
import csv
import json
import sys

out, n = sys.argv[1], int(sys.argv[2])
rows = list(csv.DictReader(open(out + "/results.csv")))
js = json.load(open(out + "/results.json"))
assert len(rows) == n == len(js), (len(rows), len(js), n)
for r, j in zip(rows, js):
    assert r["status"] == "ok", r
    assert r["run_id"] == j["run_id"]
    assert int(r["tp"]) == int(r["inputs.tp"]) == j["inputs.tp"]
    assert int(r["batch"]) == j["inputs.batch"]
    assert r["ctx"] == "16" and j["inputs.ctx"] == 16
    for k in ("ttft_ms", "tpot_ms", "tokens_per_s_per_gpu", "tokens_per_s_rack",
              "decode_step_breakdown.collective_ms", "inputs.topology", "inputs.dtype"):
        assert r[k] != "", k
    assert float(r["tpot_ms"]) > 0
    assert abs(float(r["tokens_per_s_per_gpu"]) * int(r["tp"]) * float(r["tpot_ms"]) / 1e3
               - int(r["batch"])) < 1e-3 * int(r["batch"])
assert {(int(r["tp"]), int(r["batch"])) for r in rows} == {(1, 1), (1, 2), (2, 1), (2, 2)}
md = open(out + "/summary.md").read().splitlines()
table = [l for l in md if l.startswith("| ") and "tok/s/GPU" not in l]
assert len(table) == n, table
print("check_sweep: %d rows ok" % n)
