// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/hadamard_transform.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/grad_mode.h>

#include <random>
#include <stdexcept>

#include "engine/core/errors.h"
#include "kernels/hadamard.h"

#if defined(QUANTLAB_HAVE_CUDA) && __has_include(<c10/cuda/impl/cuda_cmake_macros.h>)
#define QL_ENGINE_CUDA 1
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "kernels/cuda_kernels.h"
#endif

namespace ql {
namespace {

kernels::HadamardLayout layout_for(const at::Tensor& x, const HadamardRotation& r) {
    const int64_t n = x.dim() == 0 ? 1 : x.size(-1);
    if (!kernels::is_power_of_two(r.block) || n % r.block != 0)
        throw UserError("Hadamard rotation: block " + std::to_string(r.block) +
                        " must be a power of two dividing the last dimension (" + std::to_string(n) + ")");
    if (r.signs.defined() && r.signs.numel() != n)
        throw UserError("Hadamard rotation: " + std::to_string(r.signs.numel()) + " signs for rows of " + std::to_string(n));
    return kernels::HadamardLayout{n == 0 ? 0 : x.numel() / n, n, r.block};
}

// The kernel on a contiguous float32 copy; signs applied first when given.
at::Tensor kernel_transform(const at::Tensor& x, const HadamardRotation& r) {
    const kernels::HadamardLayout L = layout_for(x, r);
    at::Tensor c = x.detach().to(at::kFloat).contiguous();
    at::Tensor y = at::empty_like(c);
    if (c.numel() == 0) return y;
    at::Tensor s = r.signs.defined() ? r.signs.to(c.device(), at::kFloat).contiguous() : at::Tensor();
#if defined(QL_ENGINE_CUDA)
    if (c.is_cuda()) {
        const c10::cuda::CUDAGuard guard(c.device());
        try {
            kernels::cuda::hadamard_rows(c.data_ptr<float>(), y.data_ptr<float>(), L, s.defined() ? s.data_ptr<float>() : nullptr,
                                         c10::cuda::getCurrentCUDAStream(c.device().index()).stream());
        } catch (const std::invalid_argument& e) {
            throw UserError(std::string("Hadamard rotation: ") + e.what());
        }
        return y;
    }
#endif
    if (!c.device().is_cpu()) throw UserError("Hadamard rotation: tensor on " + c.device().str() + " is not supported by this build");
    kernels::hadamard_rows(c.data_ptr<float>(), y.data_ptr<float>(), L, s.defined() ? s.data_ptr<float>() : nullptr);
    return y;
}

}  // namespace

at::Tensor hadamard_matrix(int64_t block) {
    if (!kernels::is_power_of_two(block)) throw UserError("Hadamard matrix: order " + std::to_string(block) + " is not a power of two");
    // Row i of H_b is the transform of e_i (H is symmetric).
    at::NoGradGuard no_grad;
    return kernel_transform(at::eye(block, at::kFloat), HadamardRotation{block, at::Tensor()});
}

at::Tensor random_signs(int64_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    at::Tensor s = at::empty({n}, at::kFloat);
    float* p = s.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) p[i] = (rng() >> 63) ? -1.0f : 1.0f;
    return s;
}

at::Tensor hadamard_transform(const at::Tensor& x, const HadamardRotation& r) {
    const at::Tensor y = kernel_transform(x, r);
    if (!x.requires_grad() || !at::GradMode::is_enabled()) return y;
    // The same linear map through differentiable ops; lin.detach() - lin is exactly +0 for finite
    // values and y - (+0) == y bit for bit (signed zeros too), so the forward value stays the
    // kernel's while the gradient is lin's.
    const int64_t n = x.size(-1);
    at::Tensor xf = x.to(at::kFloat);
    if (r.signs.defined()) xf = xf * r.signs.to(x.device(), at::kFloat);
    std::vector<int64_t> blocks(x.sizes().begin(), x.sizes().end());
    blocks.back() = n / r.block;
    blocks.push_back(r.block);
    const at::Tensor h = hadamard_matrix(r.block).to(x.device());
    const at::Tensor lin = at::matmul(xf.reshape(blocks), h).reshape(x.sizes());
    return y - (lin.detach() - lin);
}

at::Tensor inverse_hadamard_transform(const at::Tensor& x, const HadamardRotation& r) {
    at::Tensor y = kernel_transform(x, HadamardRotation{r.block, at::Tensor()});
    if (r.signs.defined()) y = y * r.signs.to(y.device(), at::kFloat);
    return y;
}

}  // namespace ql
