#!/usr/bin/env python3
"""Measures, on one NVIDIA GPU, the operators a tensor-parallel decode step is
made of, for checking nvlemu's compute cost model (include/nvlemu/cost.h):

  gemm_qwen2.5-72b.csv   y[m,n] = x[m,k] . W[n,k]^T for the per-rank shard
                         shapes of Qwen2.5-72B at TP 8 and 2 (and lm_head at
                         TP 8); bf16 through F.linear (cuBLAS) and fp8 e4m3
                         with bf16 output through torch._scaled_mm (cuBLASLt).
  attention_decode.csv   one new token per sequence against a bf16 KV cache.
  attention_prefill.csv  causal self-attention over a whole prompt, bf16.
  elementwise.csv        RMSNorm, SiLU(gate)*up, residual add, RoPE, copy.
  env.json               GPU, clocks, library versions, date, and the copy
                         and 8192^3 bf16 matmul ceilings of this card.

Method: every timed unit is a list of calls, one per input buffer, captured
once in a CUDA graph (eager launches if capture fails: attention rows then
add '(eager)' to impl, env.json counts the units timed each way) and
replayed many times; each replay is timed with CUDA events and the median
replay time is divided by the number of calls.  Weights, KV caches and
elementwise inputs are rotated through more than 400 MB of distinct buffers
(fewer calls for the tiniest elementwise sizes, at most 512 per graph), so
they stream from HBM as in a real decode step rather than from L2.  Inputs
are random, never zeros.

Attention goes through flash_attn.flash_attn_with_kvcache where that package
imports, and through torch's scaled_dot_product_attention with each of its
fused backends otherwise ('impl' names the path; torch-matmul is the
unfused scores/softmax/sum reference).  For decode, 'packed' folds the query
heads of one KV group into the query length (exact for one new token, no KV
copy); 'gqa' passes enable_gqa=True.

Run on the device machine:
    python3 scripts/device/measure-ops.py --out "$OUT"
Options: --sections gemm,decode,prefill,elementwise (default all);
         --budget-s N stops starting new rows after N seconds.
"""
import argparse
import csv
import json
import math
import os
import statistics
import subprocess
import time
import traceback

import torch
import torch.nn.functional as F

from measure_common import T0, capture_graph, gpu_environment, log, nvidia_smi

MB = 1e6
ROTATE_BYTES = 450 * MB       # > 400 MB of distinct inputs per timed unit
MAX_CALLS_PER_GRAPH = 1024
BUDGET_S = 480.0
TIMING_MODES = {"graph": 0, "eager": 0}


def over_budget():
    return time.time() - T0 > BUDGET_S


def n_buffers(bytes_per_call, cap=MAX_CALLS_PER_GRAPH):
    """Distinct buffers so that one pass touches > ROTATE_BYTES (at least 2)."""
    return int(max(2, min(cap, math.ceil(ROTATE_BYTES / max(1, bytes_per_call)))))


def time_calls(calls, target_ms=60.0, min_reps=7, max_reps=200):
    """Median time of one call (us) over graph replays of all `calls`.
    Returns (us, mode) with mode 'graph' or 'eager'."""
    def all_calls():
        for f in calls:
            f()
    all_calls()              # warm up: handles, workspaces, autotuning
    torch.cuda.synchronize()
    mode = "graph"
    try:
        g = capture_graph(all_calls, warm=0)
        run = g.replay
    except Exception as e:  # noqa: BLE001 - fall back to eager launches
        log("  graph capture failed (%s); timing eagerly" % str(e).splitlines()[0][:120])
        torch.cuda.synchronize()
        g = None
        mode = "eager"
        run = all_calls
        run()
        torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    run()
    b.record()
    torch.cuda.synchronize()
    est = max(a.elapsed_time(b), 1e-3)
    reps = int(max(min_reps, min(max_reps, target_ms / est)))
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(reps)]
    for s, e in ev:
        s.record()
        run()
        e.record()
    torch.cuda.synchronize()
    med_ms = statistics.median(s.elapsed_time(e) for s, e in ev)
    del g
    TIMING_MODES[mode] += 1
    return med_ms * 1e3 / len(calls), mode


