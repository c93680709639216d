// SPDX-License-Identifier: GPL-3.0-or-later
// Per-layer statistics of weights and calibration activations, and how each number format fits
// them: the records `quantlab-cli stats`, the GUI's layer views and the project file share
// (docs/STATISTICS.md holds every definition), and the plain-pointer functions that compute them
// (defined in engine/stats/). Plain C++ types only (safe from ui/, app/ and projects/).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>


namespace ql {

// Equal-width bins over [lo, hi]: bin i covers [lo + i w, lo + (i + 1) w), w = (hi - lo) / bins,
// the last bin includes hi. Values outside [lo, hi] are not binned but counted in underflow /
// overflow. Counts are element counts (double so that any tensor size counts exactly).
struct HistogramData {
    double lo = 0, hi = 0;
    std::vector<double> counts;
    double underflow = 0, overflow = 0;  // added: values below lo / above hi
};

struct OutlierEntry {
    std::vector<int64_t> index;  // position: {row, col} of the [rows, cols] matrix
    double value = 0;            // the signed value
};

// Statistics of one float32 matrix [rows, cols] (a weight as [out, in * kh * kw]; activations as
// rows of features). NaN and Inf are counted and excluded from everything else.
struct TensorStatistics {
    int64_t numel = 0;
    double amax = 0;                // max |x| over finite values
    double mean = 0, std = 0;       // population std (divide by n)
    double kurtosis = 0;            // Pearson m4 / m2^2 (a Gaussian gives 3); 0 when m2 == 0
    double max_over_mean_abs = 0;   // amax / mean |x| (0 for an all-zero tensor)
    // (p, value) of |x| for p = 50, 90, 99, 99.9, 99.99 (percent); linear interpolation between
    // order statistics (numpy's default). Exact unless one cell of the search (256 per octave)
    // holds more than 2^21 values; then within 2^-8 relative (docs/STATISTICS.md).
    std::vector<std::pair<double, double>> percentiles;
    // Signed values over the robust range [-R, R], R = min(amax, 2 * P99.99(|x|)) where P99.99 is
    // rounded up to its cell's upper edge; values beyond land in under/overflow. All-zero: [-1, 1].
    HistogramData histogram;
    // log2 |x| of non-zero finite values, 4 bins per octave (inner edges 2^(k/4) rounded up to 2^-8 octave),
    // hi = the quarter-octave edge above amax; smaller values count as underflow. lo, hi in log2 units.
    HistogramData abs_log_histogram;
    std::vector<double> channel_absmax;      // per row (weights: output channels), or per column
    std::vector<OutlierEntry> top_outliers;  // top-k by |value|, largest first; ties: lower flat index first
    int64_t nan_count = 0, inf_count = 0;
    int64_t zero_count = 0;                  // added: exact zeros (not in abs_log_histogram)
};

// One tensor under one format (its default weight settings, or a recipe's).
struct FormatFit {
    std::string format;            // FormatInfo name
    std::string settings;          // added: the quantizer as applied, e.g. "int4 group 128"
    std::string error;             // added: why the format does not apply to this tensor ("" = fits)
    // Elements whose value lies beyond the largest representable value of their block / channel /
    // tensor (in its direction) by more than float rounding of the scale (relative 2^-20).
    double clipped_fraction = 0;
    double weight_mse = 0;         // mean (W - Q(W))^2 over finite elements
    double weight_sqnr_db = 0;     // 10 log10(sum W^2 / sum (W - Q(W))^2); +inf when exact
    // y = x W^T + b with calibration rows x; 10 log10(sum y^2 / sum (y - x Q(W)^T - b)^2) as
    // engine/ptq/ptq_pipeline.h defines it. NaN without activations.
    double output_sqnr_db = 0;
    // added: the same with the inputs quantized too (the recipe's input quantizer for the chosen
    // format; the format's default input settings with the samples' own amax for the others).
    double wa_output_sqnr_db = 0;
    double input_clipped_fraction = 0;  // added: clipped_fraction of the activation samples (NaN without)
    std::string scale_kind;        // "e4m3", "ue5m3", "e8m0", "fp32", "fp16" (GGUF), "none"
    // Decoded scale per block / group / channel as stored (NVFP4: the E4M3 block scales without the
    // global scale; MX: 2^e; INT: FP32 steps; NF4: absmax; FP8: amax / 448). At most 2^20 values:
    // larger tensors keep every block_scale_stride-th block.
    std::vector<double> block_scales;
    int64_t block_scale_stride = 1;  // added
    int64_t block_count = 0;         // added: scales the tensor has in all
    double global_scale = 1;         // added: NVFP4's per-tensor g (weight_scale_2); 1 otherwise
    HistogramData scale_histogram;   // log2 of every positive block scale (all blocks, not sampled)
    // Representable values of the block / channel with the largest scale (= the tensor-level grid
    // for per-tensor formats), ascending; empty for fp32 / bf16 / fp16.
    std::vector<double> grid;
    double clip_threshold = 0;     // largest representable magnitude at tensor level (max |grid|)
};

// LLM.int8()'s mixed-precision decomposition on a layer's sampled inputs (bitsandbytes' rule,
// kernels/llm_int8.h: a feature column goes to FP16 in a call when any token of the call has
// |FP16(x)| >= threshold there). Two ends of how calls are batched: all sampled tokens as one call
// (prefill of one long batch) and one token per call (decoding).
struct LlmInt8Decomposition {
    double threshold = 0;                    // 0: not measured (no activations)
    int64_t tokens = 0;                      // sampled input rows used
    std::vector<int64_t> columns;            // features >= threshold in any sampled token, ascending
    std::vector<double> column_token_share;  // per entry of `columns`: share of tokens >= threshold there
    double batch_flop_share = 0;             // columns.size() / features: FP16 share of the matmul, one call
    double token_flop_share = 0;             // mean over tokens of (features >= threshold) / features
};

struct LayerStatistics {
    std::string layer, kind;        // HF module name; "linear" | "conv2d"
    std::vector<int64_t> weight_shape;
    TensorStatistics weight, activation;
    bool has_activation = false;
    int64_t activation_rows = 0;    // added: sampled input rows the activation statistics use
    std::string chosen_format;      // the recipe's / checkpoint's weight format ("" when none)
    double input_amax = 0;          // added: calibrated static input amax (checkpoint), 0 = none
    double input_clipped_fraction = 0;  // added: sampled inputs with |x| above input_amax
    std::vector<FormatFit> fits;    // chosen format first, then every other requested format
    std::vector<float> first_block;  // the first block of weights (chosen format's block, else 16)
    LlmInt8Decomposition llm_int8;   // added: with activations
};

struct LayerStatsRequest {
    std::string model;        // HF folder, "demo", a QuantLab quantized checkpoint or a GGUF file
    // added: an FP model of the same architecture and shapes (e.g. the HF folder a GGUF file was
    // made from): the chosen fit of a GGUF file then measures the file's weights against it
    // (weight and output error), and the other formats fit its weights. "" = none.
    std::string reference;
    std::string recipe;       // optional: preset or recipe file (chosen formats); not with a checkpoint
    std::string calibration;  // optional: data for the activation statistics ("" = weights only)
    std::vector<std::string> formats;  // empty = fp8_e4m3, nvfp4, mxfp4, mxfp6_e2m3, mxfp8_e4m3, int8, int4, nf4
    std::vector<std::string> layers;   // empty = every Linear / Conv2d layer
    int64_t samples = 32;     // calibration examples
    int64_t sequence_length = 0;  // added: tokens per example (0 = the data's default)
    uint64_t seed = 0;
    int top_k = 16;
    int bins = 128;
    int64_t sample_rows = 2048;  // added: input rows per layer kept for activation statistics
    // added: overlays on the recipe as `quantlab-cli ptq` has them (--kv-cache, --rotate); a
    // rotation is applied before anything is measured, a KV format adds kind "kv_cache" records.
    std::string kv_cache, rotate;
    bool kv_per_head = true;     // added: one KV-cache record per KV head besides the whole cache
    // added: where the model and the calibration forward run (cpu | cuda | cuda:N); the
    // per-layer statistics are computed in host memory.
    std::string device = "cpu";
};

struct LayerStatsReport {
    std::string model_path;
    std::vector<std::string> formats;  // the formats measured (request order or the standard set)
    std::vector<LayerStatistics> layers;
    double seconds = 0;
};

// The statistics of one row-major float32 matrix [rows, cols] (data: rows * cols values, not
// owned). channel_absmax is per row, or per column with channels_in_columns. Uses the OpenMP
// threads (kernels/parallel.h). UserError for negative sizes, top_k < 0 or bins < 1.
TensorStatistics tensor_statistics(const float* data, int64_t rows, int64_t cols, int top_k = 16, int bins = 128,
                                   bool channels_in_columns = false);

// W [rows, cols] (row-major, out x in) under `format` with its default weight settings (INT8 per
// channel, INT4/3/2 groups of 128 where they divide cols else per channel, FP8 per tensor, the
// block formats' fixed blocks). x [x_rows, cols] (may be null) gives the output SQNR; bias [rows]
// may be null. A format that does not apply returns a fit with `error` set (no exception).
FormatFit format_fit(const float* w, int64_t rows, int64_t cols, const std::string& format, const float* x_or_null,
                     int64_t x_rows, const float* bias_or_null = nullptr, int bins = 128);

// The standard format set measured when a request names none.
std::vector<std::string> default_stats_formats();

}  // namespace ql
