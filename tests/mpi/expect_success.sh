#!/bin/sh
# Usage: expect_success.sh MESSAGE -- COMMAND...: the job must exit 0,
# printing MESSAGE once and reporting nothing (expect_job.sh pass).
exec sh "$(dirname "$0")/expect_job.sh" pass "$@"
