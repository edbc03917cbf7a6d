"""The serving-like prefill on H200 (tests/data/calibration/h200-prefill:
Inductor-compiled layers in one CUDA graph, TP 1 and TP 2 over NV18)
against nvlemu run --stack compiled (the measured stack), with the fused
stack's figures on the same rows beside them: its summary rows and its
section of docs/validation.md."""
import os

from .common import E2E_TOPO, geomean, pct, table
from .families import regions, summary_row
from .tools import end_to_end

PREFILL = "tests/data/calibration/h200-prefill"
FILES = (("1", os.path.join(PREFILL, "serve-prefill-tp1.csv"), False),
         ("2", os.path.join(PREFILL, "serve-prefill-tp2.csv"), True))
# the family's stack: the measured step's (torch.compile'd layers; its
# attention is SDPA's cuDNN kernel, the compiled stack's own); the fused
# stack (TensorRT-LLM's kernel list) with the same attention, for comparison
STACK = "compiled"
OTHER = ("fused", ("--attn", "sdpa"))


def compiled_prefill(build):
    """(summary rows, document lines): per TP, the measured prefills against
    nvlemu run --stack compiled, and --stack fused --attn sdpa beside it."""
    rows, doc = [], ["## Serving-like prefill on H200 (--stack compiled)\n",
                     "Prefills of B prompts of P tokens measured on 2 x H200 (" + PREFILL +
                     ", `scripts/device/measure-prefill.sh`): each layer's work between "
                     "the all-reduces one torch.compile'd (Inductor) region, the step in "
                     "one CUDA graph, NCCL at TP 2. Predicted by `nvlemu run --stack "
                     "compiled --prompt-len P --gen-len 1` on " + E2E_TOPO + " (the "
                     "measured stack: Inductor's Triton kernels, SDPA's cuDNN attention); "
                     "`--stack fused --attn sdpa` (TensorRT-LLM's kernel list, the same "
                     "attention) beside it. TP 1 rows were looked at kernel by kernel (the "
                     "norm CTA rule, docs/cost-model.md); nothing was fit to TP 2.\n"]
    for tp, path, held in FILES:
        got = end_to_end(build, path, STACK)["prefill"]
        other = end_to_end(build, path, OTHER[0], extra=OTHER[1])["prefill"]
        errs = [r["error"] for r in got]
        name = "%send to end: prefill, compiled layers on H200, TP %s (--stack %s)" % (
            "held out, " if held else "", tp, STACK)
        rows.append(summary_row(name, errs, path, held_out=held, attributes={"stack": STACK},
                                where=regions(got, "prefill", E2E_TOPO, int(tp),
                                              size_key="batch", unit="sequences")))
        oerrs = [r["error"] for r in other]
        doc.append("### prefill, compiled layers, TP %s\n" % tp)
        doc.append("%d rows: %s geomean, worst %s (`--stack fused --attn sdpa`: %s, "
                   "worst %s).\n" % (len(got), pct(geomean(errs)), pct(max(errs)),
                                      pct(geomean(oerrs)), pct(max(oerrs))))
        doc.append(table(["model", "layers", "batch", "ctx", "q_len", "measured (us)",
                          "compiled (us)", "error", "fused (us)", "error"],
                         [[r["model"], r["layers"], r["batch"], r["ctx"], r["q_len"],
                           r["measured_us"], "%.1f" % r["pred_us"], pct(r["error"]),
                           "%.1f" % o["pred_us"], pct(o["error"])]
                          for r, o in zip(got, other)]))
    return rows, doc
