// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/core/compute_device.h"

#include <cctype>

#include "engine/core/errors.h"

namespace ql {

std::string ComputeDevice::text() const { return is_cuda() ? "cuda:" + std::to_string(index) : "cpu"; }

ComputeDevice parse_compute_device(const std::string& text) {
    ComputeDevice d;
    if (text.empty() || text == "cpu") return d;
    d.kind = ComputeDevice::Kind::Cuda;
    if (text == "cuda") return d;
    const std::string prefix = "cuda:";
    const bool prefixed = text.compare(0, prefix.size(), prefix) == 0;
    const std::string digits = prefixed ? text.substr(prefix.size()) : std::string();
    // At most 4 digits: an ordinal, not a number stoi could overflow on.
    bool ordinal = prefixed && !digits.empty() && digits.size() <= 4;
    for (const char c : digits) ordinal = ordinal && std::isdigit(static_cast<unsigned char>(c));
    if (!ordinal) throw UserError("--device: expected cpu, cuda or cuda:N, got '" + text + "'");
    d.index = std::stoi(digits);
    return d;
}

void check_compute_device(const ComputeDevice& device, const CudaAvailability& available) {
    if (!device.is_cuda()) return;
    const std::string what = "--device: " + device.text() + " needs CUDA, but ";
    if (!available.torch_has_cuda) throw UserError(what + "this LibTorch was built without CUDA (use --device cpu)");
    if (!available.quantlab_has_cuda)
        throw UserError(what + "this QuantLab was built without its CUDA kernels (configure with -DQUANTLAB_CUDA=ON)");
    if (available.gpus <= 0) throw UserError(what + "no CUDA GPU is visible (check CUDA_VISIBLE_DEVICES and the driver)");
    if (device.index >= available.gpus)
        throw UserError("--device: " + device.text() + " but only " + std::to_string(available.gpus) +
                        (available.gpus == 1 ? " GPU is" : " GPUs are") + " visible (cuda:0" +
                        (available.gpus > 1 ? " to cuda:" + std::to_string(available.gpus - 1) : std::string()) + ")");
}

}  // namespace ql
