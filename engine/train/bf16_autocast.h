// SPDX-License-Identifier: GPL-3.0-or-later
// `train --precision bf16`: while an object lives, CUDA operators autocast to bfloat16 as
// torch.autocast("cuda", dtype=torch.bfloat16) does (matrix products in bfloat16, reductions and
// losses in float32); parameters and optimizer state stay float32 (the master weights).
#pragma once

#include <c10/core/ScalarType.h>

namespace ql {

class CudaBf16Autocast {
public:
    CudaBf16Autocast();
    ~CudaBf16Autocast();  // restores the previous state; clears the cast cache at the outermost exit
    CudaBf16Autocast(const CudaBf16Autocast&) = delete;
    CudaBf16Autocast& operator=(const CudaBf16Autocast&) = delete;

private:
    bool was_enabled_ = false;
    at::ScalarType was_dtype_ = at::kHalf;
};

}  // namespace ql
