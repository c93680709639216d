// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/formats/tensor_values.h"

#include <ATen/Functions.h>

#include "engine/core/nd_array.h"

namespace ql {

std::string shape_text(const at::Tensor& t) { return shape_string(std::vector<int64_t>(t.sizes().begin(), t.sizes().end())); }

std::vector<double> to_doubles(const at::Tensor& t) {
    const at::Tensor c = t.to(at::kCPU, at::kDouble).contiguous().reshape({-1});  // read on the host
    return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

}  // namespace ql
