#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Generate QuantLab's golden test vectors from real peer libraries.

Writes tests/data/golden/{manifest.json, *.npy} (numpy .npy v1.0, little-endian,
C order) deterministically (fixed seeds). Every number in "values", "codes",
"scales", "packed" and "global_scale" is produced by the peer package named in the
case's "source"; this script only builds the inputs and converts the peers' native
outputs to QuantLab's conventions (docs: /work/shared/design/FORMATS.md, CLI
contract). No peer code is copied here.

Peers (exact versions; pinned in scripts/golden/requirements.txt):
  * torchao 0.18.0 (on torch 2.15.0, CPU):
      torchao.prototype.mx_formats.mx_tensor.MXTensor.to_mx(x, elem_dtype, 32,
      scaling_mode=ScaleCalculationMode.FLOOR | RCEIL) (-> mx_tensor.to_mx) and
      MXTensor.dequantize(torch.float32) (-> mx_tensor.to_dtype);
      formats mxfp8_e4m3, mxfp8_e5m2, mxfp6_e3m2, mxfp6_e2m3, mxfp4.
  * nvidia-modelopt 0.47.0:
      modelopt.torch.quantization.qtensor.nvfp4_tensor.NVFP4QTensor.quantize(x, 16)
      (which calls get_weights_scaling_factor_2 / get_weights_scaling_factor) and
      NVFP4QTensor.dequantize(torch.float32, scale=..., double_scale=..., block_sizes={-1: 16});
      modelopt.torch.quantization.qtensor.fp8_tensor.FP8QTensor.quantize(x) / .dequantize
      (per-tensor, E4M3 only);
      modelopt.torch.quantization.qtensor.mxfp4_tensor.MXFP4QTensor.quantize/dequantize
      (one "informational" case: Model Optimizer's own MXFP4 export rounding).
  * torch 2.15.0: Tensor.to(torch.float8_e5m2) with scale amax/57344 for fp8_e5m2
      (Model Optimizer's FP8QTensor supports E4M3 only).
  * bitsandbytes 0.50.2 (CPU): bitsandbytes.functional.quantize_4bit(x, blocksize=64,
      quant_type="nf4", compress_statistics=False|True) and dequantize_4bit. On CPU the
      4-bit quantizer is the pure-torch "default" backend kernel; with
      compress_statistics=True the absmax goes through functional.quantize_blockwise,
      which on CPU is the native libbitsandbytes_cpu kernel (peer_variant
      "bnb_cpu_native"). The same double-quant cases are also produced with the pure-torch
      "default" backend kernels (torch.ops.bitsandbytes.quantize_blockwise /
      dequantize_blockwise redispatched to CompositeExplicitAutograd; peer_variant
      "bnb_torch_default"), because the two pick different 8-bit codes.
  * gguf 0.19.0 (llama.cpp gguf-py): gguf.quants.quantize / gguf.quants.dequantize with
      GGMLQuantizationType.Q8_0, Q4_0, Q4_1, Q5_0, MXFP4.
  numpy 2.4.6.

Also writes tests/data/golden/tables.json (NF4 codebook, bitsandbytes 8-bit dynamic
map) from bitsandbytes.

Run:  /work/peers-venv/bin/python scripts/golden/make_golden.py
      (from the repository root; the venv is created with python3 -m venv and
      pip install --no-deps -r scripts/golden/requirements.txt; torch's CUDA shared libraries
      must be loadable for `import torch`, no GPU is used).

Case kinds: randn (rows of randn * 10^U(a,b)), special (outlier row, zero row, all-equal rows,
+-a rows, -0.0 / small negatives, 1e-30 row, amax just below a power of two, element-grid
midpoint ties with an exact scale, format-specific extras), edge (MX: FLOOR clipping and RCEIL
amax = nextafter(max * 2^k)), tiny (MX: E8M0 clamped / float32-subnormal amax), nvfp4
tiny_tensor / small_tensor / underflow_block, fp8 outlier / tiny_tensor / subnormal_scale, nf4
tail (numel % 64 != 0), tail_div (values where x*(1/absmax) and x/absmax round to different
codes), dq_big (257 blocks -> 2 double-quant blocks), gguf fma_sensitive.

Manifest: each case has "compare": "exact" (bit-for-bit, QuantLab must reproduce it) or
"informational" (a documented peer behaviour that FORMATS.md deliberately does not
follow, or a peer variant; see "note").
"""

import hashlib
import json
import os
import platform
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore")
os.environ.setdefault("TORCHINDUCTOR_DISABLE", "1")

import torch  # noqa: E402

torch.set_num_threads(1)

import bitsandbytes  # noqa: E402
import bitsandbytes.functional as bnbF  # noqa: E402
import gguf  # noqa: E402
import modelopt  # noqa: E402
import torchao  # noqa: E402
from gguf import GGMLQuantizationType as QT  # noqa: E402
from gguf import quants as gq  # noqa: E402
from modelopt.torch.quantization.qtensor.fp8_tensor import FP8QTensor  # noqa: E402
from modelopt.torch.quantization.qtensor.mxfp4_tensor import MXFP4QTensor  # noqa: E402
from modelopt.torch.quantization.qtensor.nvfp4_tensor import NVFP4QTensor  # noqa: E402
from torchao.prototype.mx_formats.config import ScaleCalculationMode  # noqa: E402
from torchao.prototype.mx_formats.constants import DTYPE_FP6_E2M3, DTYPE_FP6_E3M2  # noqa: E402
from torchao.prototype.mx_formats.mx_tensor import MXTensor  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(REPO, "tests", "data", "golden")
F32 = np.float32

VERSIONS = {
    "python": platform.python_version(),
    "numpy": np.__version__,
    "torch": torch.__version__,
    "torchao": torchao.__version__,
    "nvidia-modelopt": modelopt.__version__,
    "bitsandbytes": bitsandbytes.__version__,
    "gguf": getattr(gguf, "__version__", None),
}
if VERSIONS["gguf"] is None:
    from importlib.metadata import version as _v

    VERSIONS["gguf"] = _v("gguf")

V_AO = f"torchao {VERSIONS['torchao']}"
V_MO = f"nvidia-modelopt {VERSIONS['nvidia-modelopt']}"
V_BNB = f"bitsandbytes {VERSIONS['bitsandbytes']}"
V_GG = f"gguf {VERSIONS['gguf']}"
V_TORCH = f"torch {VERSIONS['torch']}"

CASES = []


# ----------------------------------------------------------------------------- helpers
def save(fname, arr, dtype):
    arr = np.ascontiguousarray(np.asarray(arr).astype(np.dtype(dtype).newbyteorder("<")))
    path = os.path.join(OUT, fname)
    with open(path, "wb") as f:
        np.lib.format.write_array(f, arr, version=(1, 0), allow_pickle=False)
    return fname


def f32hex(x):
    return "0x%08x" % int(np.array(x, dtype=F32).view(np.uint32))


def add_case(name, fmt, source, x, values, codes=None, scales=None, packed=None,
             options=None, compare="exact", note=None, extra=None, code_dtype="u1"):
    x = np.asarray(x, dtype=F32)
    values = np.asarray(values, dtype=F32)
    assert values.shape == x.shape, (name, values.shape, x.shape)
    case = {"name": name, "format": fmt, "options": options or {}, "source": source}
    case["input"] = save(f"{name}.input.npy", x, "f4")
    case["values"] = save(f"{name}.values.npy", values, "f4")
    if codes is not None:
        codes = np.asarray(codes)
        assert codes.shape == x.shape, (name, codes.shape)
        case["codes"] = save(f"{name}.codes.npy", codes, code_dtype)
    if scales is not None:
        case["scales"] = save(f"{name}.scales.npy", np.asarray(scales, dtype=F32), "f4")
    if packed is not None:
        case["packed"] = save(f"{name}.packed.npy", np.asarray(packed, dtype=np.uint8), "u1")
    if extra:
        case.update(extra)
    case["compare"] = compare
    if note:
        case["note"] = note
    CASES.append(case)


def nextafter(a, b):
    return np.nextafter(F32(a), F32(b)).astype(F32)


def float_grid(ebits, mbits, bias, max_finite):
    """All non-negative finite values of a small float format (test-input helper)."""
    vals = [0.0]
    for m in range(1, 2 ** mbits):
        vals.append(m / 2 ** mbits * 2.0 ** (1 - bias))
    for e in range(1, 2 ** ebits):
        for m in range(2 ** mbits):
            v = (1 + m / 2 ** mbits) * 2.0 ** (e - bias)
            if v <= max_finite:
                vals.append(v)
    return np.array(sorted(set(vals)), dtype=np.float64)


def midpoints(grid):
    g = np.asarray(grid, dtype=np.float64)
    return ((g[:-1] + g[1:]) / 2).astype(F32)  # exact: one extra mantissa bit


def fill_blocks(lead, items, block, rng, filler):
    """Blocks of `block` elements, each starting with lead(i) followed by items."""
    items = list(items)
    out = []
    i = 0
    while items:
        take, items = items[: block - 1], items[block - 1:]
        while len(take) < block - 1:
            take.append(filler(rng))
        blk = np.array([lead(i)] + take, dtype=np.float64)
        out.append(blk)
        i += 1
    return out


def rows_from_blocks(blocks, cols):
    flat = np.concatenate(blocks)
    per_row = cols
    pad = (-len(flat)) % per_row
    if pad:
        raise ValueError("blocks do not fill whole rows")
    return flat.reshape(-1, cols).astype(F32)


def randn_rows(rng, rows, cols, lo, hi):
    mags = 10.0 ** rng.uniform(lo, hi, size=(rows, 1))
    return (rng.standard_normal((rows, cols)) * mags).astype(F32)


def generic_special_rows(rng, cols, base=1.0):
    """Rows shared by block formats: outlier, zeros, all-equal, signs, -0.0, tiny."""
    r = []
    x = rng.standard_normal(cols) * 0.5 * base
    x[5] = 300.0 * base  # one huge outlier in the first block
    r.append(x)
    r.append(np.zeros(cols))
    r.append(np.full(cols, 0.7 * base))
    r.append(np.full(cols, -1.3e-2 * base))
    a = abs(rng.standard_normal()) * base + 0.1 * base
    x = rng.choice([-1.0, 1.0], size=cols) * a  # +a / -a only: signed-max ties
    x[0], x[1] = -a, a
    x[32 % cols], x[(33) % cols] = a, -a
    r.append(x)
    x = rng.standard_normal(cols) * 1e-3 * base  # small values, some round to +-0
    x[::4] = -0.0
    x[1::8] = -1e-9 * base
    x[7] = 2.0 * base
    x[32 % cols + 7] = -3.0 * base
    r.append(x)
    r.append(rng.standard_normal(cols) * 1e-30)  # tiny but normal float32 scales
    x = rng.uniform(-1, 1, cols) * 4.0 * base  # amax just below a power of two
    x[3] = nextafter(8.0 * base, 0.0)
    x[32 % cols + 9] = -nextafter(0.5 * base, 0.0)
    r.append(x)
    return [np.asarray(v, dtype=F32) for v in r]


# ----------------------------------------------------------------------------- MX (torchao)
MX_FORMATS = [
    # name, torchao elem dtype, (ebits, mbits, bias, max), emax
    ("mxfp8_e4m3", torch.float8_e4m3fn, (4, 3, 7, 448.0), 8),
    ("mxfp8_e5m2", torch.float8_e5m2, (5, 2, 15, 57344.0), 15),
    ("mxfp6_e3m2", DTYPE_FP6_E3M2, (3, 2, 3, 28.0), 4),
    ("mxfp6_e2m3", DTYPE_FP6_E2M3, (2, 3, 1, 7.5), 2),
    ("mxfp4", torch.float4_e2m1fn_x2, (2, 1, 1, 6.0), 2),
]


def run_mx(x, elem, mode):
    xt = torch.from_numpy(np.ascontiguousarray(x))
    mx = MXTensor.to_mx(xt, elem, 32, scaling_mode=mode)
    vals = mx.dequantize(torch.float32).numpy()
    e8 = mx.scale.view(torch.uint8).numpy().reshape(x.shape[0], x.shape[1] // 32)
    scales = np.ldexp(np.ones_like(e8, dtype=np.float64), e8.astype(np.int32) - 127).astype(F32)
    if elem == torch.float4_e2m1fn_x2:
        packed = mx.qdata.view(torch.uint8).numpy().reshape(x.shape[0], x.shape[1] // 2)
        codes = np.empty(x.shape, np.uint8)
        codes[:, 0::2] = packed & 0x0F
        codes[:, 1::2] = packed >> 4
    elif elem in (torch.float8_e4m3fn, torch.float8_e5m2):
        codes = mx.qdata.view(torch.uint8).numpy().reshape(x.shape)
        packed = codes.copy()
    else:
        codes = mx.qdata.numpy().reshape(x.shape).astype(np.uint8)
        assert codes.max() < 64
        packed = None
    return vals, codes, scales, packed


def mx_inputs(fmt, fp, emax, seed):
    eb, mb, bias, mx_max = fp
    rng = np.random.default_rng(seed)
    grid = float_grid(eb, mb, bias, mx_max)
    mids = midpoints(grid)
    cols = 64
    # ties: amax = max * 2^k makes the shared scale exactly 2^k (FLOOR and RCEIL);
    # the other 31 elements are element-grid midpoints (and grid values) times 2^k.
    ks = [0, -3, 5, -20, 11, 2, -7, 1]
    items = []
    for i, m in enumerate(mids):
        items.append(m * (-1.0) ** i)
    items += [g * (-1.0) ** (i + 1) for i, g in enumerate(grid)]
    items += [nextafter(m, 0) * (-1.0) ** i for i, m in enumerate(mids[::3])]
    items += [nextafter(m, 1e9) * (-1.0) ** i for i, m in enumerate(mids[1::3])]
    blocks = fill_blocks(lambda i: mx_max * (-1) ** i, items, 32, rng,
                         lambda r: float(r.choice(grid)) * r.choice([-1, 1]))
    if len(blocks) % 2:
        blocks.append(np.concatenate([[mx_max], np.full(31, mids[len(mids) // 2])]))
    blocks = [b * 2.0 ** ks[i % len(ks)] for i, b in enumerate(blocks)]
    tie_rows = rows_from_blocks(blocks, cols)
    # FLOOR clipping (block amax between max and 2^(emax+1)) and RCEIL edges
    # (amax a hair above max * 2^k: torchao's log2 of amax/max decides the scale).
    edge = []
    for k in (0, 3, 10, -20, 40, -60):
        x = rng.uniform(-1, 1, cols) * mx_max * 2.0 ** k
        x[0] = mx_max * 1.05 * 2.0 ** k
        x[1] = -nextafter(2.0 ** (emax + 1), 0) * 2.0 ** k
        x[32] = nextafter(mx_max * 2.0 ** k, 1e30)
        x[33] = mx_max * 2.0 ** k * 0.999
        edge.append(x.astype(F32))
    special = np.stack(generic_special_rows(rng, cols) + list(tie_rows)).astype(F32)
    edge = np.stack(edge).astype(F32)
    randn = randn_rows(rng, 16, 128, -3, 3)
    # float32-subnormal / e8m0-clamped scales: torchao deviates from FORMATS.md here.
    tiny = []
    for amax in (2.0 ** -117.5, 2.0 ** -119.3, 2.0 ** -121.7, 2.0 ** -124.2,
                 2.0 ** -125.6, 2.0 ** -126.5, 1e-39, 3e-42):
        x = rng.uniform(-1, 1, cols) * amax
        x[0] = amax
        tiny.append(x.astype(F32))
    tiny = np.stack(tiny)
    return {"randn": randn, "special": special, "edge": edge, "tiny": tiny}


def gen_mx():
    modes = [("floor", ScaleCalculationMode.FLOOR), ("rceil", ScaleCalculationMode.RCEIL)]
    for fi, (fmt, elem, fp, emax) in enumerate(MX_FORMATS):
        inputs = mx_inputs(fmt, fp, emax, 1000 + fi)
        for mname, mode in modes:
            opts = {} if mname == "floor" else {"mx_scale": "rceil"}
            src = (f"{V_AO} torchao.prototype.mx_formats.mx_tensor.MXTensor.to_mx"
                   f"(block_size=32, scaling_mode=ScaleCalculationMode.{mode.name}) + "
                   f"MXTensor.dequantize(torch.float32)")
            for kind, x in inputs.items():
                vals, codes, scales, packed = run_mx(x, elem, mode)
                note = None
                compare = "exact"
                if kind == "tiny":
                    compare = "informational"
                    note = ("block amax so small that the E8M0 exponent clamps to -127 (or amax is "
                            "float32-subnormal): torchao FLOOR divides by max(2^-127, 2^-126) = 2^-126 "
                            "but dequantizes with 2^-127; torchao RCEIL scales the elements by 1.0 "
                            "when the E8M0 byte is 0. FORMATS.md specifies x * 2^-e exactly.")
                if kind == "edge" and mname == "rceil":
                    compare = "informational"
                    note = ("Second block of each row has amax = nextafter(max_elem * 2^k) for k in "
                            "(0, 3, 10, -20, 40, -60): torchao's eager RCEIL takes ceil(torch.log2(amax / "
                            "max_elem)) in float32, and log2(2^k * (1 + 2^-23)) rounds to exactly k for "
                            "|k| >= 3, so the scale is 2^k (not 2^(k+1)) and the largest element clips to "
                            "max_elem. FORMATS.md: 2^ceil(log2(amax / max_elem)), no clipping (the "
                            "cvt.rp.satfinite.ue8m0 hardware rounding).")
                add_case(f"{fmt}_{mname}_{kind}", fmt, src, x, vals, codes, scales, packed,
                         options=opts, compare=compare, note=note)


# ----------------------------------------------------------------------------- NVFP4 (modelopt)
E2M1_MIDS = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]
E2M1_GRID = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def run_nvfp4(x):
    xt = torch.from_numpy(np.ascontiguousarray(x))
    q, ws, ws2 = NVFP4QTensor.quantize(xt.clone(), 16)
    vals = q.dequantize(torch.float32, scale=ws, double_scale=ws2, block_sizes={-1: 16}).numpy()
    packed = q._quantized_data.numpy().astype(np.uint8)
    codes = np.empty(x.shape, np.uint8)
    codes[:, 0::2] = packed & 0x0F
    codes[:, 1::2] = packed >> 4
    assert ws.dtype == torch.float8_e4m3fn
    scales = ws.to(torch.float32).numpy().reshape(x.shape[0], x.shape[1] // 16)
    g = F32(ws2.float().item())
    return vals, codes, scales, packed, g, ws.view(torch.uint8).numpy()


def gen_nvfp4():
    src = (f"{V_MO} modelopt.torch.quantization.qtensor.nvfp4_tensor.NVFP4QTensor.quantize"
           f"(block_size=16) [get_weights_scaling_factor_2, get_weights_scaling_factor] + "
           f"NVFP4QTensor.dequantize")
    rng = np.random.default_rng(2000)
    cols = 64
    e4m3 = float_grid(4, 3, 7, 448.0)
    inputs = {}
    inputs["randn"] = randn_rows(rng, 16, 128, -1, 1)
    # special: global amax 2688 = 6*448 makes weight_scale_2 exactly 1.0, so a block with
    # amax 6*s (s an E4M3 value) gets weight_scale s exactly and x/(s*1) hits E2M1 midpoints.
    rows = []
    x = rng.uniform(-1, 1, cols) * 100
    x[0] = 2688.0
    rows.append(x)
    svals = [448.0, 1.0, 0.5, 13.0, 2.0 ** -9, 3 * 2.0 ** -9, 2.0 ** -7, 0.1015625, 240.0, 6.5, 0.0390625, 52.0]
    blocks = []
    for i, s in enumerate(svals):
        b = [6.0 * s * (-1) ** i] + [m * s * (-1) ** j for j, m in enumerate(E2M1_MIDS)] + \
            [m * s * (-1) ** (j + 1) for j, m in enumerate(E2M1_MIDS)] + [0.0, -0.0]
        blocks.append(np.array(b[:16]))
        b2 = [6.0 * s] + [g * s * (-1) ** j for j, g in enumerate(E2M1_GRID)] + \
             [float(nextafter(m * s, 0)) for m in E2M1_MIDS]
        blocks.append(np.array(b2[:16]))
    rows += list(np.concatenate(blocks).reshape(-1, cols))
    rows.append(np.zeros(cols))
    rows.append(np.full(cols, 0.7))
    x = rng.standard_normal(cols) * 0.02
    x[::3] = -0.0
    x[1::5] = -0.001  # negative values that round to E2M1 zero
    x[0] = 3.0
    rows.append(x)
    # blocks whose E4M3 scale is subnormal but nonzero (amax_t/458752 < block amax < amax_t/28672)
    x = rng.uniform(-1, 1, cols) * 0.05
    for b in range(4):
        x[16 * b] = [0.09, 0.02, 0.0075, 0.05][b]
    rows.append(x)
    x = rng.standard_normal(cols)
    x[10] = 2000.0  # outlier (below the global amax)
    rows.append(x)
    inputs["special"] = np.stack(rows).astype(F32)
    # entire tensor tiny: weight_scale_2 = amax/2688 is a float32 subnormal
    x = (rng.standard_normal((4, 64)) * 1e-36).astype(F32)
    inputs["tiny_tensor"] = x
    x = (rng.standard_normal((4, 64)) * 3e-30).astype(F32)
    inputs["small_tensor"] = x
    for kind, x in inputs.items():
        vals, codes, scales, packed, g, _ = run_nvfp4(x)
        add_case(f"nvfp4_{kind}", "nvfp4", src, x, vals, codes, scales, packed,
                 extra={"global_scale": float(g), "global_scale_hex": f32hex(g)})
    # underflow: blocks with amax < amax_tensor/458752 (E4M3(scale) would be 0). The peer
    # clamps the block scale to 2^-9 before the E4M3 cast; FORMATS.md says such blocks are 0.
    x = (rng.uniform(-1, 1, (2, 64)) * 0.004).astype(F32)
    x[0, 0] = 2688.0  # weight_scale_2 = 1.0, threshold block amax = 6*2^-10 = 0.005859375
    x[0, 16:32] = np.linspace(-0.004, 0.004, 16)
    x[0, 32:48] = rng.uniform(-1, 1, 16) * 0.001
    x[0, 48:64] = 0.0
    x[0, 48] = F32(0.005859375)  # exactly amax_t/458752: scale 2^-10 ties to E4M3 zero
    x[0, 49] = -F32(0.0029296875)
    x[1, 0:16] = rng.uniform(-1, 1, 16) * 1e-5
    x[1, 16:32] = rng.uniform(-1, 1, 16) * 0.0058
    x[1, 32:48] = rng.uniform(-1, 1, 16) * 0.0003
    x[1, 48:64] = rng.uniform(-1, 1, 16) * 0.004
    vals, codes, scales, packed, g, ws8 = run_nvfp4(x)
    add_case("nvfp4_underflow_block", "nvfp4", src, x, vals, codes, scales, packed,
             compare="informational",
             note=("Blocks with block_amax < amax_tensor/458752 (block 0 of row 0 holds the "
                   "global amax 2688, so weight_scale_2 = 1). Model Optimizer clamps the per-block "
                   "scale to [2^-9, 448] before the E4M3 cast, so these blocks get weight_scale "
                   "2^-9 and nonzero codes; FORMATS.md says they dequantize to 0."),
             extra={"global_scale": float(g), "global_scale_hex": f32hex(g)})


# ----------------------------------------------------------------------------- FP8 per tensor
def gen_fp8():
    src_e4 = (f"{V_MO} modelopt.torch.quantization.qtensor.fp8_tensor.FP8QTensor.quantize "
              f"(per tensor, scale = amax/448, (x/scale).to(float8_e4m3fn)) + FP8QTensor.dequantize")
    src_e5 = (f"{V_TORCH} (x / (amax/57344)).to(torch.float8_e5m2) and back (Model Optimizer "
              f"{VERSIONS['nvidia-modelopt']} FP8QTensor is E4M3-only)")
    for fmt, (eb, mb, bias, mx), seed in (("fp8_e4m3", (4, 3, 7, 448.0), 3000),
                                          ("fp8_e5m2", (5, 2, 15, 57344.0), 3001)):
        rng = np.random.default_rng(seed)
        grid = float_grid(eb, mb, bias, mx)
        mids = midpoints(grid)
        inputs = {"randn": randn_rows(rng, 16, 128, -1.5, 1.5)}
        items = [m * (-1.0) ** i for i, m in enumerate(mids)]
        items += [g * (-1.0) ** (i + 1) for i, g in enumerate(grid)]
        items += [nextafter(m, 0) for m in mids[::4]] + [-nextafter(m, 1e9) for m in mids[2::4]]
        n = len(items) + 1
        cols = 64
        pad = (-n) % cols
        arr = np.array([mx] + items + [0.0] * pad, dtype=F32).reshape(-1, cols)
        arr[-1, -1] = -0.0
        rows = list(arr)  # amax = max -> scale exactly 1: every grid midpoint is a tie
        rows.append(np.zeros(cols, F32))
        rows.append(np.full(cols, 0.7, F32))
        x = rng.standard_normal(cols) * 2.0 ** -9
        x[::5] = -0.0
        x[1::7] = -2.0 ** -16
        rows.append(x.astype(F32))  # subnormal FP8 region
        inputs["ties_special"] = np.stack(rows).astype(F32)
        x = rng.standard_normal((8, 64)).astype(F32)
        x[3, 17] = 1.0e4  # one huge outlier: everything else lands in FP8 subnormals
        inputs["outlier"] = x
        inputs["tiny_tensor"] = (rng.standard_normal((4, 64)) * 1e-30).astype(F32)
        inputs["subnormal_scale"] = (rng.standard_normal((4, 64)) * 1e-37).astype(F32)
        for kind, x in inputs.items():
            xt = torch.from_numpy(x)
            if fmt == "fp8_e4m3":
                q, scale = FP8QTensor.quantize(xt.clone())
                vals = q.dequantize(torch.float32, scale=scale).numpy()
                codes = q._quantized_data.view(torch.uint8).numpy()
                scale = scale.float().reshape(1).numpy()
                src = src_e4
            else:
                amax = xt.abs().amax().float()
                scale_t = amax / 57344.0
                q8 = (xt / scale_t).to(torch.float8_e5m2)
                vals = (q8.to(torch.float32) * scale_t).numpy()
                codes = q8.view(torch.uint8).numpy()
                scale = scale_t.reshape(1).numpy()
                src = src_e5
            add_case(f"{fmt}_{kind}", fmt, src, x, vals, codes, scale.astype(F32), codes.copy())


# ----------------------------------------------------------------------------- NF4 (bitsandbytes)
_CEA = torch._C.DispatchKeySet(torch._C.DispatchKey.CompositeExplicitAutograd)


def run_nf4(x, dq, variant):
    xt = torch.from_numpy(np.ascontiguousarray(x))
    n = x.size
    extra = {}
    if not dq:
        packed_t, st = bnbF.quantize_4bit(xt, blocksize=64, compress_statistics=False, quant_type="nf4")
        vals = bnbF.dequantize_4bit(packed_t, st).numpy()
        absmax = st.absmax.numpy()
    elif variant == "bnb_cpu_native":
        packed_t, st = bnbF.quantize_4bit(xt, blocksize=64, compress_statistics=True, quant_type="nf4")
        vals = bnbF.dequantize_4bit(packed_t, st).numpy()
        # the absmax exactly as dequantize_4bit reconstructs it
        absmax = bnbF.dequantize_blockwise(st.absmax, st.state2)
        absmax += st.offset
        absmax = absmax.numpy()
        extra = {"nested_codes": st.absmax.numpy(), "nested_absmax": st.state2.absmax.numpy(),
                 "nested_offset": F32(st.offset.item())}
    else:  # bnb_torch_default: same algorithm, pure-torch default backend kernels
        packed_t, absmax4 = torch.ops.bitsandbytes.quantize_4bit.default(xt, 64, "nf4", torch.uint8)
        offset = absmax4.mean()
        dmap = bnbF.create_dynamic_map(signed=True)
        q2, a2 = torch.ops.bitsandbytes.quantize_blockwise.default.redispatch(
            _CEA, absmax4 - offset, dmap, 256)
        absmax_t = torch.ops.bitsandbytes.dequantize_blockwise.default.redispatch(
            _CEA, q2, a2, dmap, 256, torch.float32)
        absmax_t += offset
        vals = torch.ops.bitsandbytes.dequantize_4bit.default.redispatch(
            _CEA, packed_t, absmax_t, 64, "nf4", list(x.shape), torch.float32).numpy()
        absmax = absmax_t.numpy()
        extra = {"nested_codes": q2.numpy(), "nested_absmax": a2.numpy(),
                 "nested_offset": F32(offset.item())}
    packed = packed_t.numpy().reshape(-1).astype(np.uint8)
    flat = np.empty(packed.size * 2, np.uint8)
    flat[0::2] = packed >> 4
    flat[1::2] = packed & 0x0F
    codes = flat[:n].reshape(x.shape)
    return vals.reshape(x.shape), codes, absmax.astype(F32), packed, extra


def nf4_div_sensitive(rng, bounds):
    """[2, 40]: a full 64-block and a 16-element tail block with the same absmax, holding
    values where x * (1/absmax) (full blocks) and x / absmax (tail block) fall on
    different sides of a bitsandbytes bound (np.searchsorted side='left' == bucketize)."""
    best = (None, [])
    for _ in range(400):
        a = F32(rng.uniform(0.3, 30.0))
        inv = F32(F32(1) / a)
        v0 = (bounds.astype(F32) * a).astype(F32)
        cands = []
        for sgn in (1, -1):
            v = v0.copy()
            for _ in range(6):
                v = np.nextafter(v, F32(0)).astype(F32)
            for _ in range(12):
                cands.append(sgn * v)
                v = np.nextafter(v, F32(1e9)).astype(F32)
        c = np.unique(np.concatenate(cands).astype(F32))
        m1 = np.clip((c * inv).astype(F32), -1, 1)
        m2 = np.clip((c / a).astype(F32), -1, 1)
        hits = list(c[np.searchsorted(bounds, m1, "left") != np.searchsorted(bounds, m2, "left")])
        if len(hits) > len(best[1]):
            best = (a, hits)
        if len(hits) >= 15:
            break
    a, hits = best
    hits = (hits + [F32(0.5) * a] * 15)[:15]
    full = np.concatenate([[a], hits, rng.uniform(-1, 1, 48) * a]).astype(F32)
    tail = np.concatenate([[a], hits]).astype(F32)
    return np.concatenate([full, tail]).reshape(2, 40).astype(F32)


def gen_nf4():
    rng = np.random.default_rng(4000)
    code = bnbF.get_4bit_type("nf4", device="cpu").numpy().astype(F32)
    bounds = ((torch.from_numpy(code[:-1]) + torch.from_numpy(code[1:])) / 2).numpy()  # bnb's bounds
    cols = 64
    inputs = {}
    inputs["randn"] = randn_rows(rng, 16, 128, -3, 3)
    rows = generic_special_rows(rng, cols)
    # ties: absmax exactly 1 -> scaled value == x; bitsandbytes' midpoints and neighbours
    for sgn in (1, -1):
        x = np.zeros(cols, F32)
        x[0] = sgn * 1.0
        x[1:16] = bounds
        x[16:31] = nextafter(bounds, 2.0)
        x[31:46] = nextafter(bounds, -2.0)
        x[46:62] = code
        x[62] = -0.0
        x[63] = 0.5
        rows.append(x * sgn)
    x = (rng.uniform(-1, 1, cols) * 5e-39).astype(F32)  # absmax below the 1e-38 clamp
    x[0] = F32(5e-39)
    rows.append(x)
    inputs["special"] = np.stack(rows).astype(F32)
    inputs["tail"] = randn_rows(rng, 5, 50, -1, 1)  # 250 elements: 3 blocks + tail of 58
    inputs["tail_div"] = nf4_div_sensitive(rng, bounds)
    x = randn_rows(rng, 257, 64, -2, 2)  # 257 blocks -> 2 double-quant blocks (256 + 1)
    x[100] *= 1000.0
    inputs["dq_big"] = x
    src_plain = (f"{V_BNB} bitsandbytes.functional.quantize_4bit(blocksize=64, quant_type='nf4', "
                 f"compress_statistics={{dq}}) + dequantize_4bit (CPU)")
    for kind, x in inputs.items():
        for dq in ((False, True) if kind != "dq_big" else (True,)):
            variants = ["bnb_cpu_native", "bnb_torch_default"] if dq else [None]
            for variant in variants:
                vals, codes, absmax, packed, extra = run_nf4(x, dq, variant)
                nblk = -(-x.size // 64)
                assert absmax.shape == (nblk,)
                name = f"nf4_{kind}" + ("_dq" if dq else "")
                compare, note, src = "exact", None, src_plain.format(dq=dq)
                if dq:
                    ex = {"peer_variant": variant,
                          "nested_offset": float(extra["nested_offset"]),
                          "nested_offset_hex": f32hex(extra["nested_offset"]),
                          "nested_codes": save(f"{name}_{variant}.nested_codes.npy",
                                               extra["nested_codes"], "u1"),
                          "nested_absmax": save(f"{name}_{variant}.nested_absmax.npy",
                                                extra["nested_absmax"], "f4")}
                    name = f"{name}_{variant}"
                    if variant == "bnb_cpu_native":
                        src += (" [absmax 8-bit double quant via quantize_blockwise -> native "
                                "libbitsandbytes_cpu cquantize_blockwise_cpu_fp32]")
                        compare = "informational"
                        note = ("Public API on CPU. The native CPU 8-bit quantizer (BinSearch) does "
                                "not always pick the nearest dynamic-map code (e.g. 0.0 -> code 131 "
                                "= 2.125e-05 instead of code 127 = 0). See the bnb_torch_default "
                                "variant for nearest-code selection.")
                    else:
                        src = (f"{V_BNB} default (pure torch) backend kernels: "
                               f"torch.ops.bitsandbytes.quantize_4bit, quantize_blockwise(blocksize=256, "
                               f"create_dynamic_map()), dequantize_blockwise, dequantize_4bit "
                               f"(redispatched to CompositeExplicitAutograd); offset = absmax.mean()")
                else:
                    ex = None
                add_case(name, "nf4", src, x, vals, codes, absmax, packed,
                         options={"double_quant": True} if dq else {},
                         compare=compare, note=note, extra=ex)


# ----------------------------------------------------------------------------- GGUF (gguf-py)
GG = [("gguf_q8_0", QT.Q8_0), ("gguf_q4_0", QT.Q4_0), ("gguf_q4_1", QT.Q4_1),
      ("gguf_q5_0", QT.Q5_0), ("gguf_mxfp4", QT.MXFP4)]


def gguf_decode(fmt, raw, rows, cols):
    nb = cols // 32
    b = raw.reshape(rows, nb, -1)
    if fmt == "gguf_q8_0":
        d = b[..., 0:2].copy().view(np.float16)[..., 0].astype(F32)
        codes = b[..., 2:34].view(np.int8).reshape(rows, cols)
        return codes, d
    if fmt in ("gguf_q4_0", "gguf_q5_0"):
        d = b[..., 0:2].copy().view(np.float16)[..., 0].astype(F32)
        qs = b[..., -16:]
        lo = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # j low nibble, j+16 high
        if fmt == "gguf_q5_0":
            qh = b[..., 2:6].copy().view("<u4")[..., 0]
            hb = ((qh[..., None] >> np.arange(32, dtype=np.uint32)) & 1).astype(np.uint8)
            lo = lo | (hb << 4)
        return lo.reshape(rows, cols).astype(np.uint8), d
    if fmt == "gguf_q4_1":
        d = b[..., 0:2].copy().view(np.float16)[..., 0].astype(F32)
        m = b[..., 2:4].copy().view(np.float16)[..., 0].astype(F32)
        qs = b[..., 4:20]
        lo = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)
        return lo.reshape(rows, cols).astype(np.uint8), np.stack([d, m], axis=-1)
    if fmt == "gguf_mxfp4":
        e = b[..., 0].astype(np.int32)
        qs = b[..., 1:17]
        lo = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)
        return lo.reshape(rows, cols).astype(np.uint8), np.ldexp(np.ones(e.shape), e - 127).astype(F32)
    raise ValueError(fmt)


def fma_f32(a, b, c):
    """float32 fused multiply-add emulated in float64 (exact for the ranges used here)."""
    return (np.float64(a) * np.float64(b) + np.float64(c)).astype(F32)


def gguf_tie_rows(fmt, rng, cols=64):
    rows = []
    if fmt == "gguf_q8_0":  # amax 127 -> d = 1, id = 1: k + 0.5 are exact ties (round half away)
        ks = np.arange(-127, 127) + 0.5
        vals = list(ks)
        blocks = fill_blocks(lambda i: 127.0 * (-1) ** i, vals, 32, rng, lambda r: r.integers(-127, 127) + 0.5)
    elif fmt == "gguf_q4_0":  # signed max -8 -> d = 1; +8 -> d = -1
        vals = list(np.arange(-8, 8) + 0.5) * 2
        blocks = fill_blocks(lambda i: -8.0 if i % 2 == 0 else 8.0, vals, 32, rng,
                             lambda r: r.integers(-8, 8) + 0.5)
    elif fmt == "gguf_q5_0":
        vals = list(np.arange(-16, 16) + 0.5) * 2
        blocks = fill_blocks(lambda i: -16.0 if i % 2 == 0 else 16.0, vals, 32, rng,
                             lambda r: r.integers(-16, 16) + 0.5)
    elif fmt == "gguf_q4_1":  # min 0, max 15 -> d = 1, m = 0
        vals = list(np.arange(0, 15) + 0.5) * 2
        blocks = fill_blocks(lambda i: 15.0, vals, 32, rng, lambda r: r.integers(0, 15) + 0.5)
        blocks = [np.concatenate([[b[0], 0.0], b[2:]]) for b in blocks]
    else:  # gguf_mxfp4: amax 6 -> half-scale 0.5, elements on the E2M1 grid; E2M1 midpoints
        vals = E2M1_MIDS + [-m for m in E2M1_MIDS] + E2M1_GRID + [-g for g in E2M1_GRID]
        vals += [float(nextafter(m, 0)) for m in E2M1_MIDS] + [float(nextafter(m, 9)) for m in E2M1_MIDS]
        blocks = fill_blocks(lambda i: 6.0 * (-1) ** i, vals, 32, rng,
                             lambda r: float(r.choice(E2M1_MIDS)) * r.choice([-1, 1]))
    if len(blocks) % 2:
        blocks.append(blocks[-1][::-1].copy())
    rows = list(rows_from_blocks(blocks, cols))
    return rows


def fma_rows(fmt, rng, cols=64):
    """Blocks where fma(x, id, c) and x*id + c truncate differently (Q4_0 / Q5_0 / Q4_1)."""
    rows = []
    for amax in ((-7.0, -5.0, -3.3, -6.1) if fmt != "gguf_q5_0" else (-13.0, -11.0, -9.7, -14.2)):
        if fmt == "gguf_q4_1":
            lo_v, hi_v = F32(-0.3), F32(abs(amax))
            d = F32((hi_v - lo_v) / F32(15))
            idv = F32(F32(1) / d)
        else:
            nq = -8 if fmt == "gguf_q4_0" else -16
            d = F32(F32(amax) / F32(nq))
            idv = F32(F32(1) / d)
        found = []
        tries = 0
        while len(found) < 31 and tries < 200000:
            tries += 1
            if fmt == "gguf_q4_1":
                k = rng.integers(0, 15)
                xv = F32(lo_v + (k + 0.5) * d * (1 + rng.uniform(-3e-7, 3e-7)))
                t = F32(xv - lo_v)
                a = np.trunc(F32(F32(t * idv) + F32(0.5)))
                b = np.trunc(fma_f32(t, idv, F32(0.5)))
                ok = lo_v <= xv <= hi_v
            else:
                c = F32(8.5) if fmt == "gguf_q4_0" else F32(16.5)
                k = rng.integers(-abs(nq), abs(nq))
                xv = F32((k + 0.5) * d * (1 + rng.uniform(-3e-7, 3e-7)))
                a = np.trunc(F32(F32(xv * idv) + c))
                b = np.trunc(fma_f32(xv, idv, c))
                ok = abs(xv) < abs(amax)
            if ok and a != b:
                found.append(xv)
        blk = np.zeros(32, F32)
        if fmt == "gguf_q4_1":
            blk[0], blk[1] = hi_v, lo_v
            fill = found[:30]
            blk[2:2 + len(fill)] = fill
            blk[2 + len(fill):] = lo_v
        else:
            blk[0] = amax
            blk[1:1 + len(found)] = found
        rows.append(blk)
    return [np.concatenate(rows[i:i + 2]) for i in range(0, len(rows), 2)]


def gen_gguf():
    for fi, (fmt, qt) in enumerate(GG):
        rng = np.random.default_rng(5000 + fi)
        src = f"{V_GG} gguf.quants.quantize / gguf.quants.dequantize (GGMLQuantizationType.{qt.name})"
        inputs = {"randn": randn_rows(rng, 16, 128, -3, 3)}
        rows = generic_special_rows(rng, 64)
        # small d: fp16(d) subnormal and fp16(d) == 0 (quantizer used the float32 d)
        rows.append((rng.uniform(-1, 1, 64) * 3e-6).astype(F32))
        rows.append((rng.uniform(-1, 1, 64) * 1e-9).astype(F32))
        rows += gguf_tie_rows(fmt, rng)
        if fmt == "gguf_mxfp4":  # log2f of amax just below / at powers of two
            for k in (-20, -3, 0, 1, 4, 17):
                x = rng.uniform(-1, 1, 64) * 2.0 ** k
                x[0] = nextafter(2.0 ** k, 0)
                x[32] = -nextafter(nextafter(2.0 ** k, 0), 0)
                x[40] = 2.0 ** (k - 1)
                rows.append(x.astype(F32))
        inputs["special"] = np.stack(rows).astype(F32)
        if fmt in ("gguf_q4_0", "gguf_q5_0", "gguf_q4_1"):
            inputs["fma_sensitive"] = np.stack(fma_rows(fmt, rng)).astype(F32)
        for kind, x in inputs.items():
            raw = gq.quantize(x, qt)
            vals = gq.dequantize(raw, qt).astype(F32).reshape(x.shape)
            codes, scales = gguf_decode(fmt, raw, x.shape[0], x.shape[1])
            note = None
            compare = "exact"
            if kind == "fma_sensitive":
                note = ("Inputs chosen so that fma(x, id, 8.5|16.5|0.5) and the separately rounded "
                        "x*id + c truncate to different codes; gguf-py 0.19.0 (numpy, float32) rounds "
                        "the product and the sum separately (no FMA).")
                # ggml-base (llama-quantize's ggml_quantize_chunk, compiled without FMA flags)
                # rounds them apart too, and so does QuantLab: these cases are exact.
                note += (" ggml_quantize_chunk (ggml-base, no FMA flags) does the same, and so does "
                         "QuantLab (FORMATS.md).")
            add_case(f"{fmt}_{kind}", fmt, src, x, vals, codes, scales, raw, compare=compare,
                     code_dtype="i1" if fmt == "gguf_q8_0" else "u1", note=note)


# ----------------------------------------------------------------------------- modelopt MXFP4 (informational)
def gen_modelopt_mxfp4():
    rng = np.random.default_rng(6000)
    x = np.concatenate([randn_rows(rng, 4, 64, -2, 2), np.stack(generic_special_rows(rng, 64))])
    grid_rows = []
    b = np.array([6.0] + E2M1_MIDS + [-m for m in E2M1_MIDS] + E2M1_GRID + [-g for g in E2M1_GRID] + [0.0, -0.0], F32)
    grid_rows.append(np.concatenate([b[:32], b[:32] * 4]))
    x = np.concatenate([x, np.stack(grid_rows)]).astype(F32)
    xt = torch.from_numpy(x)
    q, e8 = MXFP4QTensor.quantize(xt.clone(), 32)
    vals = q.dequantize(torch.float32, scale=e8, block_sizes={-1: 32}).numpy().reshape(x.shape)
    packed = q._quantized_data.numpy().astype(np.uint8).reshape(x.shape[0], -1)
    codes = np.empty(x.shape, np.uint8)
    codes[:, 0::2] = packed & 0x0F
    codes[:, 1::2] = packed >> 4
    e8 = e8.numpy().astype(np.int32).reshape(x.shape[0], -1)
    scales = np.ldexp(np.ones(e8.shape), e8 - 127).astype(F32)
    add_case("mxfp4_modelopt_export", "mxfp4", f"{V_MO} modelopt.torch.quantization.qtensor."
             f"mxfp4_tensor.MXFP4QTensor.quantize(block_size=32) + dequantize", x, vals, codes,
             scales, packed, options={"mx_scale": "rceil"}, compare="informational",
             note=("Model Optimizer's own MXFP4 export: scale 2^ceil(log2(amax/6)) from float32 "
                   "log2, elements rounded with 'count of bounds strictly below |x|' (ties toward "
                   "the smaller magnitude, not RNE), sign from torch.sign so 0.0 gets code 8. "
                   "Differs from torchao RCEIL on ties and zero codes."))


# ----------------------------------------------------------------------------- tables
def gen_tables():
    nf4 = bnbF.get_4bit_type("nf4", device="cpu").numpy().astype(F32)
    from bitsandbytes.backends.utils import _NF4_QUANT_TABLE

    assert np.array_equal(nf4, _NF4_QUANT_TABLE.numpy().astype(F32))
    dmap = bnbF.create_dynamic_map(signed=True).numpy().astype(F32)
    tables = {
        "generator": "scripts/golden/make_golden.py",
        "versions": VERSIONS,
        "nf4_codebook": {
            "source": f"{V_BNB} bitsandbytes.backends.utils._NF4_QUANT_TABLE "
                      f"(== functional.get_4bit_type('nf4'))",
            "hex": [f32hex(v) for v in nf4],
            "decimal": [repr(float(v)) for v in nf4],
            "quantize_bounds_hex": [f32hex(v) for v in ((torch.from_numpy(nf4[:-1]) +
                                                        torch.from_numpy(nf4[1:])) / 2).numpy()],
            "quantize_rule": ("default backend: scaled = clamp(x * (1/max(absmax, 1e-38)), -1, 1) for "
                              "full 64-blocks, clamp(x / max(absmax_tail, 1e-38), -1, 1) for the tail "
                              "block; code = torch.bucketize(scaled, bounds, right=False) with "
                              "bounds[i] = (c[i] + c[i+1]) / 2 in float32, i.e. a value equal to a "
                              "bound gets the LOWER index."),
        },
        "dynamic_map_signed": {
            "source": f"{V_BNB} bitsandbytes.functional.create_dynamic_map(signed=True)",
            "hex": [f32hex(v) for v in dmap],
            "zero_index": int(np.where(dmap == 0)[0][0]),
        },
        "double_quant": {
            "offset": ("offset = absmax.mean() on the float32 per-64-block absmax tensor (torch CPU): "
                       "float32 sum by ATen's cascade/vectorized inner sum (8-lane float vectors, 4-way "
                       "ILP, cascade levels of >= 16), then divided by n in float32 (no float64). A Python "
                       "model of that order reproduced torch's sum and mean bit-exactly for 137 sizes in "
                       "1..10000 here; ATEN_CPU_CAPABILITY=avx512/avx2/default gave identical results."),
            "quantize": ("(absmax - offset) in blocks of 256 with create_dynamic_map(signed=True); "
                         "per-256-block absmax (a 1-element last block is allowed). CPU public API uses the "
                         "native cquantize_blockwise_cpu_fp32, which is NOT always nearest (observed: 0.0 "
                         "-> code 131 = 2.125e-05; 3 of 257 codes in nf4_dq_big differ from nearest); "
                         "default backend: clamp(x * (1/max(absmax,1e-38)), -1, 1) and "
                         "bucketize on float32 midpoints (nearest, exact midpoint -> lower index)."),
            "dequantize": "absmax_rec = float32(dmap[q] * absmax256) + offset (two roundings)",
        },
    }
    with open(os.path.join(OUT, "tables.json"), "w") as f:
        json.dump(tables, f, indent=1)
        f.write("\n")


def main():
    os.makedirs(OUT, exist_ok=True)
    for fn in os.listdir(OUT):
        if fn.endswith(".npy") or fn in ("manifest.json", "tables.json"):
            os.remove(os.path.join(OUT, fn))
    gen_mx()
    gen_nvfp4()
    gen_fp8()
    gen_nf4()
    gen_gguf()
    gen_modelopt_mxfp4()
    gen_tables()
    for c in CASES:
        for k in ("nested_offset",):
            if k in c:
                c[k] = float(c[k])
    manifest = {
        "generator": "scripts/golden/make_golden.py",
        "versions": VERSIONS,
        "conventions": (
            "values float32 = peer dequantization; codes uint8 (int8 for gguf_q8_0), one per element; "
            "scales float32 decoded (nvfp4: E4M3 weight_scale [rows, cols/16]; MX/gguf_mxfp4: "
            "2^(e8m0-127) per 32-block; fp8: [1] = amax/448 or amax/57344; gguf q8_0/q4_0/q5_0: fp16 d "
            "[rows, cols/32]; q4_1: [rows, cols/32, 2] = (d, m); nf4: absmax per 64-block of the "
            "flattened tensor, for double quant as reconstructed); packed uint8 as exported "
            "(nvfp4/mxfp4 [rows, cols/2] even element LOW nibble; gguf raw blocks [rows, cols/32*size]; "
            "nf4 bitsandbytes bytes flattened, even element HIGH nibble; fp8/mxfp8 the FP8 bytes). "
            "compare 'exact' = bit-for-bit; 'informational' = documented peer behaviour not adopted "
            "or peer variant. Signed zeros: peers differ (see notes in the report); compare +0/-0 "
            "bitwise only where the peer is consistent."),
        "cases": CASES,
    }
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    h = hashlib.sha256()
    for fn in sorted(os.listdir(OUT)):
        with open(os.path.join(OUT, fn), "rb") as f:
            h.update(fn.encode() + f.read())
    print(f"{len(CASES)} cases, {total} bytes in {OUT}, sha256 {h.hexdigest()[:16]}")


if __name__ == "__main__":
    sys.exit(main())
