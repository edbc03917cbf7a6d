#!/bin/sh
# Usage: check_bf16.sh BF16_DIR -- COMMAND...: see check_bf16.py.  Exits 77
# (skipped) without python3.
command -v python3 >/dev/null 2>&1 || {
    echo "check_bf16.sh: python3 not found; skipped"
    exit 77
}
exec python3 "$(dirname "$0")/check_bf16.py" "$@"
