# SPDX-License-Identifier: GPL-3.0-or-later
"""Tiny random HF model folders for the peer checks (scripts/check-gguf-mixes, check-gguf-input):
config.json + model.safetensors (float32) of a Llama, Qwen2 or GPT-2 with the given shape,
written with numpy and safetensors (the peers venv)."""
import json
import os


def write_model(folder, arch, hidden, layers, heads, kv, ffn, vocab, tied, seed):
    """A random HF model folder (config.json + model.safetensors, float32)."""
    import numpy as np
    from safetensors.numpy import save_file
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    w = lambda *shape: (rng.standard_normal(shape) * 0.05).astype(np.float32)
    ones = lambda n: (1 + 0.1 * rng.standard_normal(n)).astype(np.float32)
    t = {}
    if arch == "gpt2":
        cfg = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": vocab, "n_embd": hidden,
               "n_layer": layers, "n_head": heads, "n_positions": 64, "n_inner": ffn, "layer_norm_epsilon": 1e-5,
               "activation_function": "gelu_new", "tie_word_embeddings": True}
        t["transformer.wte.weight"] = w(vocab, hidden)
        t["transformer.wpe.weight"] = w(64, hidden)
        for i in range(layers):
            p = f"transformer.h.{i}."
            t[p + "ln_1.weight"], t[p + "ln_1.bias"] = ones(hidden), w(hidden)
            t[p + "attn.c_attn.weight"], t[p + "attn.c_attn.bias"] = w(hidden, 3 * hidden), w(3 * hidden)
            t[p + "attn.c_proj.weight"], t[p + "attn.c_proj.bias"] = w(hidden, hidden), w(hidden)
            t[p + "ln_2.weight"], t[p + "ln_2.bias"] = ones(hidden), w(hidden)
            t[p + "mlp.c_fc.weight"], t[p + "mlp.c_fc.bias"] = w(hidden, ffn), w(ffn)
            t[p + "mlp.c_proj.weight"], t[p + "mlp.c_proj.bias"] = w(ffn, hidden), w(hidden)
        t["transformer.ln_f.weight"], t["transformer.ln_f.bias"] = ones(hidden), w(hidden)
    else:
        head_dim = hidden // heads
        cfg = {"model_type": arch, "architectures": ["LlamaForCausalLM" if arch == "llama" else "Qwen2ForCausalLM"],
               "vocab_size": vocab, "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
               "num_key_value_heads": kv, "intermediate_size": ffn, "max_position_embeddings": 128,
               "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": tied}
        t["model.embed_tokens.weight"] = w(vocab, hidden)
        for i in range(layers):
            p = f"model.layers.{i}."
            t[p + "input_layernorm.weight"] = ones(hidden)
            t[p + "self_attn.q_proj.weight"] = w(heads * head_dim, hidden)
            t[p + "self_attn.k_proj.weight"] = w(kv * head_dim, hidden)
            t[p + "self_attn.v_proj.weight"] = w(kv * head_dim, hidden)
            if arch == "qwen2":
                t[p + "self_attn.q_proj.bias"] = w(heads * head_dim)
                t[p + "self_attn.k_proj.bias"] = w(kv * head_dim)
                t[p + "self_attn.v_proj.bias"] = w(kv * head_dim)
            t[p + "self_attn.o_proj.weight"] = w(hidden, heads * head_dim)
            t[p + "post_attention_layernorm.weight"] = ones(hidden)
            t[p + "mlp.gate_proj.weight"] = w(ffn, hidden)
            t[p + "mlp.up_proj.weight"] = w(ffn, hidden)
            t[p + "mlp.down_proj.weight"] = w(hidden, ffn)
        t["model.norm.weight"] = ones(hidden)
        if not tied:
            t["lm_head.weight"] = w(vocab, hidden)
    json.dump(cfg, open(os.path.join(folder, "config.json"), "w"), indent=1)
    save_file(t, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
