// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/formats/tensor_quantize.h"

#include <ATen/ops/empty_like.h>

#include "engine/core/errors.h"

// CUDA tensors go to the CUDA kernels only when LibTorch itself was built with CUDA (Debian's
// CPU-only libtorch-dev ships c10/cuda headers without the generated cuda_cmake_macros.h).
#if defined(QUANTLAB_HAVE_CUDA) && __has_include(<c10/cuda/impl/cuda_cmake_macros.h>)
#define QL_ENGINE_CUDA 1
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace ql {
namespace {

at::Tensor contiguous_float(const at::Tensor& x) {
    if (!x.is_floating_point()) throw UserError("fake quantization needs a floating-point tensor, got " + std::string(x.dtype().name()));
    bool supported = x.device().is_cpu();
#if defined(QL_ENGINE_CUDA)
    supported = supported || x.device().is_cuda();
#endif
    if (!supported) throw UserError("tensor on " + x.device().str() + ": this build quantizes CPU tensors only");
    at::Tensor c = x.scalar_type() == at::kFloat ? x : x.to(at::kFloat);
    return c.contiguous();
}

}  // namespace

std::vector<int64_t> shape_of(const at::Tensor& t) { return std::vector<int64_t>(t.sizes().begin(), t.sizes().end()); }

void fake_quantize_into(const at::Tensor& x, at::Tensor& out, const QuantSpec& spec) {
    const at::Tensor c = contiguous_float(x);
    if (!out.defined() || out.sizes() != c.sizes() || out.scalar_type() != at::kFloat || !out.is_contiguous() ||
        out.device() != c.device())
        out = at::empty_like(c, c.options().memory_format(at::MemoryFormat::Contiguous));
#if defined(QL_ENGINE_CUDA)
    if (c.is_cuda()) {
        const c10::cuda::CUDAGuard guard(c.device());  // the kernels launch on the current device
        fake_quantize_device_buffer(c.data_ptr<float>(), out.data_ptr<float>(), shape_of(c), spec,
                                    c10::cuda::getCurrentCUDAStream(c.device().index()).stream());
        return;
    }
#endif
    fake_quantize_buffer(c.data_ptr<float>(), out.data_ptr<float>(), shape_of(c), spec);
}

at::Tensor fake_quantize(const at::Tensor& x, const QuantSpec& spec) {
    at::Tensor out;
    fake_quantize_into(x, out, spec);
    return out;
}

at::Tensor fake_quantize(const at::Tensor& x, const QuantOptions& options) {
    return fake_quantize(x, resolve_spec(options, shape_of(x)));
}

}  // namespace ql
