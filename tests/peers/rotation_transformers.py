#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Peer check of QuantLab's rotations with Hugging Face transformers (run by
tests/engine/rotation_peer_test.cpp with the peers venv's python; exit 0 = agreement).

ORIGINAL is an HF model folder; ROTATED is `quantlab-cli export --as fakequant` of ORIGINAL quantized
with full-precision (fp32 pass-through) quantizers and a rotation: the fused rotations (R1, R2) are
in its weights and the online ones (R4 / rht) folded into them. transformers loads both with its
own modeling code (AutoModel, float32, eager attention) and runs the same random token ids: the
outputs (Llama: logits; BERT: last_hidden_state) must agree to 1e-5 (absolute, on outputs of order
1), and the rotated checkpoint's weights must really differ from the original's."""
import sys

import torch
import transformers
from safetensors.torch import load_file


def main():
    original, rotated, kind = sys.argv[1], sys.argv[2], sys.argv[3]
    torch.manual_seed(0)
    cls = transformers.AutoModelForCausalLM if kind == "causal" else transformers.AutoModel
    a = cls.from_pretrained(original, torch_dtype=torch.float32, attn_implementation="eager").eval()
    b = cls.from_pretrained(rotated, torch_dtype=torch.float32, attn_implementation="eager").eval()
    vocab = a.config.vocab_size
    ids = torch.randint(0, vocab, (3, 17))
    with torch.no_grad():
        ya = a(input_ids=ids)
        yb = b(input_ids=ids)
    ya = ya.logits if kind == "causal" else ya.last_hidden_state
    yb = yb.logits if kind == "causal" else yb.last_hidden_state
    diff = float((ya - yb).abs().max())
    scale = float(ya.abs().max())
    wa, wb = load_file(f"{original}/model.safetensors"), load_file(f"{rotated}/model.safetensors")
    changed = sum(1 for n in wb if n in wa and not torch.equal(wa[n].float(), wb[n].float()))
    print(f"transformers {transformers.__version__}: {type(a).__name__}, max |output| {scale:.3f}, "
          f"max |difference| {diff:.3e}, {changed} of {len(wb)} tensors rotated")
    sys.exit(0 if diff <= 1e-5 and changed > 0 else 1)


if __name__ == "__main__":
    main()
