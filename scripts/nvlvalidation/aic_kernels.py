"""AI Configurator's kernel tables (NVIDIA's performance databases of
TensorRT-LLM 1.3.0rc20's GEMMs and decode attention on H100, H200, B200 and
GB200; tests/data/calibration/aiconfigurator-kernels, its README) against
`nvlemu cost`: one held-out family per GPU and GEMM type, and per GPU and
KV-cache type (issues 31 and 32).  Nothing is fit to them.  Summary rows
and the document's section."""
import csv
import json
import os

from .common import ROOT, check_row, error, geomean, pct, run_all, table
from .families import regions, summary_row

AIC_KERNELS = "tests/data/calibration/aiconfigurator-kernels"
VERSION = "1.3.0rc20"
TOPO = {"h100": "topology/hgx-h100.topo", "h200": "topology/hgx-h200.topo",
        "b200": "topology/hgx-b200.topo", "gb200": "topology/gb200-nvl72.topo"}
GPU_NAME = {"h100": "H100 SXM", "h200": "H200 SXM", "b200": "B200", "gb200": "GB200"}
BLACKWELL = ("b200", "gb200")
# The report times a sample of the kept rows (one nvlemu cost process a
# GEMM or kernel, ~20 ms of CPU each): these shapes at these M, and these
# attention shapes, batches and contexts.  Every kept row is in the CSVs.
SAMPLE_NK = {(10240, 8192), (8192, 1024), (8192, 3584)}
SAMPLE_M = {1, 32, 256, 1024, 16384}
SAMPLE_HEADS = {(64, 8), (8, 1)}
SAMPLE_BATCH = {1, 64}
SAMPLE_CTX = {127, 2047, 32767}
GEMM_DTYPES = ("bfloat16", "fp8", "fp8_block", "nvfp4")
REGIONS = (("M <= 64", 1, 64), ("64 < M <= 1024", 65, 1024), ("M > 1024", 1025, 1 << 62))


def linear(dtype):
    """What TensorRT-LLM 1.3.0rc20's Linear.forward runs for AI
    Configurator's GEMM type DTYPE (collector/trtllm/collect_gemm.py
    builds a Linear per row; tensorrt_llm/_torch/modules/linear.py):
    (nvlemu --dtype, the GEMM library its op runs (a tuple: with more
    than one, the fastest per shape is taken, as an autotuner would), and
    the activation kernels
    before the GEMM as bytes moved per element of x[M, K], 0 for a
    kernel of no size such as a memset)."""
    if dtype == "bfloat16":  # UnquantizedLinearMethod: F.linear / cublas_mm
        return "bf16", ("cublaslt",), ()
    if dtype == "fp8":
        # FP8QDQLinearMethod without an input scale (the collector loads
        # none): quantize_e4m3_per_tensor = a memset of the amax, one
        # kernel reading x for its amax, one quantizing it (bf16 in, e4m3
        # out: fp8Quantize / quantization.cu PER_TENSOR), then
        # cublas_scaled_mm
        return "fp8", ("cublaslt",), (0, 2, 3)
    if dtype == "fp8_block":
        # Hopper: fp8_quantize_1x128 + fp8_block_scaling_gemm (TensorRT-LLM's
        # DeepGEMM-derived SM90 kernel); SM100: fp8_swap_ab_gemm =
        # per_token_quant_and_transform + deep_gemm.fp8_gemm_nt.  One
        # quantizing kernel: bf16 in, e4m3 and a float scale per 128 out
        return "fp8-block", ("deepgemm",), (3 + 4 / 128,)
    if dtype == "nvfp4":
        # NVFP4LinearMethod: fp4_quantize (bf16 in, e2m1 and an e4m3 scale
        # per 16 out) + nvfp4_gemm, autotuned over the Linear's
        # nvfp4_allowed_backends.  The rows' large-M rate is CUTLASS's
        # (GB200, M = 16384 x 10240 x 8192: 4.7 PFLOP/s of GEMM after the
        # quantization, the model's CUTLASS cell 4.9, its cuBLASLt 7.6), so
        # the autotuner's pick is taken as CUTLASS, the fused stack's
        # (docs/cost-model.md, "GEMM libraries")
        return "nvfp4", ("cutlass",), (2 + 0.5 + 1 / 16,)
    raise ValueError(dtype)  # _read admits GEMM_DTYPES only


def read_aic_kernels(folder=AIC_KERNELS):
    """(GEMM rows, attention rows) of FOLDER's gemm.csv and attention.csv
    (relative to the repository root or absolute), every row checked
    (_read) before any run."""
    return (_read(folder, "gemm.csv", ("m", "n", "k"), {"dtype": GEMM_DTYPES}),
            _read(folder, "attention.csv", ("batch", "ctx", "heads", "kv_heads", "head_dim"),
                  {"kv_dtype": ("bfloat16", "fp8")}))


