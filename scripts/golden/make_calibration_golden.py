#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Golden activation-calibration results from NVIDIA Model Optimizer.

Writes tests/data/golden/calib/{gaussian,heavy_tailed,relu}.npy (3 fixed batches of 4096
float32, fixed seed) and tests/data/golden/calib/calibration.json: for several sequences of
those batches, the histogram Model Optimizer's HistogramCalibrator collects (run-length counts
and every 64th float32 bin edge), MaxCalibrator's amax, and the amax compute_amax returns for
percentile (99.9, 99.99), mse and entropy (entropy only up to 4096 bins: Model Optimizer's
search is an O(bins^2) Python loop). "mse" is computed with a Model Optimizer argument-order bug
worked around; "mse_as_released" is what 0.47 returns (see mse_amax below).
tests/engine/activation_calibration_golden_test.cpp feeds the same batches to
ql::ActivationHistogram / ql::calibrate_amax and compares.

Peers (see scripts/golden/requirements.txt): nvidia-modelopt 0.47.0 on torch 2.15.0 (CPU)
  modelopt.torch.quantization.calib.HistogramCalibrator(num_bits=8, axis=None,
      unsigned=..., num_bins=2048, skip_zeros=..., torch_hist=True)  .collect / .compute_amax
  modelopt.torch.quantization.calib.MaxCalibrator(num_bits=8, axis=None)  .collect / .compute_amax
No peer code is copied; this script only builds the inputs and records the outputs.

