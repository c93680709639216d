#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Peer check of QuantLab's KV-cache fake quantization against NVIDIA Model Optimizer (run by
tests/engine/kv_cache_peer_test.cpp with the peers venv's python; exit 0 = agreement).

DIR holds k.npy [B, H, T, D] (float32 keys with outliers), case.json {"amax": A} and QuantLab's
results fp8.npy (fp8_e4m3 per tensor, amax A) and nvfp4.npy (nvfp4, global amax A). Checks:
  - FP8: Model Optimizer's export path, FP8QTensor.quantize(k, scales=A/448) then dequantize (what a
    deployed cache holds: e4m3(k / k_scale) * k_scale, k_scale = A / 448 as the hf export writes),
    equals ours bit for bit. Model Optimizer's fake-quant forward (a TensorQuantizer with the kv_fp8
    preset's num_bits (4, 3), axis None, amax A; on CPU its fp8_eager: (k * (448 / A)) -> e4m3 ->
    * (1 / (448 / A))) gives the same E4M3 level for every element; its rescale may differ from
    amax / 448 in the last bit (bounded here by 2^-22 relative).
  - NVFP4: NVFP4QTensor.quantize(rows, 16, weights_scaling_factor_2 = A / (6 * 448)) then dequantize,
    rows = k viewed as [B*H*T, D] (16-element blocks along head_dim, one global scale), equals ours
    bit for bit. (Model Optimizer's dynamic-block fake-quant kernel for NVFP4 KV caches needs CUDA.)
Prints one line per check."""
import json
import sys

import numpy as np
import torch
import modelopt
from modelopt.torch.quantization.config import QuantizerAttributeConfig
from modelopt.torch.quantization.nn import TensorQuantizer
from modelopt.torch.quantization.qtensor.fp8_tensor import FP8QTensor
from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor


def main():
    d = sys.argv[1]
    k = torch.from_numpy(np.load(f"{d}/k.npy"))
    amax = float(json.load(open(f"{d}/case.json"))["amax"])
    ours_fp8 = torch.from_numpy(np.load(f"{d}/fp8.npy"))
    ours_nvfp4 = torch.from_numpy(np.load(f"{d}/nvfp4.npy"))
    print(f"modelopt {modelopt.__version__}, torch {torch.__version__}, k {tuple(k.shape)}, amax {amax}")
    ok = True

    scale = torch.tensor(amax / 448.0, dtype=torch.float32)
    q, s = FP8QTensor.quantize(k.clone(), scales=scale)
    export_path = q.dequantize(dtype=torch.float32, scale=s)
    same = torch.equal(export_path, ours_fp8)
    print(f"fp8 per tensor vs FP8QTensor (export path, k_scale = amax/448): {'bit-identical' if same else 'DIFFERENT'}")
    ok &= same

    tq = TensorQuantizer(QuantizerAttributeConfig(num_bits=(4, 3), axis=None))
    tq.amax = torch.tensor(amax)
    with torch.no_grad():
        fake = tq(k.clone())
    # Model Optimizer's fake-quant forward rescales by 1 / (448 / amax) instead of amax / 448: the
    # same E4M3 level, times a scale that may differ in its last bit. Compare levels, and bound the
    # rescale difference.
    level_ours = (ours_fp8 / scale).to(torch.float8_e4m3fn)
    level_mo = (fake * torch.tensor(448.0 / amax, dtype=torch.float32)).to(torch.float8_e4m3fn)
    same_levels = torch.equal(level_ours.view(torch.uint8), level_mo.view(torch.uint8))
    rel = float(((fake - ours_fp8).abs() / ours_fp8.abs().clamp_min(1e-30))[ours_fp8 != 0].max())
    n = int((fake != ours_fp8).sum())
    print(f"fp8 per tensor vs TensorQuantizer fake quant (k * 448/amax, then * 1/(448/amax)): "
          f"E4M3 levels {'identical' if same_levels else 'DIFFERENT'}; {n} of {k.numel()} values differ in the "
          f"rescale, by at most {rel:.2e} relative")
    ok &= same_levels and rel <= 2.0 ** -22

    rows = k.reshape(-1, k.shape[-1]).clone()
    g = torch.tensor(amax / (6.0 * 448.0), dtype=torch.float32)
    qn, ws, ws2 = NVFP4QTensor.quantize(rows, 16, weights_scaling_factor_2=g)
    mo_nvfp4 = qn.dequantize(torch.float32, scale=ws, double_scale=ws2, block_sizes={-1: 16}).reshape(k.shape)
    same = torch.equal(mo_nvfp4, ours_nvfp4)
    print(f"nvfp4 (blocks of 16 along head_dim, global amax/(6*448)) vs NVFP4QTensor: "
          f"{'bit-identical' if same else 'DIFFERENT: %d elements' % int((mo_nvfp4 != ours_nvfp4).sum())}")
    ok &= same
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
