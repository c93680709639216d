// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF Q4_1 and Q5_1 encoders (the 32-blocks with a minimum) written with AVX2/FMA/F16C
// intrinsics: the same bytes as the portable block encoders (gguf_codec::q4_1_encode in
// gguf_block_codec.h; encode_block in gguf_q5_1.cpp, ggml's quantize_row_q5_1_ref), which
// gguf_quantize / gguf_q5_1_quantize use where the CPU lacks the instructions. Eight blocks at a
// time: min and max of each block in one vector lane, d = (max - min) / (2^bits - 1), 1/d and the
// fp16 fields for all eight at once, then codes trunc((x - min) * (1/d) + 0.5) two blocks at a time.
// Blocks the lanes do not cover exactly (NaN/Inf elements, a zero minimum or maximum, whose sign
// rules ggml's first-wins loop sets, a d that is zero, subnormal or not finite) go to the portable
// encoder. Tested byte for byte against it in tests/kernels/gguf_min_avx2_test.cpp.
#pragma once

#include <cstdint>

namespace ql::kernels {

// True when this build has these encoders and this CPU runs them (AVX2, FMA and F16C).
bool gguf_min_avx2_available();

// x: nblocks * 32 floats; out: nblocks * 20 bytes (fp16 d, fp16 m, 16 bytes of nibbles).
void quantize_q4_1_avx2(const float* x, uint8_t* out, int64_t nblocks);

// x: nblocks * 32 floats; out: nblocks * 24 bytes (fp16 d, fp16 m, u32 qh, 16 bytes of nibbles).
// portable_block: the portable encoder of one block (gguf_q5_1.cpp's), for the blocks above.
void quantize_q5_1_avx2(const float* x, uint8_t* out, int64_t nblocks, void (*portable_block)(const float*, uint8_t*));

}  // namespace ql::kernels
