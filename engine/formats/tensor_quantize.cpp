// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/formats/tensor_quantize.h"

#include <ATen/ops/empty_like.h>

#include "engine/api/errors.h"

namespace ql {
namespace {

at::Tensor contiguous_float(const at::Tensor& x) {
    if (!x.is_floating_point()) throw UserError("fake quantization needs a floating-point tensor, got " + std::string(x.dtype().name()));
    if (x.device().type() != c10::DeviceType::CPU)
        throw UserError("tensor on " + x.device().str() + ": this build quantizes CPU tensors (CUDA kernels run through the kernels API)");
    at::Tensor c = x.scalar_type() == at::kFloat ? x : x.to(at::kFloat);
    return c.contiguous();
}

}  // namespace

std::vector<int64_t> shape_of(const at::Tensor& t) { return std::vector<int64_t>(t.sizes().begin(), t.sizes().end()); }

void fake_quantize_into(const at::Tensor& x, at::Tensor& out, const QuantSpec& spec) {
    const at::Tensor c = contiguous_float(x);
    if (!out.defined() || out.sizes() != c.sizes() || out.scalar_type() != at::kFloat || !out.is_contiguous())
        out = at::empty_like(c, c.options().memory_format(at::MemoryFormat::Contiguous));
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
