#!/bin/sh
# Usage: check-perf-output.sh [--unchecked] -- COMMAND...
#
# Runs a benchmark job (mpiexec -n N build/bench/<coll>_perf ...) that must
# exit 0 and print a clean nccl-tests table: at least one row, every #wrong
# 0 or N/A, at least one 0 (a data-mode check ran) unless --unchecked (all
# sizes in timing mode), the footer "# Out of bounds values : 0 OK", and no
# nvlemu report.
set -u
checked=1
if [ "${1-}" = "--unchecked" ]; then checked=0; shift; fi
[ "${1-}" = "--" ] && shift
if [ $# -eq 0 ]; then
    echo "usage: $0 [--unchecked] -- COMMAND..." >&2
    exit 2
fi

out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"

fail() {
    echo "check-perf-output.sh: $*" >&2
    exit 1
}
[ "$rc" -eq 0 ] || fail "the job exited $rc; expected 0"
reports=$(grep -cE '^nvlemu(:|\[)' "$out")
[ "$reports" -eq 0 ] || fail "$reports nvlemu reports; expected none"
# a row: size count type redop root | time algbw busbw #wrong (out of
# place) | the same in place | wall(us) algo proto
awk -v checked="$checked" '
    /^#/ { if ($0 == "# Out of bounds values : 0 OK") footer = 1; next }
    NF == 0 || !($1 ~ /^[0-9]+$/) { next }
    NF != 16 { print "malformed row: " $0; bad = 1; next }
    {
        rows++
        for (f = 9; f <= 13; f += 4)
            if ($f == "0") zeros++
            else if ($f != "N/A") { print "wrong elements: " $0; bad = 1 }
    }
    END {
        if (rows == 0) { print "no rows"; bad = 1 }
        if (!footer) { print "no \"# Out of bounds values : 0 OK\""; bad = 1 }
        if (checked && zeros == 0) { print "no result was checked"; bad = 1 }
        exit bad
    }' "$out" >&2 || fail "the table is not clean (see above)"
exit 0