def _read(folder, name, ints, choices):
    """The rows of FOLDER/NAME, each checked: a gpu not in TOPO, a column of
    INTS that is not a positive integer, a column of CHOICES ({column:
    allowed}) not among its values or a latency that is not a positive
    number stops the report naming the file and line."""
    path = os.path.join(folder, name)
    with open(os.path.join(ROOT, path)) as f:
        rows = list(csv.DictReader(f))
    for n, r in enumerate(rows, start=2):
        check_row(path, n, r, dict(choices, gpu=tuple(TOPO)), ints, "latency_ms")
    return rows


def _cost(build, topo, args):
    return [os.path.join(build, "nvlemu"), "cost", "--topo", topo, "--json", "-"] + args


def _times_us(outs):
    return [float(json.loads(o)["time_us"]) for o in outs]


def gemm_rows(build, src, sample=True):
    """The GEMM rows (a sample: SAMPLE_NK x SAMPLE_M) with the model's time:
    the Linear's activation kernels (nvlemu cost elementwise) plus its
    GEMM in its library (nvlemu cost gemm; the fastest, if several)."""
    src = [r for r in src if not sample
           or ((int(r["n"]), int(r["k"])) in SAMPLE_NK and int(r["m"]) in SAMPLE_M)]
    cmds, plan = [], []
    for r in src:
        topo = TOPO[r["gpu"]]
        dt, libs, quant = linear(r["dtype"])
        m, k = int(r["m"]), int(r["k"])
        gi = [len(cmds) + i for i in range(len(libs))]
        cmds += [_cost(build, topo, ["gemm", r["m"], r["n"], r["k"], "--dtype", dt,
                                     "--library", lib]) for lib in libs]
        qi = [len(cmds) + i for i in range(len(quant))]
        cmds += [_cost(build, topo, ["elementwise", str(max(1, round(b * m * k)))])
                 for b in quant]
        plan.append((gi, qi, libs))
    t = _times_us(run_all(cmds))
    rows = []
    for r, (gi, qi, libs) in zip(src, plan):
        g = min(range(len(gi)), key=lambda i: t[gi[i]])
        quant = sum(t[i] for i in qi)
        pred, meas = t[gi[g]] + quant, 1e3 * float(r["latency_ms"])
        m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
        rows.append(dict(r, pred_us=pred, meas_us=meas, gemm_us=t[gi[g]], quant_us=quant,
                         library=libs[g], error=error(pred, meas), size=2.0 * m * n * k,
                         topo=TOPO[r["gpu"]], ranks=1))
    return rows


def attention_rows(build, src, sample=True):
    """The decode-attention rows (a sample) with nvlemu cost attention's
    time (the kernel nvlemu run picks: fa4 on Blackwell, fa3 on Hopper)."""
    src = [r for r in src if not sample or ((int(r["heads"]), int(r["kv_heads"])) in SAMPLE_HEADS
                             and int(r["batch"]) in SAMPLE_BATCH
                             and int(r["ctx"]) in SAMPLE_CTX)]
    kv = KV_NAME
    pre = run_all([_cost(build, TOPO[r["gpu"]], ["elementwise", str(_preprocess_bytes(r))])
                   for r in src])
    outs = [json.loads(o) for o in run_all([_cost(build, TOPO[r["gpu"]],
                                 ["attention", "--batch", r["batch"], "--ctx", r["ctx"],
                                  "--heads", r["heads"], "--kv-heads", r["kv_heads"],
                                  "--head-dim", r["head_dim"], "--kv-dtype", kv[r["kv_dtype"]]])
                           for r in src])]
    rows = []
    for r, o, p in zip(src, outs, _times_us(pre)):
        pred, meas = o["time_us"] + p, 1e3 * float(r["latency_ms"])
        rows.append(dict(r, pred_us=pred, meas_us=meas, attn_us=o["time_us"], pre_us=p,
                         error=error(pred, meas), size=o["flops"],
                         kernel=o["inputs"]["kernel"], topo=TOPO[r["gpu"]], ranks=1))
    return rows


def _preprocess_bytes(r):
    """What the attention op's QKV preprocessing kernel moves before the
    attention kernel (TensorRT-LLM's generation path: RoPE on q and k and
    the new token's k and v appended to the paged cache, a kernel of its
    own, then XQA): the bf16 q, k, v of each sequence's new token read,
    q written back, k and v written into the cache in its type."""
    b, h, kvh, d = (int(r[x]) for x in ("batch", "heads", "kv_heads", "head_dim"))
    kv_bytes = 1 if r["kv_dtype"] == "fp8" else 2
    return b * d * ((h + 2 * kvh) * 2 + h * 2 + 2 * kvh * kv_bytes)


