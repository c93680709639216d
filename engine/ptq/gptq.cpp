// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/ptq/gptq.h"

#include <ATen/Parallel.h>
#include <ATen/ops/cholesky_inverse.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/linalg_cholesky_ex.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/zeros.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "engine/core/errors.h"
#include "engine/ptq/weight_grid.h"
#include "engine/formats/tensor_values.h"
#include "kernels/cpu_dispatch.h"

namespace ql {
namespace {

bool all_finite(const at::Tensor& t) { return t.numel() == 0 || at::isfinite(t).all().item<bool>(); }

at::Tensor float_copy(const at::Tensor& t, const char* what) {
    if (!t.defined() || !t.is_floating_point())
        throw UserError(std::string("GPTQ: the ") + what + " must be a floating-point tensor");
    // The solve is a column-by-column loop over host memory: a CUDA weight or Hessian is copied
    // to the CPU for it, and the result goes back to the weight's device (gptq_quantize).
    return t.to(at::kCPU, at::kFloat).contiguous().clone();
}

// w[r] -= e[r] * h: the error feedback of one column into a later one (the reference's
// W1[:, i:] -= err1 ⊗ Hinv1[i, i:] for one target column). AVX2 clone where available.
QL_CPU_CLONES
void subtract_scaled(float* __restrict w, const float* __restrict e, float h, int64_t n) {
    for (int64_t r = 0; r < n; ++r) w[r] -= e[r] * h;
}

// Rows processed together inside a block: 256 rows x B = 128 columns of float32 is 128 KiB,
// which stays in L2 while the block's columns feed each other.
constexpr int64_t kRowTile = 256;

// The upper Cholesky factor U of (H + lambda I)^-1, as the reference computes it:
// cholesky(H) -> cholesky_inverse -> cholesky(upper=True). Raises the dampening 10x up to four
// times when a factorisation fails (a rank-deficient H from few calibration rows, or float32
// round-off). `damp_percent` is updated to what was used.
at::Tensor inverse_hessian_factor(const at::Tensor& h, double& damp_percent) {
    const double mean_diag = h.diagonal().mean().item<double>();
    constexpr int kRetries = 4;
    for (int attempt = 0; attempt <= kRetries; ++attempt) {
        // Each [in, in] copy goes as soon as the next exists: for a wide layer they are the
        // solve's peak (down_proj of a 1B Llama: 268 MB each), three alive at most besides H.
        at::Tensor damped = h.clone();
        damped.diagonal().add_(static_cast<float>(damp_percent * mean_diag));
        at::Tensor lower, info;
        std::tie(lower, info) = at::linalg_cholesky_ex(damped);
        damped = at::Tensor();
        if (info.item<int64_t>() == 0) {
            at::Tensor inverse = at::cholesky_inverse(lower);
            lower = at::Tensor();
            at::Tensor upper, info2;
            std::tie(upper, info2) = at::linalg_cholesky_ex(inverse, /*upper=*/true);
            inverse = at::Tensor();
            if (info2.item<int64_t>() == 0 && all_finite(upper)) return upper.contiguous();
        }
        if (attempt == kRetries) break;
        damp_percent = damp_percent > 0 ? damp_percent * 10 : 0.01;
    }
    throw UserError("GPTQ: the Hessian " + shape_text(h) +
                    " is not positive definite: its Cholesky factorisation failed even with dampening " +
                    std::to_string(damp_percent) + " x mean(diag(H)) = " + std::to_string(mean_diag) +
                    " (too few or degenerate calibration inputs?)");
}

}  // namespace

HessianAccumulator::HessianAccumulator(int64_t in_features) : in_features_(in_features) {
    if (in_features < 1) throw UserError("Hessian accumulator: in_features must be >= 1, got " + std::to_string(in_features));
    hessian_ = at::zeros({in_features, in_features}, at::kFloat);
}

void HessianAccumulator::add(const at::Tensor& x) {
    if (!x.defined() || !x.is_floating_point() || x.dim() < 1 || x.size(-1) != in_features_)
        throw UserError("Hessian accumulator: expected inputs [..., " + std::to_string(in_features_) +
                        "] of a floating dtype, got " + (x.defined() ? shape_text(x) : std::string("(none)")));
    // H lives where the first inputs do (the model's device: a CUDA model accumulates on the GPU).
    if (rows_ == 0 && hessian_.device() != x.device())
        hessian_ = at::zeros({in_features_, in_features_}, x.options().dtype(at::kFloat));
    at::Tensor rows = x.reshape({-1, in_features_}).to(hessian_.device(), at::kFloat);
    const int64_t b = rows.size(0);
    if (b == 0) return;
    if (!all_finite(rows)) throw UserError("Hessian accumulator: the calibration inputs hold NaN or Inf values");
    // gptq.py add_batch: H *= n / (n + b); n += b; inp = sqrt(2 / n) * inp; H += inp inp^T.
    // The scaling of H and the product go into one BLAS call (beta = n / (n + b)), so no
    // [in, in] temporary is allocated per batch (a fresh 64 MiB for in = 4096: PERF.md lesson 3).
    const double keep = static_cast<double>(rows_) / static_cast<double>(rows_ + b);
    rows_ += b;
    rows = rows.mul(std::sqrt(2.0 / static_cast<double>(rows_)));
    hessian_.addmm_(rows.t(), rows, /*beta=*/keep, /*alpha=*/1);
}

GptqResult gptq_quantize(const at::Tensor& weight, const at::Tensor& hessian, const QuantSpec& spec,
                         const GptqOptions& options, const CancellationToken& cancel) {
    if (options.block_size < 1)
        throw UserError("GPTQ: block_size must be >= 1, got " + std::to_string(options.block_size));
    if (!(options.damp_percent >= 0) || !std::isfinite(options.damp_percent))
        throw UserError("GPTQ: damp_percent must be a finite value >= 0, got " + std::to_string(options.damp_percent));
    if (!weight.defined() || weight.dim() != 2)
        throw UserError("GPTQ: the weight must be 2-D [out, in], got " +
                        (weight.defined() ? shape_text(weight) : std::string("(none)")));
    const int64_t out = weight.size(0), in = weight.size(1);
    if (!hessian.defined() || hessian.dim() != 2 || hessian.size(0) != in || hessian.size(1) != in)
        throw UserError("GPTQ: the Hessian of a weight " + shape_text(weight) + " must be [" + std::to_string(in) +
                        ", " + std::to_string(in) + "], got " +
                        (hessian.defined() ? shape_text(hessian) : std::string("(none)")));
    at::Tensor w = float_copy(weight, "weight");
    at::Tensor h = float_copy(hessian, "Hessian");
    if (!all_finite(w)) throw UserError("GPTQ: the weight " + shape_text(weight) + " holds NaN or Inf values");
    if (!all_finite(h)) throw UserError("GPTQ: the Hessian " + shape_text(hessian) + " holds NaN or Inf values");
    // Scales from the weight as given (the grid the result must lie on), before dead inputs are
    // zeroed below.
    const WeightGrid grid(w, spec);
    cancel.throw_if_cancelled();

    GptqResult result;
    result.damp_percent = options.damp_percent;
    if (out == 0 || in == 0) {
        result.weight = w.to(weight.device());
        return result;
    }

    // Dead inputs (always zero in calibration): H_ii = 1 so that H stays invertible, and their
    // weights to 0 (gptq.py fasterquant: H[dead, dead] = 1; W[:, dead] = 0).
    float* hp = h.data_ptr<float>();
    float* wp = w.data_ptr<float>();
    for (int64_t i = 0; i < in; ++i) {
        if (hp[i * in + i] != 0.0f) continue;
        hp[i * in + i] = 1.0f;
        for (int64_t r = 0; r < out; ++r) wp[r * in + i] = 0.0f;
        ++result.dead_columns;
    }

    // act_order: columns by descending H_ii (a stable sort, so equal diagonals keep their order
    // and the result is deterministic). Each column still uses the scale of its ORIGINAL group:
    // the grid is indexed by original column ("static groups" in the reference).
    at::Tensor perm;
    if (options.act_order) {
        perm = std::get<1>(at::sort(h.diagonal(), /*stable=*/true, /*dim=*/0, /*descending=*/true)).contiguous();
        h = h.index_select(0, perm).index_select(1, perm).contiguous();
    }

    const at::Tensor u = inverse_hessian_factor(h, result.damp_percent);  // [in, in] upper
    cancel.throw_if_cancelled();

    // Work transposed, [in, out]: a column of W is a contiguous row here, so a block's columns
    // and the rows of the lazy update are contiguous and the per-column loops run on raw
    // pointers over `out` elements.
    at::Tensor wt = w.t().contiguous();
    if (perm.defined()) wt = wt.index_select(0, perm).contiguous();
    at::Tensor qt = at::empty({in, out}, at::kFloat);
    const int64_t B = std::min(options.block_size, in);
    at::Tensor errt = at::empty({B, out}, at::kFloat);
    float* W = wt.data_ptr<float>();
    float* Q = qt.data_ptr<float>();
    float* E = errt.data_ptr<float>();
    const float* U = u.data_ptr<float>();
    const int64_t* P = perm.defined() ? perm.data_ptr<int64_t>() : nullptr;
    std::vector<double> row_loss(static_cast<size_t>(out), 0.0);

    for (int64_t i1 = 0; i1 < in; i1 += B) {
        cancel.throw_if_cancelled();
        const int64_t i2 = std::min(i1 + B, in), count = i2 - i1;
        // Inside the block every output row is independent (the scales are fixed), so rows are
        // split over threads and each thread runs all of the block's columns on its rows.
        at::parallel_for(0, out, kRowTile, [&](int64_t r0, int64_t r1) {
            for (int64_t t0 = r0; t0 < r1; t0 += kRowTile) {
                const int64_t t1 = std::min(t0 + kRowTile, r1), n = t1 - t0;
                for (int64_t i = 0; i < count; ++i) {
                    const int64_t c = i1 + i;
                    float* wc = W + c * out + t0;
                    float* qc = Q + c * out + t0;
                    float* ec = E + i * out + t0;
                    grid.quantize_column(wc, qc, P ? P[c] : c, t0, t1);
                    const float d = U[c * in + c];
                    for (int64_t r = 0; r < n; ++r) {
                        ec[r] = (wc[r] - qc[r]) / d;
                        row_loss[static_cast<size_t>(t0 + r)] += static_cast<double>(ec[r]) * ec[r];
                    }
                    for (int64_t j = i + 1; j < count; ++j)
                        subtract_scaled(W + (i1 + j) * out + t0, ec, U[c * in + i1 + j], n);
                }
            }
        });
        // The block's error into every later column at once (gptq.py:
        // W[:, i2:] -= Err1.matmul(Hinv[i1:i2, i2:]), here transposed).
        if (i2 < in)
            wt.narrow(0, i2, in - i2).addmm_(u.narrow(0, i1, count).narrow(1, i2, in - i2).t(), errt.narrow(0, 0, count),
                                             /*beta=*/1, /*alpha=*/-1);
    }

    double loss = 0;
    for (double l : row_loss) loss += l;
    result.proxy_loss = loss / 2;  // the reference halves its Losses before summing
    if (perm.defined()) {
        at::Tensor inverse = at::empty_like(perm);
        int64_t* I = inverse.data_ptr<int64_t>();
        for (int64_t k = 0; k < in; ++k) I[P[k]] = k;
        qt = qt.index_select(0, inverse);
    }
    result.weight = qt.t().contiguous().to(weight.device());
    return result;
}

}  // namespace ql
