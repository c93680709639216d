// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/ptq/weight_clipping.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>

#include "engine/core/errors.h"
#include "engine/ptq/weight_grid.h"

namespace ql {
namespace {

// How a format's scale cells tile a [rows, cols] weight.
struct CellLayout {
    enum class Kind { Tensor, Rows, Columns, RowBlocks, FlatBlocks } kind = Kind::Tensor;
    int64_t block = 0;
};

CellLayout cell_layout(const QuantSpec& s, int64_t cols) {
    CellLayout c;
    if (s.granularity == Granularity::Tensor) return c;
    if (s.granularity == Granularity::Channel) {
        c.kind = s.axis == 0 ? CellLayout::Kind::Rows : CellLayout::Kind::Columns;
        return c;
    }
    c.block = s.block > 0 ? s.block : cols;
    // NF4 blocks run over the flattened weight; they stay inside rows when the rows divide.
    c.kind = s.info->family == "nf4" && cols % c.block != 0 ? CellLayout::Kind::FlatBlocks : CellLayout::Kind::RowBlocks;
    return c;
}

// Per-cell sums of e [rows, cols] (float64) -> a 1-D tensor of cells in row-major cell order.
at::Tensor cell_sums(const at::Tensor& e, const CellLayout& c) {
    const int64_t rows = e.size(0), cols = e.size(1);
    switch (c.kind) {
        case CellLayout::Kind::Tensor: return e.sum().reshape({1});
        case CellLayout::Kind::Rows: return e.sum(1);
        case CellLayout::Kind::Columns: return e.sum(0);
        case CellLayout::Kind::RowBlocks: {
            const int64_t nb = (cols + c.block - 1) / c.block;
            const at::Tensor padded = nb * c.block == cols ? e : at::constant_pad_nd(e, {0, nb * c.block - cols});
            return padded.reshape({rows, nb, c.block}).sum(-1).reshape({-1});
        }
        case CellLayout::Kind::FlatBlocks: {
            const int64_t n = rows * cols, nb = (n + c.block - 1) / c.block;
            const at::Tensor flat = e.reshape({-1});
            return (nb * c.block == n ? flat : at::constant_pad_nd(flat, {0, nb * c.block - n})).reshape({nb, c.block}).sum(-1);
        }
    }
    return e.sum().reshape({1});
}

// The per-element multiplier [rows, cols] from per-cell values m (the inverse of cell_sums).
at::Tensor expand_cells(const at::Tensor& m, const CellLayout& c, int64_t rows, int64_t cols) {
    switch (c.kind) {
        case CellLayout::Kind::Tensor: return m.reshape({1, 1}).expand({rows, cols});
        case CellLayout::Kind::Rows: return m.reshape({rows, 1}).expand({rows, cols});
        case CellLayout::Kind::Columns: return m.reshape({1, cols}).expand({rows, cols});
        case CellLayout::Kind::RowBlocks: {
            const int64_t nb = (cols + c.block - 1) / c.block;
            return m.reshape({rows, nb, 1}).expand({rows, nb, c.block}).reshape({rows, nb * c.block}).slice(1, 0, cols);
        }
        case CellLayout::Kind::FlatBlocks: {
            const int64_t nb = m.numel();
            return m.reshape({nb, 1}).expand({nb, c.block}).reshape({-1}).slice(0, 0, rows * cols).reshape({rows, cols});
        }
    }
    return m;
}

}  // namespace

std::vector<float> clipping_candidates() {
    std::vector<float> c;
    for (int k = 0; k <= 25; ++k) c.push_back(1.0f - 0.02f * static_cast<float>(k));
    return c;
}

WeightClipping search_weight_clipping(const at::Tensor& w_in, const QuantSpec& spec_in, const std::vector<float>& importance) {
    if (!w_in.defined() || w_in.dim() != 2) throw UserError("weight clipping search: expected a 2-D weight");
    const at::Tensor w = w_in.detach().to(at::kFloat).contiguous();
    const int64_t rows = w.size(0), cols = w.size(1);
    if (!spec_in.info) throw UserError("weight clipping search: no format given");
    if (spec_in.info->family == "gguf")
        throw UserError("weight clipping search: " + spec_in.info->name +
                        " computes its own block scales (llama.cpp's search takes the importance itself)");
    QuantSpec spec = spec_in;
    if (spec.info->family == "nvfp4" && std::isnan(spec.fixed_amax)) {
        // Only the block scales move: the global scale stays the weight's own.
        const at::Tensor finite = at::where(at::isfinite(w), w.abs(), at::zeros_like(w));
        spec.fixed_amax = finite.max().item<float>();
    }
    at::Tensor imp;
    if (importance.empty()) {
        imp = at::ones({1, cols}, w.options().dtype(at::kDouble));  // on the weight's device
    } else {
        if (static_cast<int64_t>(importance.size()) != cols)
            throw UserError("weight clipping search: " + std::to_string(importance.size()) + " importance values for " +
                            std::to_string(cols) + " input columns");
        for (float v : importance)
            if (!std::isfinite(v) || v < 0) throw UserError("weight clipping search: importance values must be finite and >= 0");
        imp = at::tensor(at::ArrayRef<float>(importance)).to(w.device(), at::kDouble).reshape({1, cols});
    }
    const CellLayout layout = cell_layout(spec, cols);
    const at::Tensor wd = w.to(at::kDouble);
    auto cell_error = [&](const at::Tensor& q) { return cell_sums(imp * (wd - q.to(at::kDouble)).pow(2), layout); };

    const std::vector<float> candidates = clipping_candidates();
    at::Tensor best_error, best_m;
    for (float m : candidates) {
        const at::Tensor q = WeightGrid(w * m, spec).quantize(w);
        const at::Tensor e = cell_error(q);
        // NaN weights give NaN errors; such cells keep m = 1.
        const at::Tensor err = at::where(at::isnan(e), at::full_like(e, INFINITY), e);
        if (!best_error.defined()) {
            best_error = err;
            best_m = at::full_like(err, m);
            continue;
        }
        const at::Tensor better = err < best_error;  // strictly: ties keep the larger m
        best_error = at::where(better, err, best_error);
        best_m = at::where(better, at::full_like(best_m, m), best_m);
    }
    WeightClipping r;
    const at::Tensor mult = expand_cells(best_m.to(at::kFloat), layout, rows, cols);
    r.quantized = WeightGrid(w * mult, spec).quantize(w);
    const at::Tensor m_vec = best_m.to(at::kCPU, at::kFloat).contiguous();
    r.multipliers.assign(m_vec.data_ptr<float>(), m_vec.data_ptr<float>() + m_vec.numel());
    r.error_before = cell_error(WeightGrid(w, spec).quantize(w)).sum().item<double>();
    r.error_after = cell_error(r.quantized).sum().item<double>();
    return r;
}

}  // namespace ql
