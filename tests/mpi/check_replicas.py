"""check_run.py's `replicas T` check: the command (N ranks, maybe --pp P)
with --tp T, N / (T x P) replicas, and one replica alone (T x P ranks, no
--tp) give the same report (tokens too, in data mode), emulation aside, and
job_replicas says N / (T x P) replicas whose pass ends agree bit for bit."""
import sys


def check_replicas(cmd, run, tp):
    """run(cmd, extra) -> the JSON of a job."""
    n = int(cmd[cmd.index("-n") + 1])
    pp = int(cmd[cmd.index("--pp") + 1]) if "--pp" in cmd else 1
    many = run(cmd, ["--tp", str(tp)])
    alone = cmd[:cmd.index("-n") + 1] + [str(tp * pp)] + cmd[cmd.index("-n") + 2:]
    one = run(alone, [])
    got = many.pop("job_replicas", None)
    if got is None or got["count"] != n // (tp * pp) or got["pass_end_spread_us"] != 0:
        sys.exit("check_run.py: job_replicas %r, expected %d replicas whose pass "
                 "ends agree" % (got, n // (tp * pp)))
    for k in sorted(set(many) | set(one)):
        if k != "emulation" and many.get(k) != one.get(k):
            sys.exit("check_run.py: %s differs between %d replicas and one:\n%s\n%s"
                     % (k, got["count"], many.get(k), one.get(k)))
    print("check_run.py: %d replicas of TP %d x PP %d report as one alone"
          % (got["count"], tp, pp))