class CsvOut:
    def __init__(self, path, header):
        self.f = open(path, "w", newline="")
        self.w = csv.writer(self.f)
        self.w.writerow(header)
        self.f.flush()
        self.rows = 0

    def row(self, r):
        self.w.writerow(r)
        self.f.flush()
        self.rows += 1

    def close(self):
        self.f.close()


def free():
    torch.cuda.synchronize()
    torch.cuda.empty_cache()


# --------------------------------------------------------------------- GEMM

QWEN72B = dict(hidden=8192, inter=29568, q_heads=64, kv_heads=8, head_dim=128, vocab=152064)
GEMM_M = [1, 8, 32, 128, 512, 2048, 8192]


def qwen72b_shapes():
    c = QWEN72B
    out = []
    for tp in (8, 2):
        out.append((tp, "qkv", (c["q_heads"] + 2 * c["kv_heads"]) * c["head_dim"] // tp, c["hidden"]))
        out.append((tp, "o", c["hidden"], c["q_heads"] * c["head_dim"] // tp))
        out.append((tp, "gate_up", 2 * c["inter"] // tp, c["hidden"]))
        out.append((tp, "down", c["hidden"], c["inter"] // tp))
        if tp == 8:
            out.append((tp, "lm_head", c["vocab"] // tp, c["hidden"]))
    return out


def pad16(x):
    return (x + 15) // 16 * 16


def section_gemm(outdir):
    csvo = CsvOut(os.path.join(outdir, "gemm_qwen2.5-72b.csv"),
                  ["model", "tp", "op", "m", "n", "k", "dtype", "us", "tflops", "gbps"])
    dev = "cuda"
    have_fp8 = hasattr(torch, "_scaled_mm") and hasattr(torch, "float8_e4m3fn")
    dtypes = ["bf16"] + (["fp8"] if have_fp8 else [])
    modes = set()
    for tp, op, n0, k0 in qwen72b_shapes():
        n, k = pad16(n0), pad16(k0)
        for dt in dtypes:
            if over_budget():
                log("gemm: budget spent, stopping")
                csvo.close()
                return sorted(modes)
            try:
                wb = 2 if dt == "bf16" else 1
                nb = n_buffers(n * k * wb)
                # one allocation holding nb distinct weight matrices
                W = torch.randn(nb, n, k, device=dev, dtype=torch.bfloat16) * 0.05
                if dt == "fp8":
                    W = W.to(torch.float8_e4m3fn)
                    one = torch.tensor(1.0, device=dev, dtype=torch.float32)
                free()
                for m in GEMM_M:
                    try:
                        x = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
                        if dt == "bf16":
                            calls = [lambda w=W[i]: F.linear(x, w) for i in range(nb)]
                        else:
                            x8 = x.to(torch.float8_e4m3fn)
                            calls = [lambda w=W[i]: torch._scaled_mm(x8, w.t(), one, one,
                                                                     out_dtype=torch.bfloat16)
                                     for i in range(nb)]
                        # big products: fewer buffers per replay is enough
                        if m >= 2048:
                            calls = calls[:2]
                        us, mode = time_calls(calls)
                        modes.add(mode)
                        flops = 2.0 * m * n * k
                        byts = n * k * wb + m * k * wb + m * n * 2
                        csvo.row(["qwen2.5-72b", tp, op, m, n, k, dt, "%.3f" % us,
                                  "%.1f" % (flops / us / 1e6), "%.1f" % (byts / us / 1e3)])
                        log("gemm tp=%d %-7s m=%-5d n=%-6d k=%-6d %s  %9.3f us  %7.1f TF  %7.1f GB/s (%s, %d bufs)"
                            % (tp, op, m, n, k, dt, us, flops / us / 1e6, byts / us / 1e3, mode, len(calls)))
                        del calls, x
                    except Exception as e:  # noqa: BLE001
                        log("gemm FAILED tp=%d %s m=%d %s: %s" % (tp, op, m, dt, e))
                        torch.cuda.synchronize()
                del W
                free()
            except Exception as e:  # noqa: BLE001
                log("gemm FAILED tp=%d %s %s: %s" % (tp, op, dt, e))
                traceback.print_exc()
                free()
    csvo.close()
    return sorted(modes)


# ---------------------------------------------------------------- attention

HEAD_DIM = 128
HEADS = [(8, 1), (64, 8)]


def sdpa_backends():
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except Exception:  # noqa: BLE001
        return []
    out = []
    for name in ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION"):
        if hasattr(SDPBackend, name):
            out.append((name.split("_")[0].lower(), getattr(SDPBackend, name), sdpa_kernel))
    return out


def flash_attn_fn():
    try:
        from flash_attn import flash_attn_with_kvcache
        import flash_attn
        return flash_attn_with_kvcache, getattr(flash_attn, "__version__", "?")
    except Exception:  # noqa: BLE001
        return None, None


def section_decode(outdir):
    csvo = CsvOut(os.path.join(outdir, "attention_decode.csv"),
                  ["kind", "impl", "batch", "q_heads", "kv_heads", "head_dim", "ctx", "us", "kv_gbps"])
    dev, d = "cuda", HEAD_DIM
    fa, _ = flash_attn_fn()
    backends = sdpa_backends()
    for hq, hkv in HEADS:
        g = hq // hkv
        for b in (1, 8, 32, 128):
            for ctx in (1024, 4096, 16384, 32768):
                kv_bytes = 2 * b * hkv * ctx * d * 2
                if kv_bytes > 20e9:
                    continue
                if over_budget():
                    log("decode: budget spent, stopping")
                    csvo.close()
                    return
                try:
                    nb = n_buffers(kv_bytes)
                    variants = []
                    if fa is not None:
                        # flash_attn layout: [batch, seq, heads, dim]
                        K = torch.randn(nb, b, ctx, hkv, d, device=dev, dtype=torch.bfloat16)
                        V = torch.randn_like(K)
                        q = torch.randn(b, 1, hq, d, device=dev, dtype=torch.bfloat16)
                        variants.append(("flash_attn", [
                            lambda i=i: fa(q, K[i], V[i], causal=True) for i in range(nb)]))
                    else:
                        # SDPA layout: [batch, heads, seq, dim]
                        K = torch.randn(nb, b, hkv, ctx, d, device=dev, dtype=torch.bfloat16)
                        V = torch.randn_like(K)
                        qp = torch.randn(b, hkv, g, d, device=dev, dtype=torch.bfloat16)
                        qg = torch.randn(b, hq, 1, d, device=dev, dtype=torch.bfloat16)
                        scale = 1.0 / math.sqrt(d)

                        def mk_mm(i):
                            # unfused reference: scores, softmax, weighted sum
                            def f():
                                sc = torch.matmul(qp, K[i].transpose(-1, -2)) * scale
                                return torch.matmul(torch.softmax(sc.float(), -1).to(qp.dtype), V[i])
                            return f
                        variants.append(("torch-matmul/packed", [mk_mm(i) for i in range(nb)]))
                        for name, be, ctxmgr in backends:
                            def mk_p(i, be=be, ctxmgr=ctxmgr):
                                def f():
                                    with ctxmgr([be]):
                                        return F.scaled_dot_product_attention(qp, K[i], V[i])
                                return f

                            def mk_g(i, be=be, ctxmgr=ctxmgr):
                                def f():
                                    with ctxmgr([be]):
                                        return F.scaled_dot_product_attention(qg, K[i], V[i], enable_gqa=True)
                                return f
                            variants.append(("sdpa-%s/packed" % name, [mk_p(i) for i in range(nb)]))
                            if g > 1:
                                variants.append(("sdpa-%s/gqa" % name, [mk_g(i) for i in range(nb)]))
                    free()
                    for impl, calls in variants:
                        try:
                            us, mode = time_calls(calls, target_ms=40.0)
                            impl_m = impl if mode == "graph" else impl + "(eager)"
                            csvo.row(["decode", impl_m, b, hq, hkv, d, ctx, "%.3f" % us,
                                      "%.1f" % (kv_bytes / us / 1e3)])
                            log("decode %-22s b=%-3d h=%d/%d ctx=%-5d %9.3f us %7.1f GB/s (%d bufs)"
                                % (impl_m, b, hq, hkv, ctx, us, kv_bytes / us / 1e3, nb))
                        except Exception as e:  # noqa: BLE001
                            log("decode %s b=%d h=%d/%d ctx=%d unsupported: %s"
                                % (impl, b, hq, hkv, ctx, str(e).splitlines()[0][:160] if str(e) else repr(e)))
                            torch.cuda.synchronize()
                    del variants, K, V
                    free()
                except Exception as e:  # noqa: BLE001
                    log("decode FAILED b=%d h=%d/%d ctx=%d: %s" % (b, hq, hkv, ctx, e))
                    free()
    csvo.close()


def section_prefill(outdir):
    csvo = CsvOut(os.path.join(outdir, "attention_prefill.csv"),
                  ["kind", "impl", "batch", "q_heads", "kv_heads", "head_dim", "seq", "us", "tflops"])
    dev, d, b = "cuda", HEAD_DIM, 1
    fa, _ = flash_attn_fn()
    backends = sdpa_backends()
    for hq, hkv in HEADS:
        for s in (512, 2048, 8192, 16384):
            if over_budget():
                log("prefill: budget spent, stopping")
                csvo.close()
                return
            flops = 2.0 * 2 * b * hq * s * s * d / 2
            try:
                variants = []
                if fa is not None:
                    from flash_attn import flash_attn_func
                    q = torch.randn(b, s, hq, d, device=dev, dtype=torch.bfloat16)
                    k = torch.randn(b, s, hkv, d, device=dev, dtype=torch.bfloat16)
                    v = torch.randn_like(k)
                    variants.append(("flash_attn", lambda q=q, k=k, v=v: flash_attn_func(q, k, v, causal=True)))
                q = torch.randn(b, hq, s, d, device=dev, dtype=torch.bfloat16)
                k = torch.randn(b, hkv, s, d, device=dev, dtype=torch.bfloat16)
                v = torch.randn_like(k)
                # KV repeated up front, for backends without native GQA
                kx = k.repeat_interleave(hq // hkv, dim=1)
                vx = v.repeat_interleave(hq // hkv, dim=1)
                for name, be, ctxmgr in backends:
                    def fg(be=be, ctxmgr=ctxmgr):
                        with ctxmgr([be]):
                            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

                    def fx(be=be, ctxmgr=ctxmgr):
                        with ctxmgr([be]):
                            return F.scaled_dot_product_attention(q, kx, vx, is_causal=True)
                    variants.append(("sdpa-%s/gqa" % name, fg))
                    variants.append(("sdpa-%s/kv-expanded" % name, fx))
                for impl, f in variants:
                    try:
                        us, mode = time_calls([f], target_ms=40.0)
                        impl_m = impl if mode == "graph" else impl + "(eager)"
                        csvo.row(["prefill", impl_m, b, hq, hkv, d, s, "%.3f" % us,
                                  "%.1f" % (flops / us / 1e6)])
                        log("prefill %-26s h=%d/%d s=%-5d %10.3f us %7.1f TF"
                            % (impl_m, hq, hkv, s, us, flops / us / 1e6))
                    except Exception as e:  # noqa: BLE001
                        log("prefill %s h=%d/%d s=%d unsupported: %s"
                            % (impl, hq, hkv, s, str(e).splitlines()[0][:160] if str(e) else repr(e)))
                        torch.cuda.synchronize()
                del variants, q, k, v, kx, vx
                free()
            except Exception as e:  # noqa: BLE001
                log("prefill FAILED h=%d/%d s=%d: %s" % (hq, hkv, s, e))
                free()
    csvo.close()


# -------------------------------------------------------------- elementwise

def rmsnorm_hf(x, w, eps=1e-6):
    """RMSNorm as transformers' Qwen2RMSNorm computes it (fp32 inside)."""
    xf = x.float()
    var = xf.pow(2).mean(-1, keepdim=True)
    return w * (xf * torch.rsqrt(var + eps)).to(x.dtype)


def rope_hf(q, cos, sin):
    """Rotary embedding as transformers applies it (rotate_half)."""
    h = q.shape[-1] // 2
    rot = torch.cat((-q[..., h:], q[..., :h]), dim=-1)
    return q * cos + rot * sin


def section_elementwise(outdir):
    csvo = CsvOut(os.path.join(outdir, "elementwise.csv"), ["op", "m", "width", "us", "gbps"])
    dev, H = "cuda", QWEN72B["hidden"]
    inter = QWEN72B["inter"] // 8
    heads, d = QWEN72B["q_heads"] // 8, HEAD_DIM
    has_rms = hasattr(F, "rms_norm")
    bf = torch.bfloat16
    for m in (1, 32, 512, 8192):
        if over_budget():
            log("elementwise: budget spent, stopping")
            break
        cases = []
        # (op, width, bytes moved per call, bytes of distinct input per call, builder)
        if has_rms:
            cases.append(("rmsnorm", H, 2 * m * H * 2 + H * 2, m * H * 2, "rms"))
        cases.append(("rmsnorm_hf", H, 2 * m * H * 2 + H * 2, m * H * 2, "rms_hf"))
        cases.append(("silu_mul", inter, 3 * m * inter * 2, 2 * m * inter * 2, "silu"))
        cases.append(("residual_add", H, 3 * m * H * 2, 2 * m * H * 2, "add"))
        cases.append(("rope_hf", heads * d, 2 * m * heads * d * 2 + 2 * m * d * 2,
                      m * heads * d * 2, "rope"))
        cases.append(("copy", H, 2 * m * H * 2, m * H * 2, "copy"))
        for op, width, moved, distinct, kind in cases:
            try:
                nb = n_buffers(distinct, cap=512)
                w = torch.randn(H, device=dev, dtype=bf)
                if kind in ("rms", "rms_hf", "copy"):
                    X = torch.randn(nb, m, H, device=dev, dtype=bf)
                    if kind == "rms":
                        calls = [lambda i=i: F.rms_norm(X[i], (H,), w, 1e-6) for i in range(nb)]
                    elif kind == "rms_hf":
                        calls = [lambda i=i: rmsnorm_hf(X[i], w) for i in range(nb)]
                    else:
                        Y = torch.empty(m, H, device=dev, dtype=bf)
                        calls = [lambda i=i: Y.copy_(X[i]) for i in range(nb)]
                elif kind == "silu":
                    X = torch.randn(nb, m, 2 * inter, device=dev, dtype=bf)
                    calls = [lambda i=i: F.silu(X[i][:, :inter]) * X[i][:, inter:] for i in range(nb)]
                elif kind == "add":
                    X = torch.randn(nb, 2, m, H, device=dev, dtype=bf)
                    calls = [lambda i=i: X[i][0] + X[i][1] for i in range(nb)]
                else:
                    X = torch.randn(nb, m, heads, d, device=dev, dtype=bf)
                    cos = torch.randn(m, 1, d, device=dev, dtype=bf)
                    sin = torch.randn(m, 1, d, device=dev, dtype=bf)
                    calls = [lambda i=i: rope_hf(X[i], cos, sin) for i in range(nb)]
                us, mode = time_calls(calls, target_ms=30.0)
                csvo.row([op, m, width, "%.3f" % us, "%.1f" % (moved / us / 1e3)])
                log("elem %-13s m=%-5d w=%-5d %9.3f us %7.1f GB/s (%s, %d bufs)"
                    % (op, m, width, us, moved / us / 1e3, mode, nb))
                del calls, X
                free()
            except Exception as e:  # noqa: BLE001
                log("elem FAILED %s m=%d: %s" % (op, m, e))
                free()
    csvo.close()


# -------------------------------------------------------------- environment

def environment():
    env = gpu_environment(detail=True)
    fa, fav = flash_attn_fn()
    env["flash_attn"] = fav if fa is not None else "not installed"
    env["nvidia_smi"] = nvidia_smi("name,clocks.max.sm,clocks.max.mem,driver_version,"
                                   "power.limit,clocks.sm")
    return env


def ceilings(env):
    """Device-to-device copy (bytes read + written) and an 8192^3 bf16 matmul."""
    try:
        n = 1 << 30
        a = torch.empty(n, device="cuda", dtype=torch.uint8).random_(0, 255)
        b = torch.empty_like(a)
        us, _ = time_calls([lambda: b.copy_(a)], target_ms=50.0)
        env["d2d_copy_GBps_rw"] = round(2 * n / us / 1e3, 1)
        del a, b
        x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        y = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        us, _ = time_calls([lambda: x @ y], target_ms=100.0)
        env["bf16_gemm_8192_TFLOPs"] = round(2 * 8192**3 / us / 1e6, 1)
        del x, y
        free()
    except Exception as e:  # noqa: BLE001
        env["ceilings_error"] = str(e)


def main():
    global BUDGET_S
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "out"))
    ap.add_argument("--sections", default="gemm,decode,prefill,elementwise")
    ap.add_argument("--budget-s", type=float, default=BUDGET_S)
    args = ap.parse_args()
    BUDGET_S = args.budget_s
    os.makedirs(args.out, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    env = environment()
    log(json.dumps(env))
    ceilings(env)
    log("ceilings: copy %s GB/s, bf16 gemm %s TF" % (env.get("d2d_copy_GBps_rw"),
                                                     env.get("bf16_gemm_8192_TFLOPs")))
    env["method"] = ("CUDA-graph replay of one call per distinct input buffer (>400 MB rotated; "
                     "elementwise at most 512 buffers), CUDA events, median of replays")
    sections = {"gemm": section_gemm, "decode": section_decode,
                "prefill": section_prefill, "elementwise": section_elementwise}
    done = {}
    for name in args.sections.split(","):
        t = time.time()
        try:
            r = sections[name](args.out)
            done[name] = {"ok": True, "seconds": round(time.time() - t, 1)}
            if r:
                done[name]["timing_modes"] = r
        except Exception as e:  # noqa: BLE001
            traceback.print_exc()
            done[name] = {"ok": False, "error": str(e)}
        log("section %s: %s" % (name, done[name]))
        with open(os.path.join(args.out, "env.json"), "w") as f:
            json.dump(dict(env, sections=done), f, indent=2)
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.max.sm,temperature.gpu,power.draw",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        env["nvidia_smi_after"] = q.stdout.strip()
    except Exception:  # noqa: BLE001
        pass
    env["sections"] = done
    env["timed_units_by_mode"] = TIMING_MODES
    env["total_s"] = round(time.time() - T0, 1)
    with open(os.path.join(args.out, "env.json"), "w") as f:
        json.dump(env, f, indent=2)
    log("done")


if __name__ == "__main__":
    main()
