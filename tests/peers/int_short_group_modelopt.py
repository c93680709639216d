#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Peer check of QuantLab's integer groups with a short last group against NVIDIA Model Optimizer
(run by tests/engine/int_short_group_peer_test.cpp with the peers venv's python).

DIR holds w.npy [8, 576] and QuantLab's results int4.npy / int8.npy (symmetric, groups of 128
along rows: four of 128 and one of 64) with their scales int4_scales.npy / int8_scales.npy [8, 5].
Model Optimizer's TensorQuantizer with INT4_AWQ_CFG's weight settings (num_bits, block_sizes
{-1: 128, "type": "static"}) calibrated by max on w pads each row to 640 with zeros
(_setup_for_blockquant), so its amax has 8 * 5 entries. Checks, per format:
  - every scale equals Model Optimizer's amax / (2^(bits-1) - 1) in float32, bit for bit;
  - every element has the same integer level (ours / scale and Model Optimizer's / scale round
    to the same integer), and the values differ by at most 2^-22 relative: Model Optimizer rescales
    with x * (Q / amax) ... * (amax / Q), we divide by amax / Q (the same level, the last bit of
    the product may differ, as for groups that tile the row).
Prints one line per format and PASS."""
import sys
import warnings

import numpy as np
import torch

warnings.filterwarnings("ignore")
import modelopt  # noqa: E402
from modelopt.torch.quantization.config import QuantizerAttributeConfig  # noqa: E402
from modelopt.torch.quantization.nn import TensorQuantizer  # noqa: E402


def modelopt_fake_quant(w, bits):
    tq = TensorQuantizer(QuantizerAttributeConfig(num_bits=bits, block_sizes={-1: 128, "type": "static"}))
    t = torch.from_numpy(w)
    tq.disable_quant()
    tq.enable_calib()
    with torch.no_grad():
        tq(t)
    tq.load_calib_amax()
    tq.enable_quant()
    tq.disable_calib()
    with torch.no_grad():
        out = tq(t)
    return out.numpy(), tq.amax.detach().numpy().astype(np.float32)


def main():
    d = sys.argv[1]
    w = np.load(f"{d}/w.npy")
    print(f"modelopt {modelopt.__version__}, torch {torch.__version__}, w {w.shape}")
    ok = True
    for bits in (4, 8):
        ours = np.load(f"{d}/int{bits}.npy")
        scales = np.load(f"{d}/int{bits}_scales.npy")
        mo, amax = modelopt_fake_quant(w, bits)
        q = np.float32(2 ** (bits - 1) - 1)
        if amax.size != scales.size:
            print(f"int{bits}: Model Optimizer has {amax.size} amax values, QuantLab {scales.size} scales")
            ok = False
            continue
        want = (amax.reshape(scales.shape) / q).astype(np.float32)
        same_scales = np.array_equal(want, scales)
        per_element = np.repeat(scales, 128, axis=1)[:, : w.shape[1]]
        safe = np.where(per_element == 0, 1, per_element)
        same_levels = np.array_equal(np.round(ours / safe), np.round(mo / safe))
        nz = ours != 0
        rel = float(np.max(np.abs(ours - mo)[nz] / np.abs(ours)[nz])) if nz.any() else 0.0
        zero_tail = np.array_equal(ours[5, 512:], np.zeros(64, np.float32)) and np.array_equal(mo[5, 512:], ours[5, 512:])
        print(f"int{bits} groups of 128 on 576 columns: scales {'bit-identical' if same_scales else 'DIFFERENT'} "
              f"({scales.shape[1]} per row); levels {'identical' if same_levels else 'DIFFERENT'}; "
              f"{int((ours != mo).sum())} of {ours.size} values differ in the rescale, by at most {rel:.2e} relative; "
              f"all-zero short group {'kept at 0' if zero_tail else 'CHANGED'}")
        ok &= same_scales and same_levels and rel <= 2.0 ** -22 and zero_tail
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
