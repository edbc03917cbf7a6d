"""Where jobs run and how they are launched: the repository root, the
nvlemu binary and the launcher (scripts/nvlrun or --mpirun), the topology
and model names resolved for commands run from the root, one job run
under a time limit with its command and output saved next to its
results, and the command line the user typed (recorded in every
summary)."""
import json
import os
import shlex
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rel_to_repo(path):
    """A path for commands run from the repository root: relative when it
    lies inside the repository, absolute otherwise."""
    a = os.path.abspath(path)
    r = os.path.relpath(a, REPO)
    return a if r.startswith("..") else r


def resolve_topo(name):
    if os.path.exists(name):
        return rel_to_repo(name)
    cand = os.path.join(REPO, "topology", name + ("" if name.endswith(".topo") else ".topo"))
    if os.path.exists(cand):
        return rel_to_repo(cand)
    raise SystemExit("sweep: --topo %s: no such file, nor topology/%s.topo"
                     % (name, name))


def resolve_model(name):
    if os.path.isdir(name):
        return rel_to_repo(name)
    return name  # a preset: nvlemu checks the name


def find_binary(opt, name):
    if opt:
        return os.path.abspath(opt)
    build = os.environ.get("NVL_BUILD_DIR", os.path.join(REPO, "build"))
    path = os.path.join(build if os.path.isabs(build) else os.path.join(REPO, build), name)
    return path


NVLRUN = os.path.join(REPO, "scripts", "nvlrun")


def find_mpirun(opt):
    """The launcher: --mpirun's, else scripts/nvlrun (mpirun with the
    project's one-host settings: shared-memory transport, hwloc without
    its plugins and I/O discovery, the ranks' timer slack; a 72-rank job
    costs about half the CPU of a plain mpirun on 2 cores)."""
    if opt:
        return opt
    if not shutil.which("mpirun") and not shutil.which("mpiexec"):
        raise SystemExit("sweep: neither mpirun nor mpiexec found (scripts/install-deps)")
    return NVLRUN


def launcher_env():
    env = dict(os.environ)
    if os.geteuid() == 0:
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return env


def mpi_prefix(mpirun, np, hostfile):
    """The command's launcher part: scripts/nvlrun NP (the hostfile through
    NVL_HOSTFILE; nvlrun adds --oversubscribe itself), or an mpirun given
    by --mpirun with -n NP, --oversubscribe and --hostfile as needed."""
    if mpirun == NVLRUN:
        return (["env", "NVL_HOSTFILE=" + hostfile] if hostfile else []) + \
            [rel_to_repo(NVLRUN), str(np)]
    cmd = [mpirun, "-n", str(np)]
    if np > (os.cpu_count() or 1) or hostfile:
        cmd.append("--oversubscribe")
    if hostfile:
        cmd += ["--hostfile", hostfile]
    return cmd


def sh_quote(args):
    return " ".join(shlex.quote(a) for a in args)


def dry_run_note():
    print("# from %s%s" % (REPO, "; as root, with OMPI_ALLOW_RUN_AS_ROOT=1 "
                           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 in the environment"
                           if os.geteuid() == 0 else ""))


def command_line():
    """The command as the user typed it: `nvlemu sweep` passes its own name
    (NVL_SWEEP_TYPED) and the --nvlemu it added, which is left out."""
    typed = os.environ.get("NVL_SWEEP_TYPED")
    args = sys.argv[1:]
    if typed and args[:1] == ["--nvlemu"]:
        args = args[2:]
    return (typed or "bench/sweep") + " " + " ".join(shlex.quote(a) for a in args)


def run_captured(cmd, env, timeout):
    """Runs cmd from the repository root; (output, exit code), -1 and a
    note at the end of the output when it ran past timeout seconds."""
    try:
        p = subprocess.run(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, universal_newlines=True,
                           timeout=timeout)
        return p.stdout, p.returncode
    except subprocess.TimeoutExpired as e:
        outtext = (e.stdout or b"")
        outtext = outtext.decode(errors="replace") if isinstance(outtext, bytes) else outtext
        outtext += "\nsweep: stopped after %g s (--timeout)" % timeout
        return outtext, -1


def launch(a, cmd, env, extra_env, rdir, rid, t0):
    """Runs one job from the repository root (stopped after --timeout) and
    writes runs/<id>.sweep.json (the command, its exit code, the host's wall
    time since t0) and runs/<id>.log (the command and its output).
    Returns (output, exit code); extra_env: the variables the job sets."""
    outtext, rc = run_captured(cmd, env, a.timeout)
    wall = time.time() - t0
    with open(os.path.join(rdir, rid + ".sweep.json"), "w") as f:
        json.dump({"command": cmd, "env": extra_env, "cwd": REPO, "exit_code": rc,
                   "sweep_wall_s": round(wall, 3)}, f, indent=1)
    with open(os.path.join(rdir, rid + ".log"), "w") as f:
        f.write("$ " + " ".join("%s=%s" % kv for kv in extra_env.items()) +
                (" " if extra_env else "") + sh_quote(cmd) + "\n" + outtext)
    return outtext, rc


def error_text(out):
    """The lines of a failed run's output that say why."""
    lines = [l.strip() for l in out.splitlines() if l.strip()]
    why = [l for l in lines if l.startswith("nvlemu") and "# nvlemu" not in l
           and not l.startswith("# ")]
    if not why:
        why = [l for l in lines if not l.startswith("-") and not l.startswith("#")][-3:]
    return " | ".join(why[:3])[:400]
