#!/usr/bin/env python3
"""Usage: check_validation.py [--json] [--expect FAMILY]... [--extrapolated N] -- COMMAND...

Runs COMMAND (an nvlemu run/serve/cost or a *_perf bench under mpiexec) and
checks the validation families its report ends with (docs/validation.md,
"Provenance"): with --json, standard output is the JSON document and its
"validation" list must hold an object with the keys family, geomean_error,
worst_error, covers and extrapolated for each --expect FAMILY (covered,
not extrapolated), and exactly N objects with "family": null; without
--json, the text report must hold a '# validation (' line, a line naming
each FAMILY, and N lines saying 'extrapolated: no validation family'."""
import json
import subprocess
import sys


def main():
    args = sys.argv[1:]
    cut = args.index("--")
    opts, cmd = args[:cut], args[cut + 1:]
    as_json = "--json" in opts
    expect = [opts[i + 1] for i, o in enumerate(opts) if o == "--expect"]
    n_none = int(opts[opts.index("--extrapolated") + 1]) if "--extrapolated" in opts else 0
    p = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(p.stdout[-4000:])
    sys.stderr.write(p.stderr[-4000:])
    if p.returncode != 0:
        sys.exit("check_validation: the command exited %d" % p.returncode)
    if as_json:
        entries = json.loads(p.stdout)["validation"]
        keys = {"family", "geomean_error", "worst_error", "covers", "extrapolated"}
        for e in entries:
            if not keys <= set(e):
                sys.exit("check_validation: an entry lacks %s: %s" % (keys - set(e), e))
        for fam in expect:
            if not any(e["family"] == fam and not e["extrapolated"] for e in entries):
                sys.exit("check_validation: no covered entry for '%s' in %s" % (fam, entries))
        none = [e for e in entries if e["family"] is None]
        if len(none) != n_none or any(not e["extrapolated"] for e in none):
            sys.exit("check_validation: %d entries without a family, expected %d: %s"
                     % (len(none), n_none, entries))
    else:
        text = p.stdout + p.stderr
        if "# validation (" not in text:
            sys.exit("check_validation: no '# validation (' line")
        for fam in expect:
            if '"%s"' % fam not in text:
                sys.exit("check_validation: no line names '%s'" % fam)
        got = text.count("extrapolated: no validation family")
        if got != n_none:
            sys.exit("check_validation: %d extrapolated lines, expected %d" % (got, n_none))
    print("check_validation: ok")


main()
