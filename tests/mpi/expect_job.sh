#!/bin/sh
# Usage: expect_job.sh fail|pass MESSAGE -- COMMAND...
#
# Runs an MPI job and judges it:
#   fail  it must fail cleanly: a non-zero exit code that is not a signal or
#         a timeout, MESSAGE on exactly one line, and that line its only
#         nvlemu report (an error every rank detects is reported once, not
#         once per rank);
#   pass  it must exit 0, print MESSAGE on exactly one line (rank 0 speaks
#         for the job) and report nothing.
# expect_failure.sh and expect_success.sh call it with the mode.
set -u
mode=$1
message=$2
shift 2
[ "${1-}" = "--" ] && shift

out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"

fail() {
    echo "expect_job.sh $mode: $*" >&2
    exit 1
}
if [ "$mode" = fail ]; then
    [ "$rc" -ne 0 ] || fail "the job exited 0; expected a failure"
    [ "$rc" -lt 124 ] || fail "the job ended with code $rc (a signal or a timeout)"
    want_reports=1
else
    [ "$rc" -eq 0 ] || fail "the job exited $rc; expected 0"
    want_reports=0
fi
n=$(grep -cF -- "$message" "$out")
[ "$n" -eq 1 ] || fail "'$message' printed $n times; expected once"
reports=$(grep -cE '^nvlemu(:|\[)' "$out") # "nvlemu: " or "nvlemu[rank N]: "
[ "$reports" -eq "$want_reports" ] || fail "$reports nvlemu reports; expected $want_reports"
exit 0
