#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Generate the model golden tests: tiny random-initialised HF models and their outputs.

Writes tests/data/models/<name>/{config.json, model.safetensors, input_ids.npy, ...,
expected outputs .npy} deterministically (fixed seeds). Every model is built and run by
HF transformers itself (eager attention, float32, CPU); QuantLab's C++ test
(tests/engine/model_golden_test.cpp) loads the folder and must reproduce the outputs.

Models (hidden 32-64, 2 layers, small vocabularies; the whole folder stays < 2 MB):
  gpt2        GPT2LMHeadModel: learned positions, fused Conv1D c_attn, gelu_new, tied lm_head
  llama       LlamaForCausalLM: MHA, default RoPE, untied lm_head
  llama3_gqa  LlamaForCausalLM: GQA (4 q / 2 kv heads), rope_theta 500000, Llama-3
              rope_scaling with a small original_max_position_embeddings so that all three
              frequency bands (kept, smoothed, divided) occur, tied embeddings; its
              config.json is rewritten in the legacy layout (top-level rope_theta +
              rope_scaling) that Llama 3.x checkpoints on the Hub use; the script checks
              transformers reads it back to identical logits; rope_inv_freq.npy is
              transformers' scaled inverse-frequency table
  mistral_swa MistralForCausalLM: GQA, explicit head_dim != hidden/heads, sliding_window 4
              on a 12-token sequence (the banded causal mask matters)
  qwen2       Qwen2ForCausalLM: q/k/v biases (random, not zero), GQA, tied embeddings
  qwen3       Qwen3ForCausalLM: q_norm / k_norm per head (perturbed weights), GQA, explicit
              head_dim != hidden/heads, untied (Qwen3-0.6B..8B features, shrunk)
  gemma3_text Gemma3ForCausalLM: sliding (window 4) and global layers interleaved by
              layer_types, their own RoPE bases (local 10000, global 1e6 with linear scaling
              8, the rope_parameters layout transformers 5 writes), four norms per block
              stored as offsets from 1, q_norm / k_norm, embeddings scaled by sqrt(hidden),
              GeGLU, query_pre_attn_scalar != head_dim, attention and final logit
              soft-capping, tied embeddings (gemma-3-270m / 1b features, shrunk)
  bert        BertModel (with pooler): absolute positions, token types, exact GELU; a
              padded batch with attention_mask; expected last_hidden_state and the
              attention-mask mean pooling of sentence-transformers

Versions used (Python 3.11.7): torch 2.15.0 (CPU use of the CUDA wheel), transformers
5.24.0, safetensors 0.8.0, tokenizers 0.23.3, numpy 2.4.6.
Environment: /work/peers-venv-models, a venv whose site-packages has a .pth pointing at
/work/peers-venv (torch, safetensors, numpy; see scripts/golden/requirements.txt) plus
`pip install transformers==5.24.0` into it.

The qwen3 and gemma3_text folders were added with transformers 5.23.0 (the peers venv,
~/.cache/quantlab/peers) by `--only qwen3,gemma3_text`, which leaves the other folders and the
manifest as they are.

Run: python scripts/golden/make_model_golden.py [--out tests/data/models] [--only a,b]
"""
import argparse
import json
import os
import shutil

import numpy as np
import torch
import transformers
from transformers import (BertConfig, BertModel, Gemma3ForCausalLM, Gemma3TextConfig, GPT2Config,
                          GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, MistralConfig,
                          MistralForCausalLM, Qwen2Config, Qwen2ForCausalLM, Qwen3Config,
                          Qwen3ForCausalLM)

BATCH, SEQ = 2, 12


def randomise_biases(model, seed):
    """HF initialises biases to zero; random ones make the test see bias mistakes."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
            elif ("norm" in name.lower() or ".ln_" in name) and name.endswith(".weight"):
                # LayerNorm / RMSNorm weights start at 1: perturb them so scale mistakes show.
                p.copy_(1.0 + torch.randn(p.shape, generator=g) * 0.1)


def input_ids(vocab, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (BATCH, SEQ), generator=g, dtype=torch.int64)


def save(out, name, model, arrays):
    folder = os.path.join(out, name)
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder, safe_serialization=True)
    for key, value in arrays.items():
        np.save(os.path.join(folder, key + ".npy"), np.ascontiguousarray(value))
    return folder


def build(config_cls, model_cls, seed, **kwargs):
    torch.manual_seed(seed)
    config = config_cls(**kwargs)
    config._attn_implementation = "eager"
    model = model_cls(config).eval()
    randomise_biases(model, seed + 1)
    return model


def causal_lm(out, name, model, seed):
    ids = input_ids(model.config.vocab_size, seed)
    with torch.no_grad():
        logits = model(input_ids=ids).logits.float()
    save(out, name, model, {"input_ids": ids.numpy(), "logits": logits.numpy()})
    return ids, logits


