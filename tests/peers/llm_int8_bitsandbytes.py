# SPDX-License-Identifier: GPL-3.0-or-later
"""bitsandbytes' own LLM.int8() functions (0.50.2, its default / CPU backend) against
`quantlab-cli fakequant --format int8_vectorwise | llm_int8` (tests/app/cli_format_peers_test.cpp).

    python llm_int8_bitsandbytes.py QUANTLAB_CLI SMOLLM2_GGUF WORKDIR

Weights (random and SmolLM2-135M-Instruct's, decoded by gguf-py): QuantLab's int8_vectorwise codes
and row absmax equal F.int8_vectorwise_quant(W.half()) bit for bit, and its values equal
F.int8_vectorwise_dequant(CB, SCB) bit for bit. Activations (SmolLM2's real inputs to four linear
layers, captured with transformers on real text, and random ones with planted outlier features):
QuantLab's llm_int8 codes, row absmax and outlier columns equal F.int8_vectorwise_quant(A.half(),
threshold=6.0) bit for bit. Layers: bitsandbytes.matmul with MatmulLtState(threshold=6.0) (the
forward of Linear8bitLt: int8 matmul, dequant, outlier columns through the dequantized INT8
weights) equals QuantLab's fake-quantized input times fake-quantized weight within 1e-4 of the
output's largest magnitude (bitsandbytes' dequant constant 6.200124e-05 is 1.8e-5 above 1/127^2;
the rest is float summation order). Exit 1 on a mismatch; an exception (a peer that cannot run)
fails too.
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch
import bitsandbytes as bnb
import bitsandbytes.functional as F
from gguf import GGUFReader
from gguf.quants import dequantize


def quantlab(cli, x, fmt, work, name):
    src, out, codes, scales = (os.path.join(work, f"{name}.{k}.npy") for k in ("in", "out", "codes", "scales"))
    np.save(src, x)
    r = subprocess.run([cli, "fakequant", "--format", fmt, "--in", src, "--out", out, "--codes", codes, "--scales", scales,
                        "--json"], check=True, capture_output=True, text=True)
    return np.load(out), np.load(codes), np.load(scales), json.loads(r.stdout)["outlier_columns"]


def real_weights(gguf_path):
    reader = GGUFReader(gguf_path)
    found = {t.name: t for t in reader.tensors}
    out = {}
    for name in ["blk.0.attn_q.weight", "blk.3.ffn_down.weight", "blk.17.ffn_up.weight"]:
        t = found[name]
        w = dequantize(t.data, t.tensor_type).astype(np.float32)
        out[name] = np.ascontiguousarray(w.reshape(-1, w.shape[-1]))
    return out


def real_activations(gguf_path):
    """Inputs of four linear layers of SmolLM2 on a real sentence (transformers reads the GGUF)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    folder, name = os.path.split(gguf_path)
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, torch_dtype=torch.float32).eval()
    text = ("The GNU Compiler Collection includes front ends for C, C++, Objective-C, Fortran, Ada, Go and D, "
            "as well as libraries for these languages. It was originally written as the compiler for the GNU "
            "operating system, and it is free software.")
    ids = tok(text, return_tensors="pt").input_ids
    captured = {}
    layers = {"model.layers.0.self_attn.q_proj": None, "model.layers.3.mlp.down_proj": None,
              "model.layers.15.mlp.gate_proj": None, "model.layers.29.mlp.down_proj": None}
    hooks = []
    for n, m in model.named_modules():
        if n in layers:
            hooks.append(m.register_forward_hook(
                lambda mod, inp, out, n=n: captured.__setitem__(n, (inp[0].detach().reshape(-1, inp[0].shape[-1]),
                                                                   mod.weight.detach()))))
    with torch.no_grad():
        model(ids)
    for h in hooks:
        h.remove()
    return {n: (a.numpy().astype(np.float32), w.numpy().astype(np.float32)) for n, (a, w) in captured.items()}


def bits_equal(a, b):
    return a.shape == b.shape and np.array_equal(np.ascontiguousarray(a).view(np.uint32), np.ascontiguousarray(b).view(np.uint32))


