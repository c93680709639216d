// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/bf16_autocast.h"

#include <ATen/autocast_mode.h>
#include <torch/csrc/api/include/torch/version.h>

// LibTorch 2.4 made the autocast switches per device type (set_autocast_enabled(kCUDA, ...)) and
// deprecated the CUDA-only ones (set_enabled, set_autocast_gpu_dtype) that 1.13 has alone.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define QL_AUTOCAST_PER_DEVICE 1
#endif

namespace ql {

CudaBf16Autocast::CudaBf16Autocast() {
#if defined(QL_AUTOCAST_PER_DEVICE)
    was_enabled_ = at::autocast::is_autocast_enabled(at::kCUDA);
    was_dtype_ = at::autocast::get_autocast_dtype(at::kCUDA);
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
#else
    was_enabled_ = at::autocast::is_enabled();
    was_dtype_ = at::autocast::get_autocast_gpu_dtype();
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
#endif
    at::autocast::increment_nesting();
}

CudaBf16Autocast::~CudaBf16Autocast() {
    // The casts of the weights are cached for the region (one bfloat16 copy per step); the cache
    // must go when the outermost region ends, as torch.autocast's __exit__ does.
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
#if defined(QL_AUTOCAST_PER_DEVICE)
    at::autocast::set_autocast_enabled(at::kCUDA, was_enabled_);
    at::autocast::set_autocast_dtype(at::kCUDA, was_dtype_);
#else
    at::autocast::set_enabled(was_enabled_);
    at::autocast::set_autocast_gpu_dtype(was_dtype_);
#endif
}

}  // namespace ql
