#!/bin/sh
# Usage: expect_failure.sh MESSAGE -- COMMAND...: the job must fail cleanly,
# reporting MESSAGE once (expect_job.sh fail).
exec sh "$(dirname "$0")/expect_job.sh" fail "$@"
