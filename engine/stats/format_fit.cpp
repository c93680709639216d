// SPDX-License-Identifier: GPL-3.0-or-later
// A tensor under one quantizer: per-block representable ranges from the encoded scales
// (encode_buffer, so the scales are exactly what the fake quantization uses), clipping, error.
#include "engine/stats/format_fit.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/errors.h"
#include "engine/core/not_a_number.h"
#include "kernels/parallel.h"

namespace ql {
namespace {

constexpr size_t kMaxStoredScales = size_t{1} << 20;
// A scale computed as amax / qmax and multiplied back can land an ulp below amax: values beyond
// the range by less than this relative amount are rounding, not clipping.
constexpr double kClipTolerance = 1.0 / (1 << 20);

enum class Layout { Tensor, Rows, Cols, RowBlocks, Flat };

// The representable range [lo, hi] of every block / channel, and its scale.
struct BlockRanges {
    Layout layout = Layout::Tensor;
    int64_t width = 1;              // RowBlocks / Flat: elements per block
    std::vector<double> lo, hi;
    std::vector<double> stored;     // the scale as stored (block_scales)
    std::vector<double> effective;  // the scale the element grid is multiplied by
    std::string scale_kind = "none";
    double global = 1;

    int64_t block_of(int64_t row, int64_t col, int64_t cols) const {
        switch (layout) {
            case Layout::Tensor: return 0;
            case Layout::Rows: return row;
            case Layout::Cols: return col;
            case Layout::RowBlocks: return row * ((cols + width - 1) / width) + col / width;
            case Layout::Flat: return (row * cols + col) / width;
        }
        return 0;
    }
};

int64_t numel_of(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

// `e`: the encoding of x under spec (unused for passthrough formats, which have none).
BlockRanges block_ranges(const std::vector<int64_t>& shape, const QuantSpec& spec, const EncodedTensor& e) {
    const FormatInfo& f = *spec.info;
    const std::string& fam = f.family;
    BlockRanges r;
    auto symmetric = [&r](double elem_max) {
        for (double s : r.effective) {
            r.lo.push_back(-elem_max * s);
            r.hi.push_back(elem_max * s);
        }
    };
    if (fam == "passthrough") {
        r.effective = {1.0};
        symmetric(f.element_max);
        return r;
    }
    const float* sc = e.scales.as<float>();
    const int64_t count = e.scales.numel();
    r.stored.assign(sc, sc + count);
    r.effective = r.stored;
    const int rank = static_cast<int>(shape.size());
    auto channel_layout = [&]() {
        if (spec.granularity == Granularity::Tensor) return Layout::Tensor;
        if (spec.axis == rank - 1 && rank > 1) return Layout::Cols;
        if (spec.axis == 0) return Layout::Rows;
        throw UserError("layer statistics support per-channel scales along the first or last axis, not axis " +
                        std::to_string(spec.axis));
    };
    if (fam == "fp8") {
        r.layout = channel_layout();
        r.scale_kind = "fp32";
        symmetric(f.element_max);
    } else if (fam == "nvfp4") {
        r.layout = Layout::RowBlocks;
        r.width = spec.block > 0 ? spec.block : 16;
        r.scale_kind = "e4m3";
        r.global = *e.global_scale;
        for (double& s : r.effective) s = static_cast<double>(static_cast<float>(s) * *e.global_scale);
        symmetric(f.element_max);
    } else if (fam == "llm_int8") {
        // One absmax per row (output channel); the step is r / 127.
        r.layout = Layout::Rows;
        r.scale_kind = "fp32";
        for (double& s : r.effective) s = static_cast<double>(static_cast<float>(s) / 127.0f);
        symmetric(f.element_max);
    } else if (fam == "nvfp4_e5m3") {
        r.layout = Layout::RowBlocks;
        r.width = 16;
        r.scale_kind = "ue5m3";
        symmetric(f.element_max);
    } else if (fam == "mx") {
        r.layout = Layout::RowBlocks;
        r.width = spec.block;
        r.scale_kind = "e8m0";
        symmetric(f.element_max);
    } else if (fam == "int") {
        r.layout = spec.granularity == Granularity::Group ? Layout::RowBlocks : channel_layout();
        r.width = spec.block;
        r.scale_kind = "fp32";
        if (spec.asymmetric) {
            const double top = std::ldexp(1.0, f.element_bits) - 1;
            for (int64_t i = 0; i < count; ++i) {
                const double s = r.effective[static_cast<size_t>(i)], zp = e.zero_points[static_cast<size_t>(i)];
                r.lo.push_back(-zp * s);
                r.hi.push_back((top - zp) * s);
            }
        } else {
            symmetric(f.element_max);
        }
    } else if (fam == "nf4") {
        r.layout = Layout::Flat;
        r.width = spec.block;
        r.scale_kind = "fp32";
        symmetric(1.0);
    } else if (fam == "gguf") {
        r.layout = Layout::RowBlocks;
        // One scale per sub-block: 32 elements, 16 for Q2_K / Q3_K / Q6_K (the scales' last dimension).
        const int64_t per_row = e.scales.shape.empty() ? 1 : e.scales.shape[shape.empty() ? 0 : shape.size() - 1];
        r.width = shape.empty() || per_row == 0 ? 32 : shape.back() / per_row;
        r.scale_kind = f.name == "gguf_mxfp4" ? "e8m0" : "fp16";
        // (scale, min) pairs: Q4_1 adds its min (x = q d + m), the K-quants subtract theirs
        // (x = q scale - min).
        const bool with_min = e.scales.shape.size() > shape.size();
        const double min_sign = f.name == "gguf_q4_1" ? 1.0 : -1.0;
        const double first = f.element_values.front(), last = f.element_values.back();
        r.effective.clear();
        r.stored.clear();
        for (int64_t b = 0; b < (with_min ? count / 2 : count); ++b) {
            const double d = with_min ? sc[2 * b] : sc[b], m = with_min ? min_sign * sc[2 * b + 1] : 0.0;
            r.stored.push_back(d);
            r.effective.push_back(std::fabs(d));
            const double a = first * d + m, z = last * d + m;
            r.lo.push_back(std::min(a, z));
            r.hi.push_back(std::max(a, z));
        }
    }
    return r;
}

void scale_histogram(const std::vector<double>& scales, int bins, HistogramData& h) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (double s : scales)
        if (s > 0 && std::isfinite(s)) {
            lo = std::min(lo, std::log2(s));
            hi = std::max(hi, std::log2(s));
        }
    if (!(lo <= hi)) return;
    h.lo = std::floor(lo);
    h.hi = std::max(std::ceil(hi), h.lo + 1);
    h.counts.assign(static_cast<size_t>(bins), 0.0);
    const double k = bins / (h.hi - h.lo);
    for (double s : scales) {
        if (!(s > 0 && std::isfinite(s))) {
            h.underflow += 1;  // zero / NaN scales (all-zero or non-finite blocks)
            continue;
        }
        const int64_t i = std::min<int64_t>(bins - 1, static_cast<int64_t>((std::log2(s) - h.lo) * k));
        h.counts[static_cast<size_t>(i)] += 1;
    }
}

// Values of x [rows, cols] beyond their block's range (FormatFit.clipped_fraction), counted one
// block segment of a row at a time, rows split over the threads.
int64_t count_clipped(const float* x, int64_t rows, int64_t cols, const BlockRanges& r) {
    std::vector<int64_t> per_row(static_cast<size_t>(rows), 0);
    kernels::parallel_ranges(rows, std::max<int64_t>(1, 65536 / std::max<int64_t>(cols, 1)), 1, [&](int64_t rb, int64_t re) {
        for (int64_t row = rb; row < re; ++row) {
            const float* xr = x + row * cols;
            int64_t clipped = 0;
            int64_t col = 0;
            while (col < cols) {
                // The run of columns sharing one block (Flat blocks may start mid-row).
                int64_t end = cols;
                if (r.layout == Layout::Cols) end = col + 1;
                if (r.layout == Layout::RowBlocks) end = std::min(cols, (col / r.width + 1) * r.width);
                if (r.layout == Layout::Flat) end = std::min(cols, col + r.width - (row * cols + col) % r.width);
                const size_t b = static_cast<size_t>(r.block_of(row, col, cols));
                const double hi = r.hi[b] + std::fabs(r.hi[b]) * kClipTolerance;
                const double lo = r.lo[b] - std::fabs(r.lo[b]) * kClipTolerance;
                for (int64_t c = col; c < end; ++c) clipped += (xr[c] > hi) | (xr[c] < lo);
                col = end;
            }
            per_row[static_cast<size_t>(row)] = clipped;
        }
    });
    int64_t total = 0;
    for (int64_t c : per_row) total += c;
    return total;
}

bool all_finite(const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        if (!std::isfinite(x[i])) return false;
    return true;
}

}  // namespace

QuantOptions default_weight_options(const std::string& format, int64_t cols) {
    QuantOptions o;
    o.format = format;
    const FormatInfo& f = format_info(format);
    if (format == "int8") {
        o.granularity = "channel";
    } else if (f.family == "int") {
        o.granularity = cols % f.default_group_size == 0 ? "group" : "channel";
    }
    return o;
}

QuantOptions default_input_options(const std::string& format) {
    QuantOptions o;
    o.format = format;
    format_info(format);
    return o;
}

std::string spec_description(const QuantSpec& s) {
    std::string d = s.info->name;
    if (!s.info->granularities.empty()) {
        if (s.granularity == Granularity::Group)
            d += " group " + std::to_string(s.block);
        else
            d += s.granularity == Granularity::Channel ? " channel" : " tensor";
    }
    if (s.asymmetric) d += " asym";
    if (s.double_quant) d += " double-quant";
    if (s.mx_round_up) d += " rceil";
    return d;
}

double sqnr_db(const double signal, const double noise) {
    if (noise == 0) return std::numeric_limits<double>::infinity();
    return 10.0 * std::log10(signal / noise);
}

double clipped_fraction(const float* x, const std::vector<int64_t>& shape, const QuantSpec& spec) {
    const int64_t n = numel_of(shape);
    if (n == 0) return 0;
    const int64_t cols = shape.empty() ? 1 : shape.back(), rows = n / cols;
    const EncodedTensor e = spec.info->family == "passthrough" ? EncodedTensor{} : encode_buffer(x, shape, spec);
    return static_cast<double>(count_clipped(x, rows, cols, block_ranges(shape, spec, e))) / static_cast<double>(n);
}

FormatFit fit_weight(const float* w, int64_t rows, int64_t cols, const QuantSpec& spec, int bins,
                     std::vector<float>& quantized) {
    const FormatInfo& f = *spec.info;
    const std::vector<int64_t> shape = {rows, cols};
    const int64_t n = rows * cols;
    FormatFit fit;
    fit.format = f.name;
    fit.settings = spec_description(spec);
    fit.output_sqnr_db = fit.wa_output_sqnr_db = fit.input_clipped_fraction = kNaN;
    quantized.resize(static_cast<size_t>(n));
    const bool passthrough = f.family == "passthrough";
    const EncodedTensor e = passthrough || n == 0 ? EncodedTensor{} : encode_buffer(w, shape, spec);
    // Decoding equals fake quantization except at NaN inputs (FORMATS.md): decode when finite,
    // saving a second pass over the tensor.
    if (!passthrough && n > 0 && all_finite(w, n))
        quantized = decode_buffer(e, shape, spec);
    else
        fake_quantize_buffer(w, quantized.data(), shape, spec);
    double signal = 0, noise = 0;
    int64_t finite = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (!std::isfinite(w[i])) continue;
        const double d = static_cast<double>(w[i]) - quantized[static_cast<size_t>(i)];
        signal += static_cast<double>(w[i]) * w[i];
        noise += d * d;
        ++finite;
    }
    fit.weight_mse = finite ? noise / static_cast<double>(finite) : 0.0;
    fit.weight_sqnr_db = sqnr_db(signal, noise);
    if (n == 0) return fit;

