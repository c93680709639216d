// SPDX-License-Identifier: GPL-3.0-or-later
// Every decoded value is scale * level with ggml's own float32 operations: the sub-block scale
// as dequantize_row_* forms it (e.g. d * (0.5f + s) * 0.25f), times the signed lattice level
// (ggml multiplies by the level, then by +-1, which is the same product), or times g + delta
// (exact in float32) for IQ1, or (t - 1) for TQ.
#include "kernels/gguf_iquant_codec.h"

namespace ql::kernels::iquant {
namespace {

using kquant::load_fp16;

constexpr float kIq2Values[6] = {-43, -25, -8, 8, 25, 43};
constexpr float kIq3xxsValues[16] = {-62, -52, -44, -36, -28, -20, -12, -4, 4, 12, 20, 28, 36, 44, 52, 62};
constexpr float kIq3sValues[16] = {-15, -13, -11, -9, -7, -5, -3, -1, 1, 3, 5, 7, 9, 11, 13, 15};
constexpr float kIq1Values[6] = {-1 - kIq1Delta, -1 + kIq1Delta, -kIq1Delta, kIq1Delta, 1 - kIq1Delta, 1 + kIq1Delta};
// TQ2_0's 2-bit code 3 is never written; ggml decodes it as d (3 - 1).
constexpr float kTernaryValues[4] = {-1, 0, 1, 2};

// Code of level index l (of `levels` per sign) with a minus sign or not.
inline uint8_t signed_code(int l, bool minus, int levels) {
    return static_cast<uint8_t>(minus ? levels - 1 - l : levels + l);
}

// Codes of one group of 8 (or 4) coordinates of point `point`.
inline void group_codes(const int8_t* pl, int point, int dims, unsigned signs, int levels, uint8_t* codes) {
    for (int c = 0; c < dims; ++c) codes[c] = signed_code(pl[point * dims + c], (signs >> c) & 1, levels);
}

}  // namespace

int iquant_code_values(GgufType t, const float** values) {
    switch (t) {
        case GgufType::IQ2_XXS:
        case GgufType::IQ2_XS:
        case GgufType::IQ2_S: *values = kIq2Values; return 6;
        case GgufType::IQ3_XXS: *values = kIq3xxsValues; return 16;
        case GgufType::IQ3_S: *values = kIq3sValues; return 16;
        case GgufType::IQ1_S:
        case GgufType::IQ1_M: *values = kIq1Values; return 6;
        case GgufType::TQ2_0: *values = kTernaryValues; return 4;
        default: *values = kTernaryValues; return 3;
    }
}

void unpack_iquant(GgufType t, const uint8_t* y, uint8_t* codes, float* scales) {
    switch (t) {
        case GgufType::IQ2_XXS: {
            const int8_t* pl = point_levels(Lattice::IQ2_XXS);
            const float d = load_fp16(y);
            for (int ib = 0; ib < 8; ++ib) {
                const uint32_t points = get_u32(y + 2 + 8 * ib), aux = get_u32(y + 6 + 8 * ib);
                scales[ib] = d * (0.5f + static_cast<float>(aux >> 28)) * 0.25f;
                for (int l = 0; l < 4; ++l)
                    group_codes(pl, (points >> (8 * l)) & 255, 8, ksigns_iq2xs((aux >> (7 * l)) & 127), 3, codes + 32 * ib + 8 * l);
            }
            return;
        }
        case GgufType::IQ2_XS: {
            const int8_t* pl = point_levels(Lattice::IQ2_XS);
            const float d = load_fp16(y);
            for (int ib = 0; ib < 16; ++ib) scales[ib] = d * (0.5f + static_cast<float>((y[66 + ib / 2] >> (4 * (ib % 2))) & 0xF)) * 0.25f;
            for (int g = 0; g < 32; ++g) {
                const uint32_t q = get_u16(y + 2 + 2 * g);
                group_codes(pl, static_cast<int>(q & 511), 8, ksigns_iq2xs(static_cast<int>(q >> 9)), 3, codes + 8 * g);
            }
            return;
        }
        case GgufType::IQ2_S: {
            const int8_t* pl = point_levels(Lattice::IQ2_S);
            const float d = load_fp16(y);
            for (int ib = 0; ib < 16; ++ib) scales[ib] = d * (0.5f + static_cast<float>((y[74 + ib / 2] >> (4 * (ib % 2))) & 0xF)) * 0.25f;
            for (int g = 0; g < 32; ++g) {
                const int point = y[2 + g] | ((y[66 + g / 4] << (8 - 2 * (g % 4))) & 0x300);
                group_codes(pl, point, 8, y[34 + g], 3, codes + 8 * g);
            }
            return;
        }
        case GgufType::IQ3_XXS: {
            const int8_t* pl = point_levels(Lattice::IQ3_XXS);
            const float d = load_fp16(y);
            for (int ib = 0; ib < 8; ++ib) {
                const uint32_t aux = get_u32(y + 66 + 4 * ib);
                scales[ib] = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
                for (int l = 0; l < 4; ++l) {
                    const unsigned signs = ksigns_iq2xs((aux >> (7 * l)) & 127);
                    group_codes(pl, y[2 + 8 * ib + 2 * l], 4, signs, 8, codes + 32 * ib + 8 * l);
                    group_codes(pl, y[2 + 8 * ib + 2 * l + 1], 4, signs >> 4, 8, codes + 32 * ib + 8 * l + 4);
                }
            }
            return;
        }
        case GgufType::IQ3_S: {
            const int8_t* pl = point_levels(Lattice::IQ3_S);
            const float d = load_fp16(y);
            for (int ib = 0; ib < 8; ++ib) {
                scales[ib] = d * static_cast<float>(1 + 2 * ((y[106 + ib / 2] >> (4 * (ib % 2))) & 0xF));
                for (int l = 0; l < 4; ++l) {
                    const unsigned signs = y[74 + 4 * ib + l];
                    const int qh = y[66 + ib];
                    group_codes(pl, y[2 + 8 * ib + 2 * l] | ((qh << (8 - 2 * l)) & 256), 4, signs, 8, codes + 32 * ib + 8 * l);
                    group_codes(pl, y[2 + 8 * ib + 2 * l + 1] | ((qh << (7 - 2 * l)) & 256), 4, signs >> 4, 8,
                                codes + 32 * ib + 8 * l + 4);
                }
            }
            return;
        }
        case GgufType::IQ1_S: {
            const int8_t* pl = point_levels(Lattice::IQ1_S);
            const float d = load_fp16(y);
            for (int ib = 0; ib < 8; ++ib) {
                const uint32_t qh = get_u16(y + 34 + 2 * ib);
                scales[ib] = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
                const int plus = qh & 0x8000 ? 0 : 1;
                for (int l = 0; l < 4; ++l) {
                    const int point = y[2 + 4 * ib + l] | (((qh >> (3 * l)) & 7) << 8);
                    for (int j = 0; j < 8; ++j) codes[32 * ib + 8 * l + j] = static_cast<uint8_t>(2 * pl[point * 8 + j] + plus);
                }
            }
            return;
        }
        case GgufType::IQ1_M: {
            const int8_t* pl = point_levels(Lattice::IQ1_S);
            uint32_t sc[4];
            for (int k = 0; k < 4; ++k) sc[k] = get_u16(y + 48 + 2 * k);
            const uint16_t du = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000));
            const float d = fp16_bits_to_fp32(du);
            for (int ib = 0; ib < 16; ++ib) {  // 16-element halves of ggml's 32-blocks
                scales[ib] = d * static_cast<float>(2 * ((sc[ib / 4] >> (3 * (ib % 4))) & 0x7) + 1);
                const int qh = y[32 + ib];
                for (int k = 0; k < 2; ++k) {
                    const int point = y[2 * ib + k] | ((qh << (8 - 4 * k)) & 0x700);
                    const int plus = qh & (k == 0 ? 0x08 : 0x80) ? 0 : 1;
                    for (int j = 0; j < 8; ++j) codes[16 * ib + 8 * k + j] = static_cast<uint8_t>(2 * pl[point * 8 + j] + plus);
                }
            }
            return;
        }
        case GgufType::TQ1_0: {
            scales[0] = load_fp16(y + 52);
            static constexpr uint8_t pow3[5] = {1, 3, 9, 27, 81};
            auto trit = [](uint8_t byte, int n) {  // ((uint8)(q 3^n) * 3) >> 8
                const uint8_t q = static_cast<uint8_t>(byte * pow3[n]);
                return static_cast<uint8_t>((static_cast<unsigned>(q) * 3) >> 8);
            };
            for (int n = 0; n < 5; ++n)
                for (int m = 0; m < 32; ++m) codes[32 * n + m] = trit(y[m], n);
            for (int n = 0; n < 5; ++n)
                for (int m = 0; m < 16; ++m) codes[160 + 16 * n + m] = trit(y[32 + m], n);
            for (int n = 0; n < 4; ++n)
                for (int j = 0; j < 4; ++j) codes[240 + 4 * n + j] = trit(y[48 + j], n);
            return;
        }
        case GgufType::TQ2_0: {
            scales[0] = load_fp16(y + 64);
            for (int j = 0; j < 2; ++j)
                for (int l = 0; l < 4; ++l)
                    for (int m = 0; m < 32; ++m) codes[128 * j + 32 * l + m] = (y[32 * j + m] >> (2 * l)) & 3;
            return;
        }
        default: return;
    }
}

