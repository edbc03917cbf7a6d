"""Time a Triton MoE GEMM of the tile mechanism vLLM v0.11.0's fused_moe
runs (R sorted by expert and padded to whole BLOCK_M blocks, one
expert a block, A R gathered through the sorted ids, block-FP8 scales
applied per k block) at Qwen3-235B-A22B's expert shards on one GPU
(N and K whole tiles at every shape here, so no N or K masks).
Written for nvlemu (docs/cost-model.md, "vLLM's Triton fused_moe"); the
kernel is this script's own, not vLLM's.  Writes $OUT/triton-moe.csv."""
import os, torch, triton, triton.language as tl

torch.set_default_device("cuda")


@triton.jit
def moe_gemm(a, b, c, a_s, b_s, ids, eid, nv, EM, N, K, div,
             BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
             GM: tl.constexpr, FP8: tl.constexpr):
    pid = tl.program_id(0)
    npm = tl.cdiv(EM, BM)
    npn = tl.cdiv(N, BN)
    per = GM * npn
    g = pid // per
    fm = g * GM
    gs = tl.minimum(npm - fm, GM)
    pm = fm + (pid % per) % gs
    pn = (pid % per) // gs
    om = pm * BM + tl.arange(0, BM)
    tok = tl.load(ids + om)
    mm = tok < nv
    e = tl.load(eid + pm)
    on = pn * BN + tl.arange(0, BN)
    ok = tl.arange(0, BK)
    row = tok // div
    ap = a + row[:, None] * K + ok[None, :]
    bp = b + e * N * K + ok[:, None] + on[None, :] * K
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kk in range(0, tl.cdiv(K, BK)):
        x = tl.load(ap, mask=mm[:, None], other=0.0)
        y = tl.load(bp)
        if FP8:
            xs = tl.load(a_s + row * (K // 128) + kk, mask=mm, other=0.0)
            ys = tl.load(b_s + (e * (N // 128) + on // 128) * (K // 128) + kk)
            acc += tl.dot(x, y) * xs[:, None] * ys[None, :]
        else:
            acc = tl.dot(x, y, acc)
        ap += BK
        bp += BK
    tl.store(c + tok[:, None] * N + on[None, :], acc.to(tl.bfloat16),
             mask=mm[:, None])


def align(t, E, BM):
    """Pairs sorted by expert, each expert's padded to whole BM blocks."""
    fl = t.flatten()
    n = fl.numel()
    cnt = torch.bincount(fl, minlength=E)
    pad = (cnt + BM - 1) // BM * BM
    od = torch.argsort(fl, stable=True)
    ids = torch.full((int(pad.sum()),), n, dtype=torch.int32)
    st = torch.cumsum(pad, 0) - pad
    src = torch.cumsum(cnt, 0) - cnt
    for x in range(E):
        ids[st[x]:st[x] + cnt[x]] = od[src[x]:src[x] + cnt[x]]
    eid = torch.repeat_interleave(torch.arange(E),
                                   pad // BM).int()
    return ids, eid, int(pad.sum())


def case(tag, fp8, M, N, K, cfg, up, E=128, topk=8):
    BM, BN, BK, GM, nw, ns = cfg
    ids, eid, EM = align(torch.rand(M, E).topk(topk).indices, E, BM)
    P = M * topk
    R = M if up else P
    dt = torch.float8_e4m3fn if fp8 else torch.bfloat16
    a = torch.randn(R, K).to(dt)
    b = (torch.randn(E, N, K) * 0.02).to(dt)
    c = torch.empty(P, N, dtype=torch.bfloat16)
    a_s = torch.ones(R, K // 128)
    b_s = torch.ones(E, N // 128, K // 128)
    gr = (triton.cdiv(EM, BM) * triton.cdiv(N, BN),)
    ms = triton.testing.do_bench(lambda: moe_gemm[gr](
        a, b, c, a_s, b_s, ids, eid, P, EM, N, K, topk if up else 1, BM=BM, BN=BN,
        BK=BK, GM=GM, FP8=fp8, num_warps=nw, num_stages=ns),
        rep=200)
    return [tag, M, N, K, BM, BN, BK, EM, int(ms * 1e6) / 1e3,
            int(2 * P * N * K / ms / 1e9)]


def dense(M, N, K):
    x = torch.randn(M, K, dtype=torch.bfloat16)
    y = torch.randn(N, K, dtype=torch.bfloat16)
    ms = triton.testing.do_bench(lambda: x @ y.t())
    return ["cublas", M, N, K, 0, 0, 0, M, int(ms * 1e6) / 1e3,
            int(2 * M * N * K / ms / 1e9)]


# vLLM v0.11.0 configs (BLOCK_M, _N, _K, GROUP_SIZE_M, warps, stages):
# BF16 from E=128,N=192,device_name=NVIDIA_H100_80GB_HBM3.json at the key
# nearest the tokens; block FP8 has no H100 file for E=128,N=384: the
# default (get_default_config).  Experts 128, top 8.
BF = {8192: (128, 128, 64, 16, 4, 3),
      512: (64, 128, 64, 16, 4, 3)}
F8 = (64, 128, 128, 32, 4, 3)
out = [dense(8192, 4096, 4096)]
for M, cfg in BF.items():
    out += [case("bf16-up", 0, M, 384, 4096, cfg, 1),
            case("bf16-dn", 0, M, 4096, 192, cfg, 0)]
for M in (16384, 512):
    out += [case("fp8b-up", 1, M, 768, 4096, F8, 1),
            case("fp8b-dn", 1, M, 4096, 384, F8, 0)]
txt = "\n".join(",".join(map(str, r)) for r in [
    "case tokens n k bm bn bk padded us tflops".split()] + out) + "\n"
print(txt, torch.cuda.get_device_name(), torch.__version__, triton.__version__)
open(os.environ["OUT"] + "/triton-moe.csv", "w").write(txt)
