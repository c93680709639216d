// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/ptq/weight_grid.h"

#include <ATen/ops/empty.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/core/errors.h"
#include "engine/formats/tensor_values.h"
#include "kernels/channel_reduce.h"
#include "kernels/half_precision.h"
#include "kernels/magnitude_bits.h"
#include "kernels/nf4.h"
#include "kernels/nvfp4.h"
#include "kernels/nvfp4_block.h"
#include "kernels/scaled_fp8_element.h"

namespace ql {
namespace {

using namespace ql::kernels;

// Reads any floating tensor as contiguous float32 in host memory (FORMATS.md "Shapes":
// non-contiguous inputs are made contiguous first). The grid is scalar host code: a CUDA tensor
// is copied to the CPU, and quantize_columns returns its result on the input's device.
at::Tensor as_float(const at::Tensor& t, const char* what) {
    if (!t.defined() || !t.is_floating_point())
        throw UserError(std::string(what) + " must be a floating-point tensor");
    return t.to(at::kCPU, at::kFloat).contiguous();
}

// ---- Element functors: x and its cell's fixed scale -> the fake-quantized value -------------
struct IntElem {
    float operator()(float x, const IntStep& s) const { return s.fake(x); }
};
template <class F>
struct Fp8Elem {
    float operator()(float x, float scale) const { return fp8_fake_element<F>(x, scale); }
};
struct Nvfp4Elem {
    float operator()(float x, float d) const { return nvfp4_fake_element(x, d); }
};
template <class El>
struct MxElem {
    float operator()(float x, const MxBlockScale& k) const { return mx_fake_element<El>(x, k); }
};
struct Nf4Elem {
    float thresholds[15];
    float codebook[16];
    Nf4Elem() {
        std::copy(nf4_thresholds(), nf4_thresholds() + 15, thresholds);
        std::copy(kNf4Codebook, kNf4Codebook + 16, codebook);
    }
    float operator()(float x, const BlockwiseScale& k) const { return nf4_fake_element(x, k, thresholds, codebook); }
};

}  // namespace

WeightGrid::WeightGrid(const at::Tensor& reference_weight, const QuantSpec& spec) : spec_(spec) {
    if (spec.info == nullptr) throw UserError("weight grid: no format given");
    const std::string& fam = spec.info->family;
    const std::string& name = spec.info->name;
    if (!reference_weight.defined() || reference_weight.dim() != 2)
        throw UserError("weight grid for " + name + ": the weight must be 2-D [out, in], got shape " +
                        (reference_weight.defined() ? shape_text(reference_weight) : std::string("(none)")));
    if (fam == "gguf")
        throw UserError("GPTQ does not support " + name +
                        ": GGUF block scales are refitted to the data of each block (use int4/int8 groups, "
                        "nvfp4, mx or nf4)");
    if (fam == "nf4" && spec.double_quant)
        throw UserError("GPTQ does not support nf4 with double quantization (the block absmax is itself "
                        "quantized): use nf4 without --double-quant");
    const at::Tensor w = as_float(reference_weight, "the reference weight");
    rows_ = w.size(0);
    cols_ = w.size(1);
    cells_.cols = cols_;
    cells_.col_block = std::max<int64_t>(cols_, 1);
    const float* x = w.data_ptr<float>();
    if (fam == "passthrough") {
        kind_ = name == "bf16" ? Kind::Bf16 : (name == "fp16" ? Kind::Fp16 : Kind::Identity);
    } else if (fam == "int") {
        kind_ = Kind::Int;
        build_int(x);
    } else if (fam == "fp8") {
        kind_ = Kind::Fp8;
        fp8_kind_ = fp8_kind(name);
        build_fp8(x);
    } else if (fam == "nvfp4") {
        kind_ = Kind::Nvfp4;
        build_nvfp4(x);
    } else if (fam == "mx") {
        kind_ = Kind::Mx;
        mx_element_ = mx_element(name);
        build_mx(x);
    } else if (fam == "nf4") {
        kind_ = Kind::Nf4;
        build_nf4(x);
    } else {
        throw UserError("GPTQ does not support format family '" + fam + "' (" + name + ")");
    }
}

namespace {

void check_channel_axis(const QuantSpec& s) {
    if (s.granularity == Granularity::Channel && s.axis != 0 && s.axis != 1)
        throw UserError("weight grid for " + s.info->name + ": channel axis " + std::to_string(s.axis) +
                        " does not exist in a 2-D weight");
}

}  // namespace

void WeightGrid::build_int(const float* x) {
    const IntFormat f{spec_.info->element_bits, spec_.asymmetric};
    check_channel_axis(spec_);
    if (spec_.granularity == Granularity::Group) {
        if (spec_.block <= 0) throw UserError("weight grid for " + spec_.info->name + ": group size must be positive");
        // Groups of `block` along each row; a short last group uses its own elements only
        // (integer_quant.cpp group_params).
        const int64_t g = spec_.block, bpr = (cols_ + g - 1) / g;
        cells_.col_block = g;
        cells_.cell_rows = rows_;
        int_steps_.resize(static_cast<size_t>(bpr * rows_));
        for (int64_t r = 0; r < rows_; ++r)
            for (int64_t b = 0; b < bpr; ++b) {
                const float* p = x + r * cols_ + b * g;
                const int64_t len = std::min(g, cols_ - b * g);
                const IntParams ip = f.asymmetric ? IntStep::params_for(statistic_of<FiniteRange>(p, len), f)
                                                  : IntStep::params_for(statistic_of<FiniteAbsmax>(p, len), f);
                int_steps_[static_cast<size_t>(b * rows_ + r)] = IntStep::make(ip, f);
            }
        return;
    }
    // Per tensor / channel: the scales fake quantization computes (fixed_amax rule included).
    const std::vector<IntParams> params = int_channel_params(x, {rows_, cols_}, spec_);
    int_steps_.resize(params.size());
    for (size_t c = 0; c < params.size(); ++c) int_steps_[c] = IntStep::make(params[c], f);
    if (spec_.granularity == Granularity::Channel && spec_.axis == 0) {
        cells_.cell_rows = rows_;
    } else if (spec_.granularity == Granularity::Channel) {
        cells_.col_block = 1;
    }
}

void WeightGrid::build_fp8(const float* x) {
    check_channel_axis(spec_);
    scales_ = fp8_scales(x, {rows_, cols_}, spec_);
    if (spec_.granularity == Granularity::Channel && spec_.axis == 0) {
        cells_.cell_rows = rows_;
    } else if (spec_.granularity == Granularity::Channel) {
        cells_.col_block = 1;
    }
}

void WeightGrid::build_nvfp4(const float* x) {
    // nvfp4.h: g from the tensor's finite amax (or the calibrated one), then per block of 16
    // along each row the denominator float(E4M3(block_amax / (6 g))) * g.
    const int64_t n = rows_ * cols_;
    const float amax = std::isnan(spec_.fixed_amax) ? finite_absmax(x, n) : spec_.fixed_amax;
    const float g = nvfp4_global_scale(amax);
    const float six_g = 6.0f * g;
    const int64_t B = kNvfp4Block, bpr = (cols_ + B - 1) / B;
    cells_.col_block = B;
    cells_.cell_rows = rows_;
    scales_.resize(static_cast<size_t>(bpr * rows_));
    for (int64_t r = 0; r < rows_; ++r)
        for (int64_t b = 0; b < bpr; ++b) {
            const int64_t len = std::min(B, cols_ - b * B);
            const float block_amax = statistic_of<FiniteAbsmax>(x + r * cols_ + b * B, len).value();
            scales_[static_cast<size_t>(b * rows_ + r)] = nvfp4_denominator(nvfp4_block_scale(block_amax, six_g), g);
        }
}

void WeightGrid::build_mx(const float* x) {
    if (spec_.block <= 0) throw UserError("weight grid for " + spec_.info->name + ": MX block size must be positive");
    const MxScaleRule rule = spec_.mx_round_up ? MxScaleRule::RoundUp : MxScaleRule::Floor;
    const int64_t B = spec_.block, bpr = (cols_ + B - 1) / B;
    cells_.col_block = B;
    cells_.cell_rows = rows_;
    mx_scales_.resize(static_cast<size_t>(bpr * rows_));
    visit_mx_element(mx_element_, [&](auto el) {
        using El = decltype(el);
        const float inv_max = mx_inverse_max<El>();
        for (int64_t r = 0; r < rows_; ++r)
            for (int64_t b = 0; b < bpr; ++b) {
                const int64_t len = std::min(B, cols_ - b * B);
                // AnyAbsmax: a NaN/Inf in the block makes it a NaN block (mx.cpp block_scale_byte).
                const float block_amax = statistic_of<AnyAbsmax>(x + r * cols_ + b * B, len).value();
                mx_scales_[static_cast<size_t>(b * rows_ + r)] = mx_block_scale(mx_scale_byte<El>(block_amax, rule, inv_max));
            }
    });
}

void WeightGrid::build_nf4(const float* x) {
    // nf4.h: blocks over the FLATTENED weight; a short last block is scaled as bitsandbytes
    // scales it (blockwise_scale(..., true)).
    if (spec_.block <= 0) throw UserError("weight grid for nf4: block size must be positive");
    const int64_t B = spec_.block, n = rows_ * cols_;
    const int64_t nb = (n + B - 1) / B;
    const bool row_blocked = cols_ % B == 0;
    if (row_blocked) {
        cells_.col_block = B;
        cells_.cell_rows = rows_;
    } else {
        cells_.flat_block = B;
    }
    nf4_scales_.resize(static_cast<size_t>(nb));
    for (int64_t b = 0; b < nb; ++b) {
        const int64_t off = b * B, len = std::min(B, n - off);
        const BlockwiseScale k = blockwise_scale(statistic_of<FiniteAbsmax>(x + off, len).value(), len < B);
        const int64_t cell = row_blocked ? (off % cols_) / B * rows_ + off / cols_ : b;
        nf4_scales_[static_cast<size_t>(cell)] = k;
    }
}

template <class Elem, class Cell>
void WeightGrid::run_with(const Elem& e, const Cell* table, const float* x, float* y, int64_t r0, int64_t r1,
                          int64_t c0, int64_t c1, int64_t rs, int64_t cs) const {
    const Cells L = cells_;
    for (int64_t c = c0; c < c1; ++c) {
        const float* xc = x + (c - c0) * cs;
        float* yc = y + (c - c0) * cs;
        if (L.flat_block > 0) {
            for (int64_t r = r0; r < r1; ++r) {
                const int64_t i = (r - r0) * rs;
                yc[i] = e(xc[i], table[(r * L.cols + c) / L.flat_block]);
            }
        } else if (L.cell_rows == 1) {
            const Cell cell = table[c / L.col_block];
            for (int64_t r = r0; r < r1; ++r) yc[(r - r0) * rs] = e(xc[(r - r0) * rs], cell);
        } else {
            const Cell* col_cells = table + (c / L.col_block) * L.cell_rows;
            for (int64_t r = r0; r < r1; ++r) yc[(r - r0) * rs] = e(xc[(r - r0) * rs], col_cells[r]);
        }
    }
}

void WeightGrid::run(const float* x, float* y, int64_t r0, int64_t r1, int64_t c0, int64_t c1, int64_t rs,
                     int64_t cs) const {
    auto elementwise = [&](auto f) {
        for (int64_t c = c0; c < c1; ++c)
            for (int64_t r = r0; r < r1; ++r) {
                const int64_t i = (r - r0) * rs + (c - c0) * cs;
                y[i] = f(x[i]);
            }
    };
    switch (kind_) {
        case Kind::Identity: elementwise([](float v) { return v; }); return;
        case Kind::Bf16: elementwise([](float v) { return bf16_bits_to_fp32(fp32_to_bf16_bits(v)); }); return;
        case Kind::Fp16: elementwise([](float v) { return fp16_bits_to_fp32(fp32_to_fp16_bits(v)); }); return;
        case Kind::Int: run_with(IntElem{}, int_steps_.data(), x, y, r0, r1, c0, c1, rs, cs); return;
        case Kind::Fp8:
            if (fp8_kind_ == Fp8Kind::E4M3)
                run_with(Fp8Elem<E4M3>{}, scales_.data(), x, y, r0, r1, c0, c1, rs, cs);
            else
                run_with(Fp8Elem<E5M2>{}, scales_.data(), x, y, r0, r1, c0, c1, rs, cs);
            return;
        case Kind::Nvfp4: run_with(Nvfp4Elem{}, scales_.data(), x, y, r0, r1, c0, c1, rs, cs); return;
        case Kind::Mx:
            visit_mx_element(mx_element_, [&](auto el) {
                run_with(MxElem<decltype(el)>{}, mx_scales_.data(), x, y, r0, r1, c0, c1, rs, cs);
            });
            return;
        case Kind::Nf4: {
            static const Nf4Elem nf4;  // the tables, copied once
            run_with(nf4, nf4_scales_.data(), x, y, r0, r1, c0, c1, rs, cs);
            return;
        }
    }
}

void WeightGrid::quantize_column(const float* x, float* y, int64_t col, int64_t row_begin, int64_t row_end) const {
    run(x, y, row_begin, row_end, col, col + 1, 1, 0);
}

at::Tensor WeightGrid::quantize_columns(const at::Tensor& cols, int64_t first_col) const {
    const at::Tensor c = as_float(cols, "the columns to quantize");
    if (c.dim() != 2 || c.size(0) != rows_ || first_col < 0 || first_col + c.size(1) > cols_)
        throw UserError("weight grid of a [" + std::to_string(rows_) + ", " + std::to_string(cols_) +
                        "] weight: columns " + shape_text(c) + " starting at column " + std::to_string(first_col) +
                        " do not fit");
    at::Tensor out = at::empty({rows_, c.size(1)}, c.options());
    const int64_t k = c.size(1);
    if (k > 0) run(c.data_ptr<float>(), out.data_ptr<float>(), 0, rows_, first_col, first_col + k, k, 1);
    return out.to(cols.device());
}

}  // namespace ql
