// SPDX-License-Identifier: GPL-3.0-or-later
// Range statistics that per-tensor and per-channel scales are computed from. All of them skip
// NaN and +-Inf (FORMATS.md: the amax ignores NaN; an Inf is saturated by the element encoder,
// not allowed to blow up the scale of every other element).
#pragma once

#include <cstdint>

#include "kernels/tensor_layout.h"

namespace ql::kernels {

// max |x| over finite x (0 when there is none).
float finite_absmax(const float* x, int64_t n);

// min(0, finite x) and max(0, finite x).
void finite_range(const float* x, int64_t n, float* min_out, float* max_out);

// Per channel of L: out[c] = max |x| over finite x of channel c. out has L.channels floats.
void channel_finite_absmax(const float* x, const ChannelLayout& L, float* out);

// Per channel: min(0, finite x) and max(0, finite x). Each output has L.channels floats.
void channel_finite_range(const float* x, const ChannelLayout& L, float* mins, float* maxs);

}  // namespace ql::kernels
