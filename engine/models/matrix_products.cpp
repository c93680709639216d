// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/matrix_products.h"

#include <ATen/Parallel.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/repeat_interleave.h>

#include <vector>

#if QUANTLAB_LINEAR_ON_ONEDNN
#include "kernels/dense_product.h"
#endif

namespace ql {

namespace {

#if QUANTLAB_LINEAR_ON_ONEDNN
bool fp32_cpu(const at::Tensor& t) { return t.device().is_cpu() && t.scalar_type() == at::kFloat; }

// A product a gradient flows through keeps LibTorch's autograd.
bool needs_grad(const at::Tensor& t) { return t.defined() && t.requires_grad() && at::GradMode::is_enabled(); }

// The tensor with unit stride along its last dimension (a view when it has it already).
at::Tensor rows_dense(const at::Tensor& t) { return t.stride(-1) == 1 ? t : t.contiguous(); }

// x · wᵀ + b on oneDNN, no autograd. x: [..., in] FP32, w: [out, in], b: [out] or undefined.
at::Tensor dense_linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
    const int64_t in = w.size(1), out = w.size(0);
    const at::Tensor xc = x.contiguous(), wc = w.contiguous();
    const at::Tensor bc = b.defined() ? b.contiguous() : b;
    std::vector<int64_t> shape = x.sizes().vec();
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
    shape.back() = out;
    at::Tensor y = at::empty(shape, x.options());
    kernels::dense_product_f32(xc.data_ptr<float>(), rows, in, wc.data_ptr<float>(), out,
                               bc.defined() ? bc.data_ptr<float>() : nullptr, y.data_ptr<float>());
    return y;
}

#endif

}  // namespace

at::Tensor linear_product(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
#if QUANTLAB_LINEAR_ON_ONEDNN
    const bool applies = fp32_cpu(x) && fp32_cpu(weight) && weight.dim() == 2 && x.dim() >= 1 &&
                         x.size(-1) == weight.size(1) &&
                         (!bias.defined() || (fp32_cpu(bias) && bias.dim() == 1 && bias.size(0) == weight.size(0)));
    // A product a gradient flows through keeps LibTorch's autograd (docs/BENCHMARKS.md says why).
    if (applies && !needs_grad(x) && !needs_grad(weight) && !needs_grad(bias)) return dense_linear(x, weight, bias);
#endif
    return at::linear(x, weight, bias);
}

at::Tensor head_product(const at::Tensor& a, const at::Tensor& m, bool m_transposed, double alpha) {
#if QUANTLAB_LINEAR_ON_ONEDNN
    const bool applies = fp32_cpu(a) && fp32_cpu(m) && a.dim() == 4 && m.dim() == 4 &&
                         a.size(0) == m.size(0) && m.size(1) > 0 && a.size(1) % m.size(1) == 0 &&
                         a.size(3) == m.size(m_transposed ? 3 : 2) && !needs_grad(a) && !needs_grad(m);
    if (applies) {
        const at::Tensor ar = rows_dense(a), mr = rows_dense(m);
        const int64_t batch = a.size(0), heads = a.size(1), rows = a.size(2), k = a.size(3);
        const int64_t n = m.size(m_transposed ? 2 : 3), group = heads / m.size(1);
        at::Tensor out = at::empty({batch, heads, rows, n}, a.options());
        const float* ap = ar.data_ptr<float>();
        const float* mp = mr.data_ptr<float>();
        float* op = out.data_ptr<float>();
        // One sgemm per head, the heads spread over the threads (each sgemm runs on one).
        at::parallel_for(0, batch * heads, 1, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) {
                const int64_t b = i / heads, h = i % heads;
                kernels::matrix_product_f32(rows, n, k, static_cast<float>(alpha),
                                            ap + b * ar.stride(0) + h * ar.stride(1), ar.stride(2), kernels::Stored::AsIs,
                                            mp + b * mr.stride(0) + (h / group) * mr.stride(1), mr.stride(2),
                                            m_transposed ? kernels::Stored::Transposed : kernels::Stored::AsIs, 0.0f,
                                            op + i * rows * n, n);
            }
        });
        return out;
    }
#endif
    const int64_t group = m.dim() == 4 && m.size(1) > 0 ? a.size(1) / m.size(1) : 1;
    const at::Tensor shared = group > 1 ? m.repeat_interleave(group, 1) : m;  // transformers' repeat_kv
    const at::Tensor product = at::matmul(a, m_transposed ? shared.transpose(-1, -2) : shared);
    return alpha == 1.0 ? product : product * alpha;
}

bool matrix_products_on_onednn() { return QUANTLAB_LINEAR_ON_ONEDNN != 0; }

}  // namespace ql
