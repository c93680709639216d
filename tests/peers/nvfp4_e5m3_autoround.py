# SPDX-License-Identifier: GPL-3.0-or-later
"""AutoRound's own NVFP4_E5M3 quantizer (intel/auto-round auto_round/data_type/nvfp.py: nvfp4_v2,
the data type of its NVFP4_E5M3 scheme, at iters=0 = round to nearest) gives, bit for bit, what
`quantlab-cli fakequant --format nvfp4_e5m3` gives (tests/app/cli_format_peers_test.cpp).

    python nvfp4_e5m3_autoround.py QUANTLAB_CLI SMOLLM2_GGUF WORKDIR

Inputs: random blocks whose magnitudes sweep 10^-9 .. 10^7 (UE5M3's subnormal scales, its
largest scale 114688 and beyond it), blocks whose scale falls just below a power of two (where
AutoRound's mantissa does not carry), rows shorter than 16 and rows not a multiple of 16 (AutoRound
pads with zeros), all-zero blocks, and real weights of SmolLM2-135M-Instruct decoded by gguf-py.
Checked: the fake-quantized values and the decoded block scales are equal bit for bit; and for
every one of the 254 finite UE5M3 bytes, AutoRound's decoder gives the value QuantLab's scale
table implies. NaN / Inf are left out on purpose (QuantLab's amax ignores them; AutoRound's does
not: docs/FORMATS.md). Exit 1 on a mismatch; an exception (a peer that cannot run) fails too.
"""
import os
import subprocess
import sys

import numpy as np
import torch
from auto_round.data_type.nvfp import e5m3_to_float_tensor, float_to_e5m3_frexp, nvfp4_v2
from gguf import GGUFReader
from gguf.quants import dequantize


def autoround(x):
    """AutoRound's fake quantization and its per-block scales ([rows, blocks] float32)."""
    t = torch.from_numpy(x)
    q, scale, _ = nvfp4_v2(t, group_size=16)
    return q.numpy(), scale.reshape(-1).numpy()


def quantlab(cli, x, work, name):
    src, out, scales = (os.path.join(work, f"{name}.{k}.npy") for k in ("in", "out", "scales"))
    np.save(src, x)
    subprocess.run([cli, "fakequant", "--format", "nvfp4_e5m3", "--in", src, "--out", out, "--scales", scales],
                   check=True, capture_output=True)
    return np.load(out), np.load(scales).reshape(-1)


def inputs(gguf_path):
    rng = np.random.default_rng(7)
    cases = {}
    # 20000 blocks, each with its own magnitude, log-uniform over 16 decades.
    mags = 10.0 ** rng.uniform(-9, 7, size=(20000, 1))
    cases["sweep"] = (rng.standard_normal((20000, 16)) * mags).astype(np.float32)
    # Block amax = 6 * s with s just below and at 2^k (mantissa fields 7.5 .. 8 round down to 7).
    k = rng.integers(-20, 17, size=4000).astype(np.float64)
    frac = rng.uniform(0.93, 1.0, size=4000)
    amax = (6.0 * frac * 2.0 ** k).astype(np.float32)
    b = (rng.uniform(-1, 1, size=(4000, 16)) * amax[:, None]).astype(np.float32)
    b[np.arange(4000), rng.integers(0, 16, size=4000)] = amax
    cases["binade_edges"] = b
    cases["short_rows"] = rng.standard_normal((64, 11)).astype(np.float32)
    cases["ragged_rows"] = (rng.standard_normal((96, 40)) * 3).astype(np.float32)
    z = rng.standard_normal((64, 32)).astype(np.float32)
    z[::3, :16] = 0
    cases["zero_blocks"] = z
    reader = GGUFReader(gguf_path)
    wanted = ["blk.0.attn_q.weight", "blk.3.ffn_down.weight", "blk.29.ffn_gate.weight", "token_embd.weight"]
    found = {t.name: t for t in reader.tensors}
    for name in wanted:
        t = found[name]
        w = dequantize(t.data, t.tensor_type).astype(np.float32)
        w = w.reshape(-1, w.shape[-1])
        if name == "token_embd.weight":
            w = w[:2048]  # 2048 of 49152 rows: enough and fast
        cases["smollm2." + name] = np.ascontiguousarray(w)
    return cases


def main():
    cli, gguf_path, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    failures = 0
    total_values = 0
    for name, x in inputs(gguf_path).items():
        ref_q, ref_s = autoround(x)
        ql_q, ql_s = quantlab(cli, x, work, name)
        same_q = np.array_equal(ref_q.view(np.uint32), ql_q.reshape(ref_q.shape).view(np.uint32))
        same_s = np.array_equal(ref_s.view(np.uint32), ql_s.view(np.uint32))
        total_values += x.size
        detail = f"{name}: shape {list(x.shape)}, values equal {same_q}, block scales equal {same_s}"
        if not (same_q and same_s):
            failures += 1
            bad = np.flatnonzero(ref_q.view(np.uint32).ravel() != ql_q.view(np.uint32).ravel())
            if bad.size:
                i = bad[0]
                detail += f"; first value {i}: x {x.ravel()[i]!r} autoround {ref_q.ravel()[i]!r} quantlab {ql_q.ravel()[i]!r}"
            if ref_s.shape == ql_s.shape:
                bad = np.flatnonzero(ref_s.view(np.uint32) != ql_s.view(np.uint32))
                if bad.size:
                    detail += f"; first scale {bad[0]}: autoround {ref_s[bad[0]]!r} quantlab {ql_s[bad[0]]!r}"
            else:
                detail += f"; scale counts {ref_s.shape} vs {ql_s.shape}"
        print(detail)
    # Every finite byte decodes as QuantLab's table says, and encodes back to itself (AutoRound).
    codes = torch.tensor([c for c in range(1, 255)], dtype=torch.uint8)
    values = e5m3_to_float_tensor(codes)
    e, m = codes.int() >> 3, codes.int() & 7
    table = torch.where(e == 0, m.float() / 8 * 2.0 ** -14, (1 + m.float() / 8) * 2.0 ** (e.float() - 15))
    if not torch.equal(values, table.float()) or not torch.equal(float_to_e5m3_frexp(values), codes):
        failures += 1
        print("UE5M3 byte table: AutoRound's decoder or encoder disagrees with the table")
    else:
        print(f"UE5M3 byte table: 254 finite bytes decode to the table and encode back; largest {values.max().item()}")
    print(f"{total_values} values compared")
    if failures:
        print(f"FAIL: {failures} mismatching case(s)")
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()
