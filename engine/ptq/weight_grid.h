// SPDX-License-Identifier: GPL-3.0-or-later
// The quantization grid of one weight [out, in] in one format, with every scale FIXED from a
// reference weight. GPTQ (engine/ptq/gptq.h) changes the weight column by column and must round
// each updated column onto the grid the original weight defines, as Model Optimizer's GPTQ does
// with the static per-block amax it calibrated before the update
// (modelopt/torch/quantization/utils/calib_utils.py, gptq_blockwise_update_fused_scalar) and as
// the GPTQ reference does with `static_groups` (IST-DASLab/gptq, gptq.py).
//
// The scales are those fake_quantize(reference, spec) computes (shared/design/FORMATS.md), and
// the elements are rounded by the kernels' own element functions (kernels/integer_step.h,
// scaled_fp8_element.h, nvfp4_block.h, mx_element.h, nf4_rounding.h), so
//     WeightGrid(w, spec).quantize(w) == fake_quantize(w, spec)   bit for bit.
// Values beyond the reference's range saturate as the format does (int: +-qmax steps, FP:
// max finite element, NF4: +-1 times absmax).
//
// Supported: every format except GGUF (its block scales are recomputed from the data in ways
// that have no fixed-scale form here) and NF4 double quantization (UserError for both).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "engine/formats/format_codec.h"
#include "kernels/integer_step.h"
#include "kernels/mx.h"
#include "kernels/mx_element.h"
#include "kernels/nf4_rounding.h"
#include "kernels/scaled_fp8.h"

namespace ql {

class WeightGrid {
public:
    // reference_weight: [out, in], any floating dtype (read as float32; not kept). spec: as
    // resolve_spec gives it for that shape (blocks and groups along `in`; channel axis 0 or 1;
    // NF4 blocks over the flattened weight, so they stay inside rows when `in` is a multiple of
    // the block). QuantSpec.fixed_amax is honoured exactly where fake_quantize honours it (a
    // per-tensor scale: FP8/INT per tensor, the NVFP4 global scale). Throws UserError for a
    // weight that is not 2-D floating point and for unsupported formats.
    WeightGrid(const at::Tensor& reference_weight, const QuantSpec& spec);

    // Fake-quantizes columns [first_col, first_col + cols.size(1)) of the weight given their
    // current values cols [out, k] (any floating dtype, any strides), with the reference's
    // scales. Returns [out, k] float32. UserError when the columns do not fit the weight.
    at::Tensor quantize_columns(const at::Tensor& cols, int64_t first_col) const;
    at::Tensor quantize(const at::Tensor& w) const { return quantize_columns(w, 0); }

    // The fast path GPTQ uses: rows [row_begin, row_end) of column `col`, read from x and
    // written to y (both contiguous over rows: x[i] is row row_begin + i). y may equal x.
    void quantize_column(const float* x, float* y, int64_t col, int64_t row_begin, int64_t row_end) const;

    int64_t rows() const { return rows_; }
    int64_t cols() const { return cols_; }
    const QuantSpec& spec() const { return spec_; }

private:
    enum class Kind { Identity, Bf16, Fp16, Int, Fp8, Nvfp4, Mx, Nf4 };

    // Which scale cell element (r, c) uses. Row-blocked layouts (everything but NF4 blocks that
    // cross rows) store cells column-block-major, so one column's cells are contiguous:
    //     cell = (c / col_block) * cell_rows + (cell_rows == 1 ? 0 : r).
    // Flat NF4 blocks: cell = (r * cols + c) / flat_block.
    struct Cells {
        int64_t col_block = 1;   // columns sharing a cell along a row
        int64_t cell_rows = 1;   // 1: every row shares the column's cell; else == rows
        int64_t flat_block = 0;  // > 0: flat blocks over the row-major weight (NF4 only)
        int64_t cols = 0;
    };

    // y[r * ys + (c - c0) * yc] = quantized x[same], for r in [r0, r1), c in [c0, c1).
    void run(const float* x, float* y, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t row_stride,
             int64_t col_stride) const;
    template <class Elem, class Cell>
    void run_with(const Elem& e, const Cell* table, const float* x, float* y, int64_t r0, int64_t r1, int64_t c0,
                  int64_t c1, int64_t row_stride, int64_t col_stride) const;

    void build_int(const float* w);
    void build_fp8(const float* w);
    void build_nvfp4(const float* w);
    void build_mx(const float* w);
    void build_nf4(const float* w);

    QuantSpec spec_;
    Kind kind_ = Kind::Identity;
    int64_t rows_ = 0, cols_ = 0;
    Cells cells_;
    std::vector<kernels::IntStep> int_steps_;      // Int
    std::vector<float> scales_;                    // Fp8: scale; Nvfp4: denominator float(s8) * g
    kernels::Fp8Kind fp8_kind_ = kernels::Fp8Kind::E4M3;
    std::vector<kernels::MxBlockScale> mx_scales_;  // Mx
    kernels::MxElement mx_element_ = kernels::MxElement::E2M1;
    std::vector<kernels::BlockwiseScale> nf4_scales_;  // Nf4
};

}  // namespace ql
