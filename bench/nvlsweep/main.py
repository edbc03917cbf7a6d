"""The command line: which grid to run (nvlemu run, nvlemu serve or the
collectives benches), and a clean stop on Ctrl-C (run it again to resume)."""
import sys

from .collectives import sweep_collectives
from .models import sweep_models
from .options import build_parser
from .serve import sweep_serve


def main(argv=None):
    a = build_parser().parse_args(argv)
    if a.serve and a.collectives:
        raise SystemExit("sweep: --serve or --collectives, not both")
    if a.collectives and a.pp != [1]:
        raise SystemExit("sweep: --pp: model and serving runs only")
    if a.tp is None and not (a.serve and a.disagg):
        a.tp = [8, 16, 72]
    try:
        if a.serve:
            return sweep_serve(a)
        return sweep_collectives(a) if a.collectives else sweep_models(a)
    except KeyboardInterrupt:
        sys.stderr.write("\nsweep: interrupted; run the same command again to resume\n")
        return 130
