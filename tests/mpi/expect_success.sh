#!/bin/sh
# Usage: expect_success.sh MESSAGE -- COMMAND...
#
# Runs an MPI job that must exit 0, print MESSAGE on exactly one line (rank
# 0 speaks for the job) and report nothing.
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
    echo "expect_success.sh: $*" >&2
    exit 1
}
[ "$rc" -eq 0 ] || fail "the job exited $rc; expected 0"
n=$(grep -cF -- "$message" "$out")
[ "$n" -eq 1 ] || fail "'$message' printed $n times; expected once"
reports=$(grep -cE '^nvlemu(:|\[)' "$out") # "nvlemu: " or "nvlemu[rank N]: "
[ "$reports" -eq 0 ] || fail "$reports nvlemu reports; expected none"
exit 0
