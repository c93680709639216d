// SPDX-License-Identifier: GPL-3.0-or-later
// Plain scalar reference implementations written straight from shared/design/FORMATS.md, with
// none of the fast kernels' tricks: element rounding by searching the decoded grid and
// comparing with exact midpoints, scales by frexp, integer rounding by std::nearbyint, nearest
// codebook entries by a literal argmin. The fast CPU and CUDA kernels are tested against these
// bit for bit (the ggml/llama.cpp `_ref` habit, STYLE.md).
#pragma once

#include <cstdint>
#include <vector>

namespace ql::kernels::reference {

enum class Element { E4M3, E5M2, E3M2, E2M3, E2M1 };

// Value of a code by the textbook formula (sign, biased exponent, mantissa; subnormals at e=0).
float element_value(Element e, unsigned code);
// Largest finite value and the number of codes (2^bits).
float element_max(Element e);
unsigned element_code_count(Element e);
// Nearest finite grid value, ties to the even code, saturating; NaN -> the NaN rule.
unsigned element_encode(Element e, float x);

struct Encoded {
    std::vector<float> values;    // dequantized, one per element
    std::vector<uint8_t> codes;   // one per element
    std::vector<float> scales;    // decoded scales, per block / channel / tensor
    std::vector<uint8_t> scale_codes;  // E4M3 / E8M0 bytes where the format has them
    float global_scale = 0.0f;
};

// [rows, cols] with blocks along cols; the last block of a row may be short.
Encoded nvfp4(const std::vector<float>& x, int64_t rows, int64_t cols, float global_scale);
// element: E4M3..E2M1, or int8 when mx_int8 is true. round_up: the rceil scale rule.
Encoded mx(const std::vector<float>& x, int64_t rows, int64_t cols, Element element, bool mx_int8,
           bool round_up, int64_t block = 32);
// Per-tensor FP8 (E4M3 or E5M2).
Encoded fp8_tensor(const std::vector<float>& x, Element element);
// Integer: group > 0 groups along cols; group == 0 per row ("channel" = axis 0 of [rows, cols]);
// group < 0 per tensor.
Encoded integer(const std::vector<float>& x, int64_t rows, int64_t cols, int bits, bool asymmetric,
                int64_t group);
// NF4 over the flattened tensor, literal argmin.
Encoded nf4(const std::vector<float>& x, int64_t block, const float codebook[16]);

enum class Gguf { Q8_0, Q4_0, Q4_1, Q5_0, MXFP4 };
// ggml's quantize_row_*_ref transcribed (float32, each operation rounded on its own; literal
// argmin for MXFP4 with std::log2f; the integer casts of x86 where 1/d overflows or the E8M0
// exponent is negative). Returns raw block bytes and values. K-quants: reference_kquants.h.
struct GgufEncoded {
    std::vector<uint8_t> bytes;
    std::vector<float> values;
};
GgufEncoded gguf(const std::vector<float>& x, int64_t rows, int64_t cols, Gguf type);

}  // namespace ql::kernels::reference
