#!/bin/sh
# Usage: check_run.sh CHECK -- COMMAND...: check_run.py judges an
# `nvlemu run` job (see there).  Exits 77 (skipped) without python3.
command -v python3 >/dev/null 2>&1 || {
    echo "check_run.sh: python3 not found; skipped"
    exit 77
}
exec python3 "$(dirname "$0")/check_run.py" "$@"