def main():
    cli, gguf_path, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(11)
    failures = 0

    def report(ok, text):
        nonlocal failures
        failures += 0 if ok else 1
        print(("" if ok else "MISMATCH ") + text)

    # Weights: vector-wise INT8, no decomposition.
    weights = {"random": (rng.standard_normal((256, 384)) * 0.05).astype(np.float32)}
    weights.update(real_weights(gguf_path))
    for name, w in weights.items():
        ql_v, ql_c, ql_s, _ = quantlab(cli, w, "int8_vectorwise", work, "w." + name)
        CB, SCB, _ = F.int8_vectorwise_quant(torch.from_numpy(w).half())
        deq = F.int8_vectorwise_dequant(CB, SCB).numpy()
        same = (np.array_equal(ql_c, CB.numpy()), bits_equal(ql_s, SCB.numpy()), bits_equal(ql_v, deq))
        report(all(same), f"weights {name} {list(w.shape)}: codes, row absmax, values equal bitsandbytes: {same}")

    # Activations: per-token INT8 with the outlier columns (threshold 6).
    acts = real_activations(gguf_path)
    planted = (rng.standard_normal((96, 384))).astype(np.float32)
    planted[:, [5, 77, 300]] *= 25.0  # three outlier features, as in LLM.int8()'s paper
    planted[10, 200] = 7.5            # one token alone makes column 200 an outlier column
    acts["planted"] = (planted, (rng.standard_normal((128, 384)) * 0.05).astype(np.float32))
    for name, (a, w) in acts.items():
        ql_v, ql_c, ql_s, ql_cols = quantlab(cli, a, "llm_int8", work, "a." + name)
        at = torch.from_numpy(a.copy())
        CA, SCA, cols = F.int8_vectorwise_quant(at.half(), threshold=6.0)
        bnb_cols = sorted(cols.tolist()) if cols is not None else []
        ok = np.array_equal(ql_c, CA.numpy()) and bits_equal(ql_s, SCA.numpy()) and ql_cols == bnb_cols
        kept_exact = all(bits_equal(ql_v[:, j], a[:, j]) for j in ql_cols)
        shown = str(ql_cols) if len(ql_cols) <= 8 else f"{ql_cols[:8]}... ({len(ql_cols)})"
        report(ok and kept_exact, f"activations {name} {list(a.shape)}: codes, row absmax, outlier columns {shown} "
                                  f"equal bitsandbytes: {ok}; kept columns unchanged: {kept_exact}")
        # The layer: bitsandbytes' LLM.int8() matmul against QuantLab's fake-quantized operands.
        wq, _, _, _ = quantlab(cli, w, "int8_vectorwise", work, "lw." + name)
        y_bnb = bnb.matmul(at, torch.from_numpy(w.copy()), state=_state()).float().numpy()
        y_ql = (torch.from_numpy(ql_v).double() @ torch.from_numpy(wq).double().T).numpy()
        scale = float(np.abs(y_bnb).max())
        err = float(np.abs(y_ql - y_bnb).max()) / scale
        y_fp = a.astype(np.float64) @ w.astype(np.float64).T
        err_fp = float(np.abs(y_fp - y_bnb).max()) / scale
        report(err < 1e-4, f"layer {name}: max |QuantLab - bitsandbytes| = {err:.2e} of max |y| (LLM.int8 vs FP32: {err_fp:.2e}, "
                           f"{len(ql_cols)} of {a.shape[1]} columns in full precision)")
    if failures:
        print(f"FAIL: {failures} mismatching case(s)")
        sys.exit(1)
    print("PASS")


def _state():
    s = bnb.MatmulLtState()
    s.threshold = 6.0
    s.has_fp16_weights = True  # quantize B from its float values on this call, as Linear8bitLt's first forward
    # Inference (Linear8bitLt in eval mode): with is_training (the default) bitsandbytes.matmul on a CPU
    # takes MatMul8bitFp, INT8 weights times unquantized activations, with no decomposition at all.
    s.is_training = False
    return s


if __name__ == "__main__":
    main()
