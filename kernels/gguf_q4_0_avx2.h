// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF Q4_0 and Q5_0 encoders written with AVX2/FMA/F16C intrinsics: the same bytes as
// gguf_codec::q4_0_encode / q5_0_encode (gguf_block_codec.h, which the CUDA kernels share), several
// times faster than what GCC makes of those portable loops. gguf_quantize (gguf_blocks.cpp) uses
// them when q4_0_avx2_available() says the CPU has the instructions, and the portable loops otherwise.
#pragma once

#include <cstdint>

namespace ql::kernels {

// True when this build has the AVX2 encoder and this CPU runs it (AVX2, FMA and F16C).
bool q4_0_avx2_available();

// x: nblocks * 32 floats; out: nblocks * 18 bytes (fp16 d, then 16 bytes of nibbles), byte for
// byte what gguf_codec::q4_0_encode writes block by block. Call only when q4_0_avx2_available().
void quantize_q4_0_avx2(const float* x, uint8_t* out, int64_t nblocks);

// x: nblocks * 32 floats; out: nblocks * 22 bytes (fp16 d, u32 qh, 16 bytes of low nibbles), byte
// for byte what gguf_codec::q5_0_encode writes block by block. Call only when q4_0_avx2_available().
void quantize_q5_0_avx2(const float* x, uint8_t* out, int64_t nblocks);

}  // namespace ql::kernels
