"""The torch reference of measure-steps.py: a Qwen model's layers written
as plain PyTorch calls (the `torch` stack nvlemu's --stack torch models)
and the serving-like step (torch.compile'd regions between the
tensor-parallel all-reduces, NCCL or torch symmetric memory), each rank
holding its shard; make_case builds one timed case.  measure-steps.py's
docstring describes both.  Needs torch and a GPU."""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.profiler import record_function


def rand(*shape, scale=0.02):
    return (torch.randn(*shape, device="cuda", dtype=torch.bfloat16) * scale)


class Model:
    """Random weights of `layers` layers plus embedding, final norm, lm_head."""

    def __init__(self, c, tp=1, rank=0):
        c = dict(c)
        for k in ("heads", "kv_heads", "inter", "vocab"):
            if c[k] % tp:
                raise SystemExit("%s = %d does not divide by --tp %d" % (k, c[k], tp))
        self.tp, self.rank = tp, rank
        self.vocab0 = rank * (c["vocab"] // tp)   # this rank's first vocabulary row
        c.update(heads=c["heads"] // tp, kv_heads=c["kv_heads"] // tp,
                 inter=c["inter"] // tp, vocab=c["vocab"] // tp)
        self.c = c
        h, d = c["hidden"], c["head_dim"]
        qkv = (c["heads"] + 2 * c["kv_heads"]) * d
        self.layers = []
        for _ in range(c["layers"]):
            L = dict(ln1=1 + rand(h), ln2=1 + rand(h),
                     wqkv=rand(qkv, h), wo=rand(h, c["heads"] * d),
                     wgu=rand(2 * c["inter"], h), wd=rand(h, c["inter"]))
            L["bqkv"] = rand(qkv) if c["bias"] else None
            if c["qk_norm"]:
                L["qn"], L["kn"] = 1 + rand(d), 1 + rand(d)
            self.layers.append(L)
        self.embed = rand(c["vocab"], h)
        self.norm = 1 + rand(h)
        self.lm_head = rand(c["vocab"], h)
        inv = 1.0 / (1e6 ** (torch.arange(0, d, 2, device="cuda", dtype=torch.float32) / d))
        t = torch.arange(16384, device="cuda", dtype=torch.float32)
        f = torch.outer(t, inv)
        emb = torch.cat((f, f), dim=-1)
        self.cos, self.sin = emb.cos().to(torch.bfloat16), emb.sin().to(torch.bfloat16)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def label(name, on):
    return record_function(name) if on else _Null()


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def embed(m, ids):
    """The embedding lookup of ids (vocab-parallel at TP > 1: this rank's
    rows, zeros elsewhere, summed by an all_reduce)."""
    c = m.c
    if m.tp == 1:
        return F.embedding(ids, m.embed)
    local = ids - m.vocab0
    mask = (local >= 0) & (local < c["vocab"])
    x = F.embedding(local.clamp(0, c["vocab"] - 1), m.embed) * mask[..., None]
    dist.all_reduce(x)
    return x


def step(m, ids, pos, caches, causal, lab=False):
    """One forward pass of ids [B, S] at positions pos [S] (shared by the
    batch) writing into caches; returns the greedy tokens [B]."""
    c = m.c
    B, S = ids.shape
    H, KV, D, hid = c["heads"], c["kv_heads"], c["head_dim"], c["hidden"]
    with label("embed", lab):
        x = embed(m, ids)
    with label("rope_tables", lab):
        cos = m.cos.index_select(0, pos)[None, None]
        sin = m.sin.index_select(0, pos)[None, None]
    n_ctx = caches[0][0].shape[2]
    for L, (kc, vc) in zip(m.layers, caches):
        with label("input_norm", lab):
            h = F.rms_norm(x, (hid,), L["ln1"], c["eps"])
        with label("qkv_proj", lab):
            qkv = F.linear(h, L["wqkv"], L["bqkv"])
        q, k, v = qkv.split([H * D, KV * D, KV * D], dim=-1)
        q, k, v = q.view(B, S, H, D), k.view(B, S, KV, D), v.view(B, S, KV, D)
        if c["qk_norm"]:
            with label("q_norm", lab):
                q = F.rms_norm(q, (D,), L["qn"], c["eps"])
            with label("k_norm", lab):
                k = F.rms_norm(k, (D,), L["kn"], c["eps"])
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        with label("rope", lab):
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        with label("kv_write", lab):
            kc.index_copy_(2, pos, k)
            vc.index_copy_(2, pos, v)
        with label("attention", lab):
            if causal:
                a = F.scaled_dot_product_attention(q, kc[:, :, :S], vc[:, :, :S],
                                                   is_causal=True, enable_gqa=True)
            else:
                a = F.scaled_dot_product_attention(q, kc[:, :, :n_ctx], vc[:, :, :n_ctx],
                                                   enable_gqa=True)
        with label("attn_out_layout", lab):
            a = a.transpose(1, 2).reshape(B, S, H * D)
        with label("o_proj", lab):
            o = F.linear(a, L["wo"])
        if m.tp > 1:
            with label("all_reduce", lab):
                dist.all_reduce(o)
        with label("residual_add", lab):
            x = x + o
        with label("post_norm", lab):
            h = F.rms_norm(x, (hid,), L["ln2"], c["eps"])
        with label("gate_up_proj", lab):
            gu = F.linear(h, L["wgu"])
        g, u = gu.chunk(2, dim=-1)
        with label("silu_mul", lab):
            a = F.silu(g) * u
        with label("down_proj", lab):
            d = F.linear(a, L["wd"])
        if m.tp > 1:
            with label("all_reduce", lab):
                dist.all_reduce(d)
        with label("residual_add", lab):
            x = x + d
    with label("final_norm", lab):
        x = F.rms_norm(x[:, -1], (hid,), m.norm, c["eps"])
    return sample(m, x, lab)


def sample(m, x, lab):
    """lm_head on the last positions x [B, hidden] (vocab-parallel: its
    rows, then an all_gather of the logits) and the greedy argmax."""
    with label("lm_head", lab):
        logits = F.linear(x, m.lm_head)
    if m.tp > 1:
        with label("all_gather", lab):
            parts = torch.empty((m.tp,) + tuple(logits.shape), device="cuda",
                                dtype=logits.dtype)
            dist.all_gather_into_tensor(parts, logits.contiguous())
            logits = parts.permute(1, 0, 2).reshape(logits.shape[0], -1)
    with label("sample", lab):
        return logits.argmax(dim=-1)


def _attn_block(x, d, ln1, wqkv, bqkv, qn, kn, wo, kc, vc, pos, cos, sin,
                H, KV, D, eps, causal):
    """Residual add of the previous down projection, input norm, qkv, q/k
    norm, RoPE, KV write, attention and o: one compiled region."""
    B, S, hid = x.shape
    x = x + d
    h = F.rms_norm(x, (hid,), ln1, eps)
    qkv = F.linear(h, wqkv, bqkv)
    q, k, v = qkv.split([H * D, KV * D, KV * D], dim=-1)
    q, k, v = q.view(B, S, H, D), k.view(B, S, KV, D), v.view(B, S, KV, D)
    if qn is not None:
        q = F.rms_norm(q, (D,), qn, eps)
        k = F.rms_norm(k, (D,), kn, eps)
    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    kc.index_copy_(2, pos, k)
    vc.index_copy_(2, pos, v)
    if causal:
        a = F.scaled_dot_product_attention(q, kc[:, :, :S], vc[:, :, :S],
                                           is_causal=True, enable_gqa=True)
    else:
        a = F.scaled_dot_product_attention(q, kc, vc, enable_gqa=True)
    a = a.transpose(1, 2).reshape(B, S, H * D)
    return x, F.linear(a, wo)


def _mlp_block(x, o, ln2, wgu, wd, eps):
    """Residual add of o, post norm, gate/up, SiLU * up, down: one compiled
    region; returns the residual stream and down's output."""
    x = x + o
    h = F.rms_norm(x, (x.shape[-1],), ln2, eps)
    g, u = F.linear(h, wgu).chunk(2, dim=-1)
    return x, F.linear(F.silu(g) * u, wd)


class Serve:
    """The compiled regions and the all-reduce of the serving-like step."""

    def __init__(self, ar, max_numel):
        self.ar = ar
        self.attn = torch.compile(_attn_block)
        self.mlp = torch.compile(_mlp_block)
        self.buf = None
        if ar in ("oneshot", "twoshot"):
            import torch.distributed._symmetric_memory as symm_mem
            self.gname = dist.group.WORLD.group_name
            if hasattr(symm_mem, "enable_symm_mem_for_group"):
                symm_mem.enable_symm_mem_for_group(self.gname)
            self.buf = symm_mem.empty(max_numel, dtype=torch.bfloat16, device="cuda")
            symm_mem.rendezvous(self.buf, self.gname)

    def all_reduce(self, t):
        if self.ar in ("none",):
            return t
        if self.ar == "nccl":
            dist.all_reduce(t)
            return t
        n = t.numel()
        sb = self.buf[:n]
        sb.copy_(t.reshape(-1))
        if self.ar == "oneshot":
            return torch.ops.symm_mem.one_shot_all_reduce(sb, "sum", self.gname).view(t.shape)
        torch.ops.symm_mem.two_shot_all_reduce_(sb, "sum", self.gname)
        return sb.view(t.shape)


def serve_step(m, sv, ids, pos, caches, causal, lab=False):
    """The serving-like forward pass of ids [B, S]: compiled regions, the
    all-reduce between them by sv.ar; returns the greedy tokens [B]."""
    c = m.c
    with label("embed", lab):
        x = embed(m, ids)
    cos = m.cos.index_select(0, pos)[None, None]
    sin = m.sin.index_select(0, pos)[None, None]
    d = torch.zeros_like(x)
    for L, (kc, vc) in zip(m.layers, caches):
        with label("attn_block", lab):
            x, o = sv.attn(x, d, L["ln1"], L["wqkv"], L["bqkv"], L.get("qn"), L.get("kn"),
                           L["wo"], kc, vc, pos, cos, sin, c["heads"], c["kv_heads"],
                           c["head_dim"], c["eps"], causal)
        with label("all_reduce", lab):
            o = sv.all_reduce(o)
        with label("mlp_block", lab):
            x, d = sv.mlp(x, o, L["ln2"], L["wgu"], L["wd"], c["eps"])
        with label("all_reduce", lab):
            d = sv.all_reduce(d)
    with label("final_norm", lab):
        x = F.rms_norm((x + d)[:, -1], (c["hidden"],), m.norm, c["eps"])
    return sample(m, x, lab)


def symm_check(sv, numel):
    """Largest |symmetric-memory sum - NCCL sum| / |NCCL sum| over random
    bf16 data of numel elements (the same on both paths)."""
    t = torch.randn(numel, device="cuda", dtype=torch.bfloat16)
    ref = t.clone()
    dist.all_reduce(ref)
    got = sv.all_reduce(t.clone()).clone()
    torch.cuda.synchronize()
    err = ((got.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
    e = torch.tensor([err], device="cuda")
    dist.all_reduce(e, op=dist.ReduceOp.MAX)
    return float(e.item())


def make_case(m, phase, B, ctx, sv=None):
    """Inputs and caches of one case; returns (fn, q_len)."""
    c = m.c
    if phase == "decode":
        S, cache_len, pos0, causal = 1, ctx, ctx - 1, False
    else:
        S, cache_len, pos0, causal = ctx, ctx, 0, True
    ids = torch.randint(0, c["vocab"], (B, S), device="cuda")
    pos = torch.arange(pos0, pos0 + S, device="cuda")
    caches = []
    for _ in m.layers:
        kc = torch.empty(B, c["kv_heads"], cache_len, c["head_dim"], device="cuda",
                         dtype=torch.bfloat16).normal_(0, 1)
        caches.append((kc, torch.empty_like(kc).normal_(0, 1)))
    if sv is not None:
        return (lambda lab=False: serve_step(m, sv, ids, pos, caches, causal, lab)), S
    return (lambda lab=False: step(m, ids, pos, caches, causal, lab)), S
