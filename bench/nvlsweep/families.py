"""The choices of the list options that name members of one of nvlemu's
families (allreduce implementations, stacks, schedulers ...): read from
the family's owner through `nvlemu --list --json`, so that the sweep
refuses a bad value before it launches anything, with the same names as
nvlemu itself.

A family that the nvlemu binary does not list yet is checked against the
names of its row here (`until_listed`); once nvlemu lists it, nvlemu's
names win and the row's can go (None).  Without a runnable nvlemu (a dry
run before the build) such a row's values are not checked here: nvlemu
refuses a bad one when the run starts."""
import json
import os
import subprocess

# option -> (nvlemu's family, the names until nvlemu lists that family)
CHOICES = {
    "allreduce": ("allreduce", None),
    "stack": ("stack", None),
    "overlap": ("overlap", None),
    "a2a": ("a2a", None),
    "attn_parallel": ("attn-parallel", None),
    "rank_plays": ("rank-plays", None),
    "scheduler": ("scheduler", None),
    "algos": ("algorithm", None),
    "protos": ("protocol", None),
}

_listed = {}


def listed(nvlemu):
    """{family: [member names]} as `nvlemu --list --json` gives them ({}
    when nvlemu cannot be run or has no --list)."""
    if nvlemu not in _listed:
        fams = {}
        if os.access(nvlemu, os.X_OK):
            try:
                p = subprocess.run([nvlemu, "--list", "--json"], stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, universal_newlines=True,
                                   timeout=60)
                doc = json.loads(p.stdout) if p.returncode == 0 else {}
            except (OSError, ValueError, subprocess.TimeoutExpired):
                doc = {}
            for f in doc.get("families", []):
                fams[f["family"]] = [m["name"] for m in f["members"]]
        _listed[nvlemu] = fams
    return _listed[nvlemu]


def names(nvlemu, option):
    """The accepted values of a choice option (the attribute's name), or
    None when they cannot be known here."""
    family, until_listed = CHOICES[option]
    return listed(nvlemu).get(family) or (list(until_listed) if until_listed else None)


def members(nvlemu, option, order):
    """Every member of the option's family, for a default that sweeps them
    all: those named in `order` (the sweep's presentation order, which its
    committed outputs follow) that nvlemu lists, then any other nvlemu
    lists, in nvlemu's order, so a member nvlemu adds joins the sweep
    without an edit here; `order` itself when nvlemu cannot be asked."""
    got = names(nvlemu, option)
    if got is None:
        return list(order)
    return [x for x in order if x in got] + [x for x in got if x not in order]


def spelled(choices):
    """'a or b' for two names, 'a, b, c' for more (the sweep's error texts)."""
    if len(choices) == 2:
        return " or ".join(choices)
    return ", ".join(choices)


def check(nvlemu, option, values):
    """Refuses (SystemExit) the first of values that is not a member."""
    choices = names(nvlemu, option)
    if choices is None:
        return
    for v in values:
        if v not in choices:
            raise SystemExit("sweep: --%s %r: expected %s" % (
                option.replace("_", "-"), v, spelled(choices)))
