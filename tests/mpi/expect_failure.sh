#!/bin/sh
# Usage: expect_failure.sh MESSAGE -- COMMAND...
#
# Runs an MPI job that must fail cleanly: a non-zero exit code that is not a
# signal or a timeout, MESSAGE on exactly one line of its output, and that
# line its only nvlemu report: an error that every rank detects is reported
# once, not once per rank.
set -u
message=$1
shift
[ "${1-}" = "--" ] && shift

out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"

fail() {
    echo "expect_failure.sh: $*" >&2
    exit 1
}
[ "$rc" -ne 0 ] || fail "the job exited 0; expected a failure"
[ "$rc" -lt 124 ] || fail "the job ended with code $rc (a signal or a timeout)"
n=$(grep -cF -- "$message" "$out")
[ "$n" -eq 1 ] || fail "'$message' printed $n times; expected once"
reports=$(grep -cE '^nvlemu(:|\[)' "$out") # "nvlemu: " or "nvlemu[rank N]: "
[ "$reports" -eq 1 ] || fail "$reports nvlemu reports; expected 1"
exit 0
