"""Checks nvlemu generate's quality report (--compare-to, --eval) against
values computed here, independently, from the logits it wrote and from
transformers' references of the fixture.

Usage: check_quality.py GOT.json FLOAT_REF_DIR EVAL.jsonl [FORMAT_REF_DIR]

- top-1 agreement, mean/max |logit error|, KL(ref || model) per position
  and both perplexities recomputed in double precision from the written
  logits (math.fsum) and compared with the report (1e-9 relative);
- the model's teacher-forced logits pick its own greedy tokens, and their
  first position equals generate's last logits (1e-5 relative): the
  scoring's prefill computes what the decode steps did;
- the reference's first position of each prompt equals transformers'
  logits of the float checkpoint (FLOAT_REF_DIR/reference.json, 1e-4
  relative), and with FORMAT_REF_DIR (a weight-only run) the model's equal
  transformers' with the dequantized weights.
"""
import json
import math
import sys


def log_softmax(row):
    m = max(row)
    lse = m + math.log(math.fsum(math.exp(x - m) for x in row))
    return [x - lse for x in row]


def argmax(row):
    return max(range(len(row)), key=lambda i: (row[i], -i))


def close(a, b, rel):
    return abs(a - b) <= rel * max(1.0, abs(b))


def rel_diff(rows, ref):
    d = max(abs(a - b) for g, r in zip(rows, ref) for a, b in zip(g, r))
    return d / max(abs(b) for r in ref for b in r)


def main():
    got = json.load(open(sys.argv[1]))
    fref = json.load(open(sys.argv[2] + "/reference.json"))
    evals = [json.loads(l) for l in open(sys.argv[3]) if l.strip()]
    q = got["quality"]
    lq, lr = q["logits"], q["reference_logits"]
    n, gen = len(lq), len(got["new_tokens"][0])
    agree = sum(argmax(a) == argmax(b) for a, b in zip(lq, lr)) / n
    errs = [abs(a - b) for x, y in zip(lq, lr) for a, b in zip(x, y)]
    kls = []
    for x, y in zip(lq, lr):
        sx, sy = log_softmax(x), log_softmax(y)
        kls.append(math.fsum(math.exp(b) * (b - a) for a, b in zip(sx, sy)))
    want = {"positions": n, "top1_agreement": agree,
            "mean_abs_logit_error": math.fsum(errs) / len(errs),
            "max_abs_logit_error": max(errs),
            "mean_kl": math.fsum(kls) / n, "max_kl": max(kls)}
    for k, v in want.items():
        assert close(q[k], v, 1e-9), (k, q[k], v)
    for b, toks in enumerate(got["new_tokens"]):
        own = [argmax(lq[b * gen + s]) for s in range(gen)]
        assert own == toks, (b, own, toks)
    firsts = [lq[b * gen] for b in range(len(got["new_tokens"]))]
    assert rel_diff(firsts, got["last_logits"]) <= 1e-5
    rfirst = [lr[b * gen] for b in range(len(got["new_tokens"]))]
    d = rel_diff(rfirst, fref["last_logits"])
    assert d <= 1e-4, d
    if len(sys.argv) > 4:
        wref = json.load(open(sys.argv[4] + "/reference.json"))
        assert rel_diff(firsts, wref["last_logits"]) <= 1e-4
    ev = got["eval"]
    for key, rows in (("model", ev["logits"]),
                      ("reference", ev["reference_logits"])):
        at, nll = 0, []
        for seq in evals:
            for p in range(1, len(seq)):
                nll.append(-log_softmax(rows[at])[seq[p]])
                at += 1
        ppl = math.exp(math.fsum(nll) / len(nll))
        rep = ev["perplexity"] if key == "model" else \
            ev["reference"]["perplexity"]
        assert close(rep, ppl, 1e-9), (key, rep, ppl)
        print("%s perplexity %.6g over %d tokens" % (key, ppl, len(nll)))
    print("quality: top-1 %.4f, logit error mean %.6g max %.6g, KL mean "
          "%.6g max %.6g: the report's numbers" % (
              agree, want["mean_abs_logit_error"], want["max_abs_logit_error"],
              want["mean_kl"], want["max_kl"]))


main()
