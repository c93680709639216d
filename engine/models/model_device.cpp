// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/models/model_device.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "engine/data/dataset.h"
#include "engine/models/model.h"

// Same condition as engine/formats/tensor_quantize.cpp: CUDA tensors are quantized by our kernels
// only when they are built in and LibTorch itself was built with CUDA.
#if defined(QUANTLAB_HAVE_CUDA) && __has_include(<c10/cuda/impl/cuda_cmake_macros.h>)
#define QL_MODEL_DEVICE_CUDA 1
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace ql {

CudaAvailability cuda_availability() {
    CudaAvailability a;
    // The CUDA device guard is registered when LibTorch's CUDA library is loaded: false for a
    // CPU-only LibTorch (Debian's), and for a CUDA LibTorch linked as torch_cpu alone.
    a.torch_has_cuda = c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA);
#if defined(QL_MODEL_DEVICE_CUDA)
    a.quantlab_has_cuda = true;
    if (a.torch_has_cuda) a.gpus = static_cast<int>(c10::cuda::device_count());
#endif
    return a;
}

at::Device torch_device(const ComputeDevice& device) {
    if (!device.is_cuda()) return at::Device(at::kCPU);
    check_compute_device(device, cuda_availability());
    return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device.index));
}

at::Device torch_device(const std::string& device_text) { return torch_device(parse_compute_device(device_text)); }

at::Device model_device(const Model& model) {
    for (const auto& [name, t] : model.named_parameters())
        if (t.defined()) return t.device();
    return at::Device(at::kCPU);
}

void move_model(Model& model, at::Device device) {
    for (auto& [name, t] : model.named_parameters())
        if (t.defined() && t.device() != device) t.set_data(t.to(device));
}

at::Tensor on_model_device(const Model& model, const at::Tensor& t) {
    if (!t.defined()) return t;
    return t.to(model_device(model));
}

Dataset batch_on_model_device(const Model& model, const Dataset& batch) {
    const at::Device device = model_device(model);
    Dataset b = batch;
    for (at::Tensor* t : {&b.inputs, &b.targets, &b.domains, &b.attention_mask})
        if (t->defined()) *t = t->to(device);
    return b;
}

}  // namespace ql