void decode_iquant(GgufType t, const uint8_t* y, float* out) {
    uint8_t codes[256];
    float scales[16];
    unpack_iquant(t, y, codes, scales);
    const float* values;
    iquant_code_values(t, &values);
    const int sub = iq_sub_block(t);
    for (int e = 0; e < 256; ++e) out[e] = scales[e / sub] * values[codes[e]];
}

GgufBlockFields iquant_block_fields(GgufType t, const uint8_t* y) {
    GgufBlockFields f;
    f.sub_blocks = 256 / iq_sub_block(t);
    switch (t) {
        case GgufType::IQ2_XXS:
        case GgufType::IQ3_XXS:
            f.d = load_fp16(y);
            f.scale_bits = 4;
            for (int ib = 0; ib < 8; ++ib) f.scales[ib] = static_cast<int>(get_u32(y + (t == GgufType::IQ2_XXS ? 6 + 8 * ib : 66 + 4 * ib)) >> 28);
            break;
        case GgufType::IQ2_XS:
        case GgufType::IQ2_S:
            f.d = load_fp16(y);
            f.scale_bits = 4;
            for (int ib = 0; ib < 16; ++ib) f.scales[ib] = (y[(t == GgufType::IQ2_XS ? 66 : 74) + ib / 2] >> (4 * (ib % 2))) & 0xF;
            break;
        case GgufType::IQ3_S:
            f.d = load_fp16(y);
            f.scale_bits = 4;
            for (int ib = 0; ib < 8; ++ib) f.scales[ib] = (y[106 + ib / 2] >> (4 * (ib % 2))) & 0xF;
            break;
        case GgufType::IQ1_S:
            f.d = load_fp16(y);
            f.scale_bits = 3;
            for (int ib = 0; ib < 8; ++ib) f.scales[ib] = static_cast<int>((get_u16(y + 34 + 2 * ib) >> 12) & 7);
            break;
        case GgufType::IQ1_M: {
            uint32_t sc[4];
            for (int k = 0; k < 4; ++k) sc[k] = get_u16(y + 48 + 2 * k);
            f.d = fp16_bits_to_fp32(static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000)));
            f.scale_bits = 3;
            for (int ib = 0; ib < 16; ++ib) f.scales[ib] = static_cast<int>((sc[ib / 4] >> (3 * (ib % 4))) & 7);
            break;
        }
        case GgufType::TQ1_0: f.d = load_fp16(y + 52); break;
        case GgufType::TQ2_0: f.d = load_fp16(y + 64); break;
        default: break;
    }
    return f;
}

}  // namespace ql::kernels::iquant