Run:  /work/peers-venv/bin/python scripts/golden/make_calibration_golden.py   (repository root)
"""

import json
import os
import platform
import warnings

import numpy as np

warnings.filterwarnings("ignore")

import torch  # noqa: E402

# One thread: Model Optimizer's MSE search averages in float32, and the reduction order (thread
# count) can move its argmin by one bin where the error curve is flat.
torch.set_num_threads(1)

import modelopt  # noqa: E402
import modelopt.torch.quantization.calib.histogram as mo_histogram  # noqa: E402
from modelopt.torch.quantization.calib import HistogramCalibrator, MaxCalibrator  # noqa: E402

# Model Optimizer 0.47's _compute_amax_mse calls fake_tensor_quant(centers, amax, num_bits,
# unsigned), but the function's signature is (inputs, amax, bias=None, num_bits=8, unsigned=False,
# ...): num_bits lands in `bias` and `unsigned` in num_bits, so every candidate's "error" is
# meaningless and the search returns the first candidate (bin 128's centre). We record that
# as-released result ("mse_as_released", informational) and the intended one ("mse"): the same
# Model Optimizer function run with the arguments passed by keyword.
_FAKE_TENSOR_QUANT = mo_histogram.fake_tensor_quant


def _fake_tensor_quant_by_keyword(inputs, amax, num_bits, unsigned):
    return _FAKE_TENSOR_QUANT(inputs, amax, None, num_bits, unsigned)


def mse_amax(cal, fixed):
    mo_histogram.fake_tensor_quant = _fake_tensor_quant_by_keyword if fixed else _FAKE_TENSOR_QUANT
    try:
        return cal.compute_amax("mse").item()
    finally:
        mo_histogram.fake_tensor_quant = _FAKE_TENSOR_QUANT


REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(REPO, "tests", "data", "golden", "calib")
N = 4096
ENTROPY_MAX_BINS = 4096


def make_batches():
    rng = np.random.default_rng(20240611)
    gaussian = rng.standard_normal(N).astype(np.float32)
    # Student-t (3 degrees of freedom) plus 8 injected outliers of magnitude 40-80: the range
    # grows far past the gaussian batch, so the calibrator re-bins.
    heavy = rng.standard_t(3, N).astype(np.float32)
    idx = rng.choice(N, 8, replace=False)
    heavy[idx] = (rng.uniform(40, 80, 8) * rng.choice([-1, 1], 8)).astype(np.float32)
    # ReLU-like: non-negative with ~40 % exact zeros.
    relu = np.maximum(rng.standard_normal(N) * 1.5 + 0.4, 0).astype(np.float32)
    return {"gaussian": gaussian, "heavy_tailed": heavy, "relu": relu}


def run_length(counts):
    # Counts in bin order; a negative entry -k stands for k consecutive empty bins.
    out, zeros = [], 0
    for c in counts:
        if c == 0:
            zeros += 1
            continue
        if zeros:
            out.append(-zeros)
            zeros = 0
        out.append(int(c))
    if zeros:
        out.append(-zeros)
    return out


def f32(v):
    # float32 value as a JSON number that round-trips (repr of the float32 widened to double).
    return float(np.float32(v))


# (name, batch sequence, skip_zeros, also unsigned)
CASES = [
    ("gaussian", ["gaussian"], False, False),
    ("heavy_tailed", ["heavy_tailed"], False, False),
    ("relu", ["relu"], False, True),
    ("relu_skip_zeros", ["relu"], True, True),
    # Range grows (re-binning) on the second batch, third stays inside.
    ("sequence", ["gaussian", "heavy_tailed", "relu"], False, False),
    # Range grows moderately (gaussian ~4 -> relu ~6: entropy is still feasible in Python).
    ("gaussian_then_relu", ["gaussian", "relu"], False, False),
]


def run_case(batches, seq, skip_zeros, unsigned):
    cal = HistogramCalibrator(num_bits=8, axis=None, unsigned=unsigned, num_bins=2048,
                              skip_zeros=skip_zeros, torch_hist=True)
    mx = MaxCalibrator(num_bits=8, axis=None, unsigned=unsigned)
    for name in seq:
        x = torch.from_numpy(batches[name].copy())
        cal.collect(x)
        mx.collect(x)
    counts = cal._calib_hist.int().cpu().numpy()
    edges = cal._calib_bin_edges.cpu().numpy()
    res = {
        "num_bins": int(counts.shape[0]),
        "counts_rle": run_length(counts),
        "num_edges": int(edges.shape[0]),
        "edges_sample": [[i, f32(edges[i])] for i in sorted(set(list(range(0, edges.shape[0], 64)) +
                                                             [1, 128, 129, edges.shape[0] - 1]))],
        "amax_max": f32(mx.compute_amax().item()),
        "percentile_99_9": f32(cal.compute_amax("percentile", percentile=99.9).item()),
        "percentile_99_99": f32(cal.compute_amax("percentile", percentile=99.99).item()),
        "mse": f32(mse_amax(cal, True)),
        "mse_as_released": f32(mse_amax(cal, False)),
    }
    # Model Optimizer's entropy search is a Python loop, O(num_bins^2): only for histograms
    # that were not re-binned far beyond 2048 bins.
    if counts.shape[0] <= ENTROPY_MAX_BINS:
        res["entropy"] = f32(cal.compute_amax("entropy").item())
    return res


def main():
    os.makedirs(OUT, exist_ok=True)
    batches = make_batches()
    for name, arr in batches.items():
        np.save(os.path.join(OUT, name + ".npy"), arr)
    cases = []
    for name, seq, skip_zeros, also_unsigned in CASES:
        case = {"name": name, "batches": seq, "skip_zeros": skip_zeros, "unsigned": False}
        case.update(run_case(batches, seq, skip_zeros, False))
        cases.append(case)
        print(name, case["num_bins"], case["num_edges"], case["amax_max"], case["mse"], case.get("entropy"), flush=True)
        if also_unsigned:
            u = {"name": name + "_unsigned", "batches": seq, "skip_zeros": skip_zeros, "unsigned": True}
            u.update(run_case(batches, seq, skip_zeros, True))
            cases.append(u)
    doc = {
        "generator": "scripts/golden/make_calibration_golden.py",
        "source": "modelopt.torch.quantization.calib.HistogramCalibrator(num_bits=8, num_bins=2048, "
                  "torch_hist=True).collect + compute_amax(method, stride=1, start_bin=128); MaxCalibrator",
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "torch": torch.__version__,
            "nvidia-modelopt": modelopt.__version__,
        },
        "num_bits": 8,
        "cases": cases,
    }
    with open(os.path.join(OUT, "calibration.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