    const BlockRanges r = block_ranges(shape, spec, e);
    fit.clipped_fraction = static_cast<double>(count_clipped(w, rows, cols, r)) / static_cast<double>(n);
    fit.scale_kind = r.scale_kind;
    fit.global_scale = r.global;
    fit.block_count = static_cast<int64_t>(r.stored.size());
    fit.block_scale_stride = std::max<int64_t>(1, (fit.block_count + static_cast<int64_t>(kMaxStoredScales) - 1) /
                                                      static_cast<int64_t>(kMaxStoredScales));
    for (size_t i = 0; i < r.stored.size(); i += static_cast<size_t>(fit.block_scale_stride)) fit.block_scales.push_back(r.stored[i]);
    scale_histogram(r.stored, bins, fit.scale_histogram);
    // The grid of the block with the largest scale (all blocks are that grid times a factor <= 1).
    double top = 0;
    for (double s : r.effective)
        if (std::isfinite(s)) top = std::max(top, s);
    if (f.family == "passthrough") {
        fit.clip_threshold = f.element_max;
    } else {
        for (float v : f.element_values) fit.grid.push_back(static_cast<double>(v) * top);
        std::sort(fit.grid.begin(), fit.grid.end());
        fit.grid.erase(std::unique(fit.grid.begin(), fit.grid.end()), fit.grid.end());
        double hi = 0;
        for (size_t b = 0; b < r.hi.size(); ++b)
            if (std::isfinite(r.hi[b])) hi = std::max({hi, r.hi[b], -r.lo[b]});
        fit.clip_threshold = hi;
    }
    return fit;
}

