#!/bin/sh
# Usage: check-perf-time.sh HEADER SIZE COLUMN MIN MAX -- COMMAND...
# Runs a <coll>_perf job; it must succeed, print a header line containing
# HEADER (e.g. "nThread 1 nGpus 2"), and a table row for SIZE bytes whose
# out-of-place COLUMN ("time" in us or "busbw" in GB/s) lies in [MIN, MAX].
set -u
header=$1 size=$2 column=$3 min=$4 max=$5
shift 5
[ "$1" = "--" ] && shift
out=$("$@" 2>&1) || { echo "$out"; echo "FAIL: the job failed"; exit 1; }
echo "$out"
echo "$out" | grep -q "^# $header" ||
    { echo "FAIL: no header line '# $header'"; exit 1; }
echo "$out" | awk -v size="$size" -v col="$column" -v lo="$min" -v hi="$max" '
    $1 == size && $1 ~ /^[0-9]+$/ {
        v = col == "time" ? $6 : $8
        found = 1
        if (v + 0 < lo + 0 || v + 0 > hi + 0) {
            printf "FAIL: %s B: %s %s outside [%s, %s]\n", size, col, v, lo, hi
            bad = 1
        }
    }
    END {
        if (!found) { printf "FAIL: no row for %s B\n", size; exit 1 }
        exit bad
    }'
