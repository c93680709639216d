// SPDX-License-Identifier: GPL-3.0-or-later
// LLM.int8() (Dettmers et al. 2022) as bitsandbytes 0.50 computes it (its default / CPU backend:
// bitsandbytes/backends/default/ops.py int8_vectorwise_quant, _ops.py int8_vectorwise_dequant):
// vector-wise INT8 along the rows of a [rows, cols] buffer -- one absmax scale per row (a
// weight's output channel, an activation's token) -- and, for activations, the sparse
// decomposition: every column holding an element with |x| >= threshold (6.0) anywhere in the
// buffer is kept in the input's precision; the rest is quantized.
//   a = FP16(x);  outlier(i, j) = |a_ij| >= threshold;  column j is an outlier column when any
//   row has outlier(i, j);  r_i = max |a_ij| over the row's non-outlier elements (elements of an
//   outlier column below the threshold count);  code_ij = RNE(a_ij * ((1 / r_i) * 127)) (float32,
//   torch's 127.0 / r) for
//   the non-outlier columns, 0 in the outlier columns;  value_ij = (code_ij * r_i) * float(1/127),
//   x_ij itself in the outlier columns.
// Weights (threshold 0: no decomposition) are the same with every column quantized. A row whose
// r is 0 has codes 0 (bitsandbytes computes 0 * Inf there). Differences on purpose (QuantLab's
// rule for every format): r ignores NaN and +-Inf (bitsandbytes' max propagates them); a NaN
// element stays NaN; +-Inf is >= any threshold, so with a threshold its column is kept as is, and
// without one it saturates to +-127 * r / 127.
#pragma once

#include <cstdint>

namespace ql::kernels {

constexpr float kLlmInt8Threshold = 6.0f;  // bitsandbytes' llm_int8_threshold default

// The columns kept unquantized: outlier_columns (cols flags) gets 1 for each column holding an
// element whose FP16 value has |a| >= threshold (none when threshold <= 0). Returns their count.
int64_t llm_int8_outlier_columns(const float* x, int64_t rows, int64_t cols, float threshold, uint8_t* outlier_columns);

// Per column, how many rows have |FP16(x)| >= threshold (counts: cols entries). The Layer
// Inspector's account of the decomposition (engine/stats).
void llm_int8_outlier_counts(const float* x, int64_t rows, int64_t cols, float threshold, int64_t* counts);

// y = fake quantization with the decomposition at `threshold` (<= 0: none, the weights' case);
// y may equal x.
void llm_int8_fake_quant(const float* x, float* y, int64_t rows, int64_t cols, float threshold);

// codes: rows*cols int8 (0 in the outlier columns); row_absmax: rows floats (bitsandbytes'
// row_stats / SCB: the absmax of the row's quantized FP16 values); outlier_columns: cols flags.
void llm_int8_encode(const float* x, int64_t rows, int64_t cols, float threshold, int8_t* codes, float* row_absmax,
                     uint8_t* outlier_columns);

// y_ij = (code_ij * r_i) * float(1/127) for every element (bitsandbytes' int8_vectorwise_dequant);
// the caller writes the outlier columns' kept values over it.
void llm_int8_decode(const int8_t* codes, const float* row_absmax, int64_t rows, int64_t cols, float* y);

}  // namespace ql::kernels
