// SPDX-License-Identifier: GPL-3.0-or-later
// The amax of a per-tensor activation quantizer from an ActivationHistogram: max, percentile,
// MSE or entropy (KL divergence) calibration, as NVIDIA Model Optimizer's
// HistogramCalibrator.compute_amax (modelopt/torch/quantization/calib/histogram.py:
// _compute_amax_percentile, _compute_amax_mse, _compute_amax_entropy) computes them; the
// entropy method is TensorRT's ("8-bit Inference with TensorRT", Migacz, GTC 2017).
//
// What each method returns (edges / counts are the histogram's bin_edges() / counts()):
// - Max: the running max |x| (Model Optimizer's MaxCalibrator).
// - Percentile: edges[i] for the first bin i whose cumulative fraction (float64 cumulative sum
//   of count / total, in bin order) reaches percentile / 100 -- the LEFT edge of that bin, as
//   Model Optimizer returns it.
// - Mse: bin centres c_i = (edges[i] + edges[i+1]) / 2 (float32); candidates c_k for
//   k = start_bin, start_bin + stride, ... < number of centres; error(k) = mean over bins of
//   count_i * (Q_k(c_i) - c_i)^2 where Q_k is OUR fake quantization of the centres (a 1-D
//   float32 tensor of all centres) with QuantSpec::fixed_amax = c_k. Returns the first c_k with
//   the smallest error. Model Optimizer uses its own int fake quant (x * (qmax / amax), rounded,
//   / scale) or scaled_e4m3; ours agrees to rounding.
//   Block formats (NVFP4) see the sorted centres in blocks of 16: the candidate amax only sets
//   the global scale, so the error measures the E4M3 block-scale rounding and clipping that it
//   controls.
// - Entropy: for i = start_bin .. num_bins step stride, the first i bins are merged into
//   `levels` quantization bins (the counts beyond i are added to bin i - 1 of the reference), and
//   the KL divergence between the reference and the expanded merged distribution is computed
//   (scipy.stats.entropy, with numpy's pairwise summation); returns edges[i] of the LAST i with
//   the smallest divergence (bin 0's count is replaced by bin 1's first, as Model Optimizer does,
//   so that a spike of zeros does not dominate). levels = 2^(bits-1) for signed integers
//   (128 for int8), 2^bits when unsigned_values; for FP8 the number of non-negative finite
//   values of the element format (E4M3: 127, E5M2: 124) -- the merge into equal-width bins is
//   still TensorRT's int8 model, so for FP8 this is an approximation (Model Optimizer supports
//   entropy for integer quantizers only).
//
// Formats: Max and Percentile do not depend on the format. Mse needs a quantizer whose scale an
// amax sets: int or fp8 at tensor granularity, or nvfp4 (its global scale). Entropy needs int
// or fp8 at tensor granularity. Other formats (MX, NF4, GGUF: dynamic block scales, nothing to
// calibrate) are a UserError, as are an empty histogram, a percentile outside [0, 100] and
// fewer than start_bin + 1 bins for Mse / Entropy.
#pragma once

#include <cstdint>
#include <string>

#include "engine/calib/activation_histogram.h"
#include "engine/formats/format_codec.h"

namespace ql {

enum class AmaxMethod { Max, Percentile, Mse, Entropy };

struct AmaxCalibration {
    AmaxMethod method = AmaxMethod::Max;
    double percentile = 99.99;   // Percentile: in [0, 100]; Model Optimizer's default
    int64_t start_bin = 128;     // Mse / Entropy: first candidate bin (Model Optimizer's default)
    int64_t stride = 1;          // Mse / Entropy: candidate step in bins (Model Optimizer's default)
    // Mse / Entropy with an int format: the values are non-negative and quantized onto
    // [0, amax] with 2^bits - 1 steps (Model Optimizer's unsigned=True, e.g. after a ReLU).
    bool unsigned_values = false;
};

// The calibrated amax (>= 0, a float32 value widened to double) for a per-tensor activation
// quantizer described by `spec` (its format and bits; fixed_amax is ignored).
double calibrate_amax(const ActivationHistogram& h, const AmaxCalibration& c, const QuantSpec& spec);

// "max" | "percentile" | "mse" | "entropy"; UserError naming the choices otherwise.
AmaxMethod parse_amax_method(const std::string& name);
std::string amax_method_name(AmaxMethod method);

}  // namespace ql
