# SPDX-License-Identifier: GPL-3.0-or-later
"""The PEFT peer check of a QLoRA adapter QuantLab trained and exported (tests/app/cli_lora_test.cpp).

    lora_peft_peer.py make MODEL_DIR
    lora_peft_peer.py MODEL_DIR ADAPTER_DIR IDS.npy QL_BASE.npy QL_ADAPTED.npy

`make` writes a tiny random Llama (transformers' LlamaForCausalLM, seed 0: hidden 64, MLP 128, 2
layers, 4 heads, 2 KV heads, vocabulary 128) whose every Linear input width is a multiple of 64:
bitsandbytes' CPU path of Linear4bit (functional.py _convert_weight_packed_for_cpu) reshapes the
absmax per row and fails for widths that do not hold whole blocks of 64 (the golden tiny Llama's
MLP of 96), which CUDA's kernels accept.

transformers loads MODEL_DIR with bitsandbytes' NF4 and double quantization (BitsAndBytesConfig:
load_in_4bit, bnb_4bit_quant_type nf4, bnb_4bit_use_double_quant, compute dtype float32) on the
CPU (bitsandbytes' CPU backend quantizes and dequantizes NF4 in plain torch, backends/default/
ops.py), PEFT loads ADAPTER_DIR onto it (PeftModel.from_pretrained), and the logits for the rows of
IDS.npy must match QuantLab's: QL_BASE.npy the base alone (`lora logits RUN --base-only`),
QL_ADAPTED.npy the base with the adapter (`lora logits RUN`). Also: the adapter changes the logits by
far more than the tolerance (so the check could fail), and merge_and_unload of the 4-bit model gives
logits that differ from the adapted ones (PEFT re-quantizes, the merge cost). Prints the numbers;
exit 0 and PASS when they agree.
"""
import sys
import warnings

import numpy as np
import torch

warnings.filterwarnings("ignore")

TOL = 1e-5  # float32 matmuls in another order on logits of magnitude ~1 (measured: ~1.5e-6)
DIFFERING = [0, 0]  # absmax codes where bitsandbytes' C++ CPU kernel and its reference backend differ, of all


def use_reference_double_quant():
    """Double quantization through bitsandbytes' reference backend (backends/default/ops.py
    quantize_blockwise: the nearest code of the dynamic map, found by bucketize on the midpoints),
    which QuantLab follows (shared/design/FORMATS.md "NF4"). On the CPU bitsandbytes runs its C++
    kernel instead (backends/cpu/ops.py cquantize_blockwise_cpu_fp32), which at a near-midpoint can
    take the other neighbour: the counts of such absmax codes are printed."""
    import bitsandbytes.functional as F
    cpp = F.quantize_blockwise

    def reference(A, code=None, absmax=None, out=None, blocksize=4096, nested=False):
        assert absmax is None and out is None and not nested
        if code is None:
            code = F.create_dynamic_map().to(A.device)
        flat = A.reshape(-1).float()
        n = flat.numel()
        blocks = (n + blocksize - 1) // blocksize
        padded = torch.nn.functional.pad(flat, (0, blocks * blocksize - n)).reshape(blocks, blocksize)
        am = padded.abs().max(dim=-1)[0]
        scaled = torch.clamp(padded * (1.0 / am.clamp(min=1e-38).view(-1, 1)), -1, 1).reshape(-1)[:n]
        q = torch.bucketize(scaled, (code[:-1] + code[1:]) / 2, out_int32=True).to(torch.uint8)
        q_cpp, _ = cpp(A, code=code, blocksize=blocksize)
        DIFFERING[0] += int((q_cpp.reshape(-1) != q).sum())
        DIFFERING[1] += n
        return q.reshape(A.shape), F.QuantState(absmax=am, code=code.clone(), blocksize=blocksize, dtype=A.dtype)

    F.quantize_blockwise = reference


def make(model_dir):
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         tie_word_embeddings=False, rms_norm_eps=1e-6)
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # weights of a trained model's scale: larger than the default init's 0.02
        for n, p in model.named_parameters():
            if p.dim() == 2:
                p.normal_(0, 0.08)
    model.save_pretrained(model_dir)
    print("PASS")
    return 0


