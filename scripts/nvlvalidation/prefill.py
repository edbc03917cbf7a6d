"""The serving-like prefill on H200 (tests/data/calibration/h200-prefill:
Inductor-compiled layers in one CUDA graph, TP 1 and TP 2 over NV18)
against nvlemu run --stack fused: its summary rows and its section of
docs/validation.md."""
import os

from .common import E2E_TOPO, e2e_table, geomean, pct
from .families import regions, summary_row
from .tools import end_to_end

PREFILL = "tests/data/calibration/h200-prefill"
FILES = (("1", os.path.join(PREFILL, "serve-prefill-tp1.csv"), False),
         ("2", os.path.join(PREFILL, "serve-prefill-tp2.csv"), True))
# the measured step's attention is SDPA's cuDNN kernel (kernel-names.csv),
# which --attn sdpa prices; the stack's own default is FlashAttention 3
ATTN = ("--attn", "sdpa")


def fused_prefill(build):
    """(summary rows, document lines): per TP, the measured prefills against
    nvlemu run --stack fused --attn sdpa."""
    rows, doc = [], ["## Serving-like prefill on H200 (--stack fused)\n",
                     "Prefills of B prompts of P tokens measured on 2 x H200 (" + PREFILL +
                     ", `scripts/device/measure-prefill.sh`): each layer's work between "
                     "the all-reduces one torch.compile'd (Inductor) region, the step in "
                     "one CUDA graph, NCCL at TP 2. Predicted by `nvlemu run --stack fused "
                     "--attn sdpa --prompt-len P --gen-len 1` on " + E2E_TOPO + " (the "
                     "measured step's attention is SDPA's cuDNN kernel). TP 1 rows were "
                     "looked at kernel by kernel (the norm CTA rule, docs/cost-model.md); "
                     "nothing was fit to TP 2.\n"]
    for tp, path, held in FILES:
        got = end_to_end(build, path, "fused", extra=ATTN)["prefill"]
        errs = [r["error"] for r in got]
        name = "%send to end: prefill, compiled layers on H200, TP %s (--stack fused)" % (
            "held out, " if held else "", tp)
        rows.append(summary_row(name, errs, path, held_out=held, attributes={"stack": "fused"},
                                where=regions(got, "prefill", E2E_TOPO, int(tp),
                                              size_key="batch", unit="sequences")))
        doc.append("### prefill, compiled layers, TP %s\n" % tp)
        doc.append("%d rows: %s geomean, worst %s.\n" % (len(got), pct(geomean(errs)),
                                                        pct(max(errs))))
        doc.append(e2e_table(got))
    return rows, doc
