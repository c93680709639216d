// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF fake quantization (encode + decode to float32 in one pass) of Q8_0, Q4_0, Q5_0 and MXFP4
// written with AVX2/FMA/F16C intrinsics, in the shape of the AVX2 Q4_0 encoder
// (gguf_q4_0_avx2.h): per tile of eight 32-blocks, the block statistics and scales in one vector
// lane each, then every block's codes decoded in registers and written as floats (non-temporal
// stores for outputs too large to stay in cache). The same values, bit for bit, as the portable
// path of gguf_fake_quant (gguf_blocks.cpp: gguf_block_tiles.h / gguf_codec::fake_quant_block),
// which is also the definition the CUDA kernels share; blocks holding NaN/Inf, signed-max ties
// and blocks whose 1/d overflows (or, for MXFP4, whose E8M0 scale is subnormal) go to that
// portable block function. Tested against encode-then-decode in
// tests/kernels/gguf_fake_avx2_test.cpp.
#pragma once

#include <cstdint>

#include "kernels/gguf_blocks.h"

namespace ql::kernels {

// True when this build has these kernels and this CPU runs them (AVX2, FMA and F16C).
bool gguf_fake_avx2_available();

// Whether gguf_fake_quant_avx2 handles type t (Q8_0, Q4_0, Q5_0, MXFP4).
bool gguf_fake_avx2_handles(GgufType t);

// x, y: nblocks * 32 floats each; y may be x (in place) but must not otherwise overlap it.
// log2_thresholds: gguf_log2_round_up_thresholds() (read by MXFP4). Call only when
// gguf_fake_avx2_available() and gguf_fake_avx2_handles(t).
void gguf_fake_quant_avx2(GgufType t, const float* x, float* y, int64_t nblocks, const float* log2_thresholds);

}  // namespace ql::kernels