def main():
    if sys.argv[1] == "make":
        return make(sys.argv[2])
    model_dir, adapter_dir, ids_path, base_path, adapted_path = sys.argv[1:6]
    import bitsandbytes
    import peft
    import transformers
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    print(f"torch {torch.__version__}, transformers {transformers.__version__}, peft {peft.__version__}, "
          f"bitsandbytes {bitsandbytes.__version__}")
    use_reference_double_quant()
    config = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                bnb_4bit_compute_dtype=torch.float32)
    model = AutoModelForCausalLM.from_pretrained(model_dir, quantization_config=config, dtype=torch.float32,
                                                 device_map="cpu")
    four_bit = [n for n, m in model.named_modules() if isinstance(m, bitsandbytes.nn.Linear4bit)]
    print(f"bitsandbytes Linear4bit modules: {len(four_bit)}; double-quant absmax codes where its C++ CPU kernel "
          f"differs from its reference backend: {DIFFERING[0]} of {DIFFERING[1]}")
    for n, m in model.named_modules():
        if isinstance(m, bitsandbytes.nn.Linear4bit):
            st = m.weight.quant_state
            assert st.quant_type == "nf4" and st.nested and st.blocksize == 64, (n, st.quant_type, st.nested, st.blocksize)
    ids = torch.from_numpy(np.load(ids_path)).long()
    ok = True
    # bitsandbytes' CPU fast path (Linear4bit.forward on a CPU with AVX512-BF16, inference only)
    # repacks the weight and rounds the absmax to bfloat16 (functional.py
    # _convert_weight_packed_for_cpu): NF4 arithmetic plus bf16 rounding. The check compares the
    # format's own arithmetic -- matmul_4bit's dequantize_4bit in float32, the path every other
    # device and training take -- and prints the fast path's distance beside it.
    fast = [m for m in model.modules() if isinstance(m, bitsandbytes.nn.Linear4bit) and m.support_avx512bf16_for_cpu]
    for m in model.modules():
        if isinstance(m, bitsandbytes.nn.Linear4bit):
            m.support_avx512bf16_for_cpu = False
    with torch.no_grad():
        base = model(ids).logits.float().numpy()
    ql_base = np.load(base_path)
    d_base = float(np.abs(base - ql_base).max())
    print(f"base (NF4 + double quant): max |QuantLab - bitsandbytes| = {d_base:.3e} (logits up to {np.abs(base).max():.2f})")
    ok &= d_base < TOL
    if fast:
        import copy
        fast_model = copy.deepcopy(model)
        for m in fast_model.modules():
            if isinstance(m, bitsandbytes.nn.Linear4bit):
                m.support_avx512bf16_for_cpu = True
        with torch.no_grad():
            fast_logits = fast_model(ids).logits.float().numpy()
        print(f"(bitsandbytes' AVX512-BF16 CPU fast path, bf16 absmax: max |QuantLab - it| = "
              f"{float(np.abs(fast_logits - ql_base).max()):.3e}; not checked)")
        del fast_model
    model = PeftModel.from_pretrained(model, adapter_dir)
    model.eval()
    lora_modules = sum(1 for _, m in model.named_modules() if isinstance(m, peft.tuners.lora.bnb.Linear4bit))
    print(f"PEFT lora.bnb.Linear4bit modules: {lora_modules}")
    with torch.no_grad():
        adapted = model(ids).logits.float().numpy()
    ql_adapted = np.load(adapted_path)
    d_adapted = float(np.abs(adapted - ql_adapted).max())
    moved = float(np.abs(adapted - base).max())
    print(f"base + adapter: max |QuantLab - PEFT| = {d_adapted:.3e}; the adapter moves the logits by up to {moved:.3e}")
    ok &= d_adapted < TOL and moved > 100 * TOL and lora_modules == len(four_bit) and lora_modules > 0
    merged = model.merge_and_unload()
    with torch.no_grad():
        after_merge = merged(ids).logits.float().numpy()
    print(f"PEFT merge_and_unload on the 4-bit base (re-quantized): max |merged - adapted| = "
          f"{float(np.abs(after_merge - adapted).max()):.3e}")
    if ok:
        print("PASS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
