// SPDX-License-Identifier: GPL-3.0-or-later
// A tensor as a float32 NdArray (a copy), for the .npy files the peer scripts read.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "engine/core/nd_array.h"

namespace ql::test {

inline NdArray float_array(const at::Tensor& t) {
    const at::Tensor c = t.to(at::kFloat).contiguous();
    return NdArray::from_floats(std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel()), c.sizes().vec());
}

}  // namespace ql::test
