// SPDX-License-Identifier: GPL-3.0-or-later
// Which elements a quantizer saturates: those lying outside the range its scale can represent.
// The straight-through estimator with clip_gradient (straight_through.h) passes no gradient
// there, as Model Optimizer's fake-quant backward does (grad where |x| <= amax, else 0).
#pragma once

#include <ATen/core/Tensor.h>

#include "engine/formats/format_codec.h"

namespace ql {

// A bool tensor of x's shape (on x's device; computed on the host): true where the element lies
// strictly outside its quantizer's representable range. x: any float dtype, any strides, made
// float32 first like fake_quantize. Per family (FORMATS.md; the arithmetic is the kernels' own):
// - int, fp8 with a per-tensor fixed_amax (tensor granularity, or a channel axis of size 1):
//   |x| > fixed_amax (symmetric and asymmetric alike: the range is [-amax, amax]). Otherwise the
//   scale comes from x's own channel / group amax or range and nothing saturates.
// - nvfp4: |x / d| > 6, with d = E4M3(block_amax / (6 g)) * g the block's denominator as
//   kernels/nvfp4_block.h computes it (g from fixed_amax when set). With a fixed amax smaller
//   than the tensor's, blocks whose scale saturates at 448 clip above 6 * 448 * g; with any amax
//   a block maximum clips by up to 6.25 % when its E4M3 scale rounded down. A block whose scale
//   underflows to 0 outputs zeros: that is underflow, not saturation (false).
// - mx (floor and rceil rules): |x * 2^-e| > the element's largest value, e the block's E8M0
//   exponent; false in a NaN/Inf block (it decodes to NaN entirely).
// - nf4 (scaled by the block's own absmax), passthrough formats: nothing saturates.
// NaN elements are never saturated; +-Inf are wherever a finite limit exists.
// Throws UserError for GGUF formats (Q4_0/Q5_0 clamp the side opposite the block's signed
// maximum; not modelled here).
at::Tensor saturated_elements(const at::Tensor& x, const QuantSpec& spec);

}  // namespace ql
