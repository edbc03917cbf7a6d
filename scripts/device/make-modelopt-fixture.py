"""Writes the quantized fixture with NVIDIA ModelOpt's own tools, where the
device machine has them: tests/data/quant/qwen3-quant-tiny (float32)
quantized by mtq.quantize (NVFP4_DEFAULT_CFG, FP8_DEFAULT_CFG, max
calibration over tests/data/quant/eval.jsonl) and exported by
export_hf_checkpoint into $OUT/modelopt-{nvfp4,fp8}.  Without modelopt it
says so (and whether compressed_tensors is there) and writes nothing.
Run from the repository root: python3 scripts/device/make-modelopt-fixture.py
"""
import copy, json, os, sys

out = os.environ.get("OUT", "/tmp/out")
try:
    import compressed_tensors
    print("compressed_tensors", compressed_tensors.__version__)
except Exception as e:
    print("compressed_tensors: not importable:", e)
try:
    import modelopt
    import modelopt.torch.quantization as mtq
    from modelopt.torch.export import export_hf_checkpoint
    print("modelopt", modelopt.__version__)
except Exception as e:
    print("modelopt: not importable:", e)
    sys.exit(0)
import torch, transformers
from transformers import AutoModelForCausalLM

print("torch", torch.__version__, "transformers", transformers.__version__)
src = "tests/data/quant/qwen3-quant-tiny"
model = AutoModelForCausalLM.from_pretrained(src, torch_dtype=torch.float32).cuda()
seqs = [json.loads(l) for l in open("tests/data/quant/eval.jsonl") if l.strip()]


def loop(m):
    for s in seqs:
        m(torch.tensor([s], device="cuda"))


for name, cfg in (("nvfp4", mtq.NVFP4_DEFAULT_CFG), ("fp8", mtq.FP8_DEFAULT_CFG)):
    m = copy.deepcopy(model)
    mtq.quantize(m, cfg, loop)
    d = os.path.join(out, "modelopt-" + name)
    export_hf_checkpoint(m, export_dir=d)
    print(name, sorted(os.listdir(d)))
