#!/usr/bin/env python3
"""Makes a tiny, randomly initialised Hugging Face model and the reference
outputs transformers computes for it, in the layout of tests/data/hf:
config.json, generation_config.json, model.safetensors (float32) and
reference.json (input_ids, last_logits, logits_token0_first8,
greedy_new_tokens).  Runs on CPU; needs torch and transformers (the device
machine has them).

    python3 scripts/device/make-hf-fixture.py qwen3 OUTDIR
    python3 scripts/device/make-hf-fixture.py qwen2-yarn OUTDIR
    python3 scripts/device/make-hf-fixture.py llama OUTDIR

qwen2-yarn: a Qwen2 with YaRN rope scaling (factor 4 over 32 pretrained
positions, as Qwen2.5's 128K context is factor 4 over 32768), prompts of 40
tokens so that the sequences pass the pretrained context.

llama: a Llama with Llama 3.1's rope scaling (rope_type llama3: factor 8,
low_freq_factor 1, high_freq_factor 4) over 256 pretrained positions, so that
of head_dim 32's 16 frequency pairs three keep their frequency, two are
blended and eleven are divided by 8; head_dim given apart from hidden /
heads, 6 / 3 heads, a prime MLP width and vocabulary so that TP 2, 3 and 5
split them unevenly, RMSNorm weights drawn from U(0.5, 1.5); reference.json
adds transformers' rotary inverse frequencies (rope_inv_freq) and 24-token
prompts.
"""
import json
import sys

import torch
import transformers


def qwen3(out):
    from transformers import Qwen3Config, Qwen3ForCausalLM

    cfg = Qwen3Config(
        vocab_size=512, hidden_size=96, intermediate_size=200,
        num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=2,
        head_dim=24,  # not hidden / heads (16): Qwen3 keeps them apart
        max_position_embeddings=512, rope_theta=1000000.0, rms_norm_eps=1e-6,
        attention_bias=False, tie_word_embeddings=False,
        initializer_range=0.08, bos_token_id=1, eos_token_id=2,
        pad_token_id=0)
    return Qwen3ForCausalLM(cfg)


def qwen2_yarn(out):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(
        vocab_size=512, hidden_size=64, intermediate_size=160,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=128, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0,
                         "factor": 4.0, "original_max_position_embeddings": 32},
        tie_word_embeddings=False, initializer_range=0.08, bos_token_id=1,
        eos_token_id=2, pad_token_id=0)
    return Qwen2ForCausalLM(cfg)


def llama(out):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=509, hidden_size=96, intermediate_size=211,
        num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=3,
        head_dim=32,  # not hidden / heads (16)
        max_position_embeddings=2048, rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0,
                         "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 256},
        attention_bias=False, mlp_bias=False, tie_word_embeddings=False,
        initializer_range=0.08, bos_token_id=1, eos_token_id=2,
        pad_token_id=0)
    return LlamaForCausalLM(cfg)


MAKERS = {"qwen3": qwen3, "qwen2-yarn": qwen2_yarn, "llama": llama}
PROMPT_LEN = {"qwen2-yarn": 40, "llama": 24}


def main():
    kind, out = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    model = MAKERS[kind](out).eval().float()
    # q_norm / k_norm start at ones: make them non-trivial so the test sees them
    with torch.no_grad():
        for layer in model.model.layers:
            if hasattr(layer.self_attn, "q_norm"):
                layer.self_attn.q_norm.weight.uniform_(0.5, 1.5)
                layer.self_attn.k_norm.weight.uniform_(0.5, 1.5)
            if kind == "llama":
                layer.input_layernorm.weight.uniform_(0.5, 1.5)
                layer.post_attention_layernorm.weight.uniform_(0.5, 1.5)
        if kind == "llama":
            model.model.norm.weight.uniform_(0.5, 1.5)
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    model.save_pretrained(out, safe_serialization=True)
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(3, model.config.vocab_size, (2, PROMPT_LEN.get(kind, 11)),
                        generator=gen)
    with torch.no_grad():
        logits = model(ids).logits
        new = model.generate(ids, max_new_tokens=8, do_sample=False,
                             use_cache=True)[:, ids.shape[1]:]
    ref = {
        "input_ids": ids.tolist(),
        "last_logits": logits[:, -1, :].tolist(),
        "logits_token0_first8": logits[:, :, :8].tolist(),
        "greedy_new_tokens": new.tolist(),
        "dtype": "float32",
        "note": "made by scripts/device/make-hf-fixture.py %s with "
                "transformers %s, torch %s" % (kind, transformers.__version__,
                                               torch.__version__),
    }
    if kind == "llama":
        ref["rope_inv_freq"] = model.model.rotary_emb.inv_freq.tolist()
        ref["rope_attention_scaling"] = model.model.rotary_emb.attention_scaling
    with open(out + "/reference.json", "w") as f:
        json.dump(ref, f)
    print(ref["note"], ref["greedy_new_tokens"])


if __name__ == "__main__":
    main()