def make_legacy_rope_config(folder):
    """Rewrites rope_parameters as top-level rope_theta + rope_scaling (Hub Llama 3.x)."""
    path = os.path.join(folder, "config.json")
    with open(path) as f:
        cfg = json.load(f)
    rope = dict(cfg.pop("rope_parameters"))
    cfg["rope_theta"] = rope.pop("rope_theta")
    cfg["rope_scaling"] = rope
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def make_qwen3(out):
    qwen3 = build(Qwen3Config, Qwen3ForCausalLM, 70, vocab_size=104, hidden_size=64,
                  intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=24, max_position_embeddings=64,
                  rope_theta=1000000.0, tie_word_embeddings=False)
    causal_lm(out, "qwen3", qwen3, 71)


def make_gemma3(out):
    gemma = build(Gemma3TextConfig, Gemma3ForCausalLM, 80, vocab_size=96, hidden_size=48,
                  intermediate_size=80, num_hidden_layers=3, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=32, max_position_embeddings=64,
                  query_pre_attn_scalar=24, sliding_window=4,
                  layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                  rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0,
                                                      "rope_theta": 1000000.0},
                                   "sliding_attention": {"rope_type": "default",
                                                         "rope_theta": 10000.0}},
                  attn_logit_softcapping=2.0, final_logit_softcapping=3.0,
                  tie_word_embeddings=True)
    causal_lm(out, "gemma3_text", gemma, 81)


EXTRA = {"qwen3": make_qwen3, "gemma3_text": make_gemma3}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                      "tests", "data", "models"))
    parser.add_argument("--only", default="", help="comma-separated folder names to (re)write")
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    if args.only:
        for name in args.only.split(","):
            EXTRA[name](out)
        return

    gpt2 = build(GPT2Config, GPT2LMHeadModel, 10, vocab_size=100, n_positions=32, n_embd=32,
                 n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0)
    causal_lm(out, "gpt2", gpt2, 11)

    llama = build(LlamaConfig, LlamaForCausalLM, 20, vocab_size=128, hidden_size=64,
                  intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=4, max_position_embeddings=64, rms_norm_eps=1e-6,
                  tie_word_embeddings=False)
    causal_lm(out, "llama", llama, 21)

    llama3 = build(LlamaConfig, LlamaForCausalLM, 30, vocab_size=96, hidden_size=64,
                   intermediate_size=80, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-5,
                   rope_theta=500000.0, tie_word_embeddings=True,
                   rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 16})
    ids, logits = causal_lm(out, "llama3_gqa", llama3, 31)
    folder = os.path.join(out, "llama3_gqa")
    np.save(os.path.join(folder, "rope_inv_freq.npy"), llama3.model.rotary_emb.inv_freq.numpy())
    make_legacy_rope_config(folder)
    reread = LlamaForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        again = reread(input_ids=ids).logits
    assert torch.equal(again, logits), "legacy rope config read back differently"

    mistral = build(MistralConfig, MistralForCausalLM, 40, vocab_size=80, hidden_size=64,
                    intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=32, max_position_embeddings=64,
                    sliding_window=4, tie_word_embeddings=False)
    causal_lm(out, "mistral_swa", mistral, 41)

    qwen2 = build(Qwen2Config, Qwen2ForCausalLM, 50, vocab_size=112, hidden_size=64,
                  intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=64, rope_theta=1000000.0,
                  tie_word_embeddings=True)
    causal_lm(out, "qwen2", qwen2, 51)

    bert = build(BertConfig, BertModel, 60, vocab_size=120, hidden_size=32, num_hidden_layers=2,
                 num_attention_heads=4, intermediate_size=64, max_position_embeddings=32,
                 type_vocab_size=2)
    ids = input_ids(120, 61)
    mask = torch.ones(BATCH, SEQ, dtype=torch.int64)
    mask[1, 8:] = 0  # the second sentence is padded
    ids[1, 8:] = 0
    types = torch.zeros(BATCH, SEQ, dtype=torch.int64)
    types[0, 6:] = 1  # a sentence pair in the first row
    with torch.no_grad():
        hidden = bert(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state
    m = mask.unsqueeze(-1).float()
    pooled = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)  # sentence-transformers mean pooling
    save(out, "bert", bert, {"input_ids": ids.numpy(), "attention_mask": mask.numpy(),
                             "token_type_ids": types.numpy(), "last_hidden_state": hidden.numpy(),
                             "mean_pooled": pooled.numpy()})

    manifest = {"generator": "scripts/golden/make_model_golden.py",
                "torch": torch.__version__, "transformers": transformers.__version__,
                "numpy": np.__version__, "batch": BATCH, "seq": SEQ}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