def _gemm_family(gpu, dtype):
    return "AI Configurator GEMM (TensorRT-LLM %s): %s %s" % (VERSION, GPU_NAME[gpu], dtype)


# the tables' KV dtypes as nvlemu names them (--kv-dtype, cost attention's
# provenance attribute kv_dtype)
KV_NAME = {"bfloat16": "bf16", "fp8": "fp8"}


def _attn_family(gpu, kv):
    return "AI Configurator decode attention: %s %s" % (GPU_NAME[gpu], kv)


def _errs(rows, lo=1, hi=1 << 62):
    return [r["error"] for r in rows if lo <= int(r["m"]) <= hi]


def _cell(errs):
    return "%s / %s (%d)" % (pct(geomean(errs)), pct(max(errs)), len(errs)) if errs else "-"


def _signed_geo(rows):
    """Geometric mean of pred/meas - 1: which way a family is off."""
    return pct(geomean([r["pred_us"] / r["meas_us"] - 1 for r in rows])) if rows else "-"


def aic_kernel_families(build, rows):
    """(summary rows, document lines) of the AI Configurator families from
    ROWS (read_aic_kernels')."""
    gemms, attns = gemm_rows(build, rows[0]), attention_rows(build, rows[1])
    summary, gtab, atab = [], [], []
    for gpu in TOPO:
        for dt in GEMM_DTYPES:
            rows = [r for r in gemms if r["gpu"] == gpu and r["dtype"] == dt]
            if not rows:
                continue
            name = _gemm_family(gpu, dt)
            libs = [r["library"] for r in rows]
            summary.append(summary_row(name, [r["error"] for r in rows], AIC_KERNELS, held_out=True,
                                       attributes={"library": max(set(libs), key=libs.count),
                                                   "dtype": linear(dt)[0]},
                                       where=regions(rows, "gemm", unit="FLOP")))
            gtab.append([GPU_NAME[gpu], dt, "+".join(linear(dt)[1]),
                         _cell(_errs(rows))] + [_cell(_errs(rows, lo, hi))
                                                for _, lo, hi in REGIONS]
                        + [_signed_geo(rows)])
        for kv in ("bfloat16", "fp8"):
            rows = [r for r in attns if r["gpu"] == gpu and r["kv_dtype"] == kv]
            if not rows:
                continue
            summary.append(summary_row(_attn_family(gpu, kv), [r["error"] for r in rows],
                                       AIC_KERNELS,
                                       held_out=True,
                                       attributes={"kernel": rows[0]["kernel"],
                                                   "kv_dtype": KV_NAME[kv]},
                                       where=regions(rows, "attention", unit="FLOP")))
            by_ctx = [_cell([r["error"] for r in rows if r["ctx"] == c])
                      for c in sorted({r["ctx"] for r in attns}, key=int)]
            atab.append([GPU_NAME[gpu], kv, _cell([r["error"] for r in rows])] + by_ctx
                        + [_signed_geo(rows)])
    ctxs = sorted({r["ctx"] for r in attns}, key=int)
    doc = ["## AI Configurator kernel tables (TensorRT-LLM %s, held out)\n" % VERSION,
           "NVIDIA's AI Configurator performance databases: TensorRT-LLM's `Linear` "
           "and decode attention timed in a CUDA graph on one H100 SXM, H200 SXM, B200 "
           "and GB200 (" + AIC_KERNELS + ", its README: source, conditions). A GEMM row is "
           "predicted as what the `Linear` runs: the activation quantization kernels "
           "(`nvlemu cost elementwise`) and the GEMM (`nvlemu cost gemm M N K --dtype D "
           "--library L` on the GPU's topology, L the library TensorRT-LLM's op runs "
           "for the type: aic_kernels.py's `linear`); an attention row as the op's QKV "
           "preprocessing kernel "
           "(RoPE and the KV append: `nvlemu cost elementwise`) and `nvlemu cost "
           "attention --batch B --ctx C --heads H --kv-heads K --head-dim 128 --kv-dtype "
           "D`. Nothing was fit to "
           "these rows. The report times a sample of the kept rows (%d GEMMs, %d "
           "attention calls); cells are geomean / worst error (rows), \"bias\" the "
           "geomean of predicted / measured - 1.\n" % (len(gemms), len(attns)),
           table(["GPU", "dtype", "libraries", "all"] + [n for n, _, _ in REGIONS]
                 + ["bias"], gtab),
           table(["GPU", "KV cache", "all"] + ["ctx %s" % c for c in ctxs] + ["bias"], atab)]
    return summary, doc