FormatFit format_fit(const float* w, int64_t rows, int64_t cols, const std::string& format, const float* x,
                     int64_t x_rows, const float* bias, int bins) {
    if (rows < 0 || cols < 0 || x_rows < 0) throw UserError("format fit: negative size");
    if (bins < 1) throw UserError("format fit: bins must be at least 1, got " + std::to_string(bins));
    FormatFit fit;
    format_info(format);  // an unknown name is the caller's error
    std::vector<float> q;
    try {
        const QuantSpec spec = resolve_spec(default_weight_options(format, cols), {rows, cols});
        fit = fit_weight(w, rows, cols, spec, bins, q);
    } catch (const UserError& e) {  // the format does not apply to this shape
        fit.format = format;
        fit.error = e.what();
        fit.clipped_fraction = fit.weight_mse = fit.weight_sqnr_db = kNaN;
        fit.output_sqnr_db = fit.wa_output_sqnr_db = fit.input_clipped_fraction = kNaN;
        return fit;
    }
    if (!x || x_rows == 0 || rows * cols == 0) return fit;
    const at::Tensor xt = at::from_blob(const_cast<float*>(x), {x_rows, cols}, at::kFloat);
    const at::Tensor wt = at::from_blob(const_cast<float*>(w), {rows, cols}, at::kFloat);
    const at::Tensor qt = at::from_blob(q.data(), {rows, cols}, at::kFloat);
    const at::Tensor bt = bias ? at::from_blob(const_cast<float*>(bias), {rows}, at::kFloat) : at::Tensor();
    const at::Tensor y = at::linear(xt, wt, bt), yq = at::linear(xt, qt, bt);
    const double signal = y.to(at::kDouble).pow(2).sum().item<double>();
    fit.output_sqnr_db = sqnr_db(signal, (y - yq).to(at::kDouble).pow(2).sum().item<double>());
    try {
        const QuantSpec in = resolve_spec(default_input_options(format), {x_rows, cols});
        std::vector<float> xq(static_cast<size_t>(x_rows * cols));
        fake_quantize_buffer(x, xq.data(), {x_rows, cols}, in);
        const at::Tensor ywa = at::linear(at::from_blob(xq.data(), {x_rows, cols}, at::kFloat), qt, bt);
        fit.wa_output_sqnr_db = sqnr_db(signal, (y - ywa).to(at::kDouble).pow(2).sum().item<double>());
        fit.input_clipped_fraction = clipped_fraction(x, {x_rows, cols}, in);
    } catch (const UserError&) {
        // The format cannot quantize these inputs (e.g. GGUF rows not a multiple of 32): left NaN.
    }
    return fit;
}

std::vector<std::string> default_stats_formats() {
    return {"fp8_e4m3", "nvfp4", "mxfp4", "mxfp6_e2m3", "mxfp8_e4m3", "int8", "int4", "nf4"};
}

}  // namespace ql
