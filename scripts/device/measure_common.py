"""What the device measurement scripts (measure-steps.py, measure-ops.py)
share: the run's clock and log lines, the GPU and library versions that
env.json records, an nvidia-smi query, and the capture of a step in a CUDA
graph, and a graph's median replay time.  Standard library at import; torch is imported where it is used, so
that the scripts' paths without a GPU (measure-steps.py --relabel) need no
torch."""
import datetime
import subprocess
import sys
import time

T0 = time.time()   # the run's start: log lines and --budget-s count from it


def log(*a):
    print("[%6.1fs]" % (time.time() - T0), *a, flush=True)


def nvidia_smi(fields):
    """`nvidia-smi --query-gpu=FIELDS --format=csv,noheader`, or the error."""
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=" + fields, "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30)
        return q.stdout.strip()
    except Exception as e:  # noqa: BLE001
        return "error: %s" % e


def gpu_environment(detail=False):
    """env.json's start: the date, GPU 0 (name, SMs, memory; with detail
    also L2 and compute capability, an error kept instead of raised) and
    the torch, CUDA, cuDNN and Python versions."""
    import torch
    env = {"date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    if detail:
        try:
            p = torch.cuda.get_device_properties(0)
            env.update(gpu=torch.cuda.get_device_name(0), sms=p.multi_processor_count,
                       mem_GiB=round(p.total_memory / 2**30, 1),
                       l2_MB=round(getattr(p, "L2_cache_size", 0) / 1e6, 1),
                       capability="%d.%d" % (p.major, p.minor))
        except Exception as e:  # noqa: BLE001
            env["gpu_error"] = str(e)
    else:
        p = torch.cuda.get_device_properties(0)
        env.update(gpu=torch.cuda.get_device_name(0), sms=p.multi_processor_count,
                   mem_GiB=round(p.total_memory / 2**30, 1))
    env.update(torch=torch.__version__, cuda=torch.version.cuda,
               cudnn=str(torch.backends.cudnn.version()), python=sys.version.split()[0])
    return env


def capture_graph(run, warm):
    """run() warm times (cuBLAS handles, workspaces, heuristics), once on a
    side stream, then captured in a CUDA graph, replayed once; returns the
    graph.  Raises what capture raises."""
    import torch
    for _ in range(warm):
        run()
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        run()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        run()
    g.replay()
    torch.cuda.synchronize()
    return g


def graph_median_us(fn, fail, reps=20):
    """fn() once, then captured in a CUDA graph replayed REPS times, each
    replay timed by CUDA events; the median in us as "%.2f".  An exception
    is appended to FAIL (its first 200 characters) and gives "nan"."""
    import torch
    try:
        fn()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        ts = []
        for _ in range(reps):
            a.record()
            g.replay()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1e3)
        return "%.2f" % sorted(ts)[reps // 2]
    except Exception as x:  # noqa: BLE001 -- recorded, not fatal
        fail.append(str(x)[:200])
        return "nan"


def graph_mean_us(fn, fail, reps=20):
    """fn() run once, then captured in a CUDA graph (capture_graph) and
    replayed REPS times back to back between two CUDA events; the mean in us
    as "%.2f".  An exception is appended to FAIL (its first 200 characters)
    and gives "nan"."""
    import torch
    try:
        g = capture_graph(fn, 1)
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record()
        for _ in range(reps):
            g.replay()
        b.record()
        b.synchronize()
        return "%.2f" % (a.elapsed_time(b) * 1e3 / reps)
    except Exception as x:  # noqa: BLE001 -- recorded, not fatal
        fail.append(str(x)[:200])
        return "nan"
