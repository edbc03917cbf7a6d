#!/bin/sh
# Usage: expect_json.sh RANKS -- COMMAND...
#
# Runs `nvlemu topo ... --json -` or `nvlemu run ... --json -` as an MPI
# job: it must exit 0 and its standard output must be one JSON document
# (rank 0 writes it, no other rank and no readable report adds to it) of a
# job of RANKS ranks.  Exits 77 (skipped) without python3.
set -u
ranks=$1
shift
[ "${1-}" = "--" ] && shift
command -v python3 >/dev/null 2>&1 || {
    echo "expect_json.sh: python3 not found; skipped"
    exit 77
}

out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
"$@" >"$out"
rc=$?
cat "$out"
[ "$rc" -eq 0 ] || {
    echo "expect_json.sh: the job exited $rc; expected 0" >&2
    exit 1
}
python3 - "$ranks" "$out" <<'PY'
import json, sys
ranks, path = int(sys.argv[1]), sys.argv[2]
with open(path) as f:
    doc = json.load(f)  # raises on anything but one JSON document
if "inputs" in doc:  # nvlemu run
    if doc["inputs"]["tp"] != ranks:
        sys.exit("expect_json.sh: inputs.tp is %r; expected %d"
                 % (doc["inputs"]["tp"], ranks))
    sys.exit(0)
got = doc["job"]["ranks"]
if got != ranks:
    sys.exit("expect_json.sh: job.ranks is %r; expected %d" % (got, ranks))
for key in ("file", "hash", "spec", "overrides"):
    if key not in doc:
        sys.exit("expect_json.sh: no '%s' in the document" % key)
PY
