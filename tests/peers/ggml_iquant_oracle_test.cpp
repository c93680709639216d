// SPDX-License-Identifier: GPL-3.0-or-later
// The i-quants and ternary types against llama.cpp's decoders (the peers venv's libggml-base.so,
// tests/peers/ggml_library.h): ggml's to_float on blocks crafted to select every point of every
// lattice with varied signs, sub-block scales and shifts -- the grids written into QuantLab
// (kernels/gguf_iquant_grids.h) checked entry by entry against ggml's, whose tables are not
// exported symbols -- and on the blocks our kernels write. The bytes are compared with
// ggml_quantize_chunk's by scripts/check-kquants (ctest peers.gguf_formats_cli_vs_ggml), the fast
// kernels with the scalar transcription by tests/kernels (GgufIQuants.*). Fails (does not skip)
// when the library cannot be loaded.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/gguf_blocks.h"
#include "kernels/reference/reference_iquants.h"
#include "tests/kernels/test_data.h"
#include "tests/peers/ggml_library.h"

namespace ql::kernels {
namespace {

using test::GgmlLibrary;
using reference::IQuant;

struct TypeCase {
    GgufType type;
    IQuant ref;
    int ggml;
    const char* name;
    int points;  // lattice points (0: ternary)
};
const TypeCase kTypes[] = {{GgufType::IQ2_XXS, IQuant::IQ2_XXS, GgmlLibrary::IQ2_XXS, "IQ2_XXS", 256},
                           {GgufType::IQ2_XS, IQuant::IQ2_XS, GgmlLibrary::IQ2_XS, "IQ2_XS", 512},
                           {GgufType::IQ2_S, IQuant::IQ2_S, GgmlLibrary::IQ2_S, "IQ2_S", 1024},
                           {GgufType::IQ3_XXS, IQuant::IQ3_XXS, GgmlLibrary::IQ3_XXS, "IQ3_XXS", 256},
                           {GgufType::IQ3_S, IQuant::IQ3_S, GgmlLibrary::IQ3_S, "IQ3_S", 512},
                           {GgufType::IQ1_S, IQuant::IQ1_S, GgmlLibrary::IQ1_S, "IQ1_S", 2048},
                           {GgufType::IQ1_M, IQuant::IQ1_M, GgmlLibrary::IQ1_M, "IQ1_M", 2048},
                           {GgufType::TQ1_0, IQuant::TQ1_0, GgmlLibrary::TQ1_0, "TQ1_0", 0},
                           {GgufType::TQ2_0, IQuant::TQ2_0, GgmlLibrary::TQ2_0, "TQ2_0", 0}};

// Rows of every kind in one matrix (rows never interact): normal, heavy-tailed, all-zero (both
// zeros), tiny, huge, subnormal, outliers, constant, coarse (many ties), mixed magnitudes.
constexpr int kKinds = 10;
const char* const kKindNames[kKinds] = {"normal", "heavy-tailed", "all-zero", "tiny (1e-20)", "huge (1e9)",
                                        "subnormal", "outliers", "constant", "coarse (ties)", "mixed"};

std::vector<float> rows_of_every_kind(int64_t rows_per_kind, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::student_t_distribution<float> heavy(2.0f);
    const auto mixed = test::mixed_tensor(rows_per_kind, cols, seed);
    std::vector<float> x(static_cast<size_t>(kKinds * rows_per_kind * cols));
    for (int k = 0; k < kKinds; ++k)
        for (int64_t i = 0; i < rows_per_kind * cols; ++i) {
            float v = 0;
            switch (k) {
                case 0: v = normal(rng); break;
                case 1: v = heavy(rng); break;
                case 2: v = (rng() & 1) ? 0.0f : -0.0f; break;
                case 3: v = normal(rng) * 1e-20f; break;
                case 4: v = normal(rng) * 1e9f; break;
                case 5: v = test::float_of(static_cast<uint32_t>(rng() & 0x801FFFFFu)); break;
                case 6: v = (rng() % 97 == 0) ? normal(rng) * 300.0f : normal(rng) * 0.02f; break;
                case 7: v = -0.8125f; break;
                case 8: v = std::round(normal(rng) * 3.0f) * 0.25f; break;
                default: v = mixed[static_cast<size_t>(i)]; break;
            }
            x[static_cast<size_t>(k * rows_per_kind * cols + i)] = v;
        }
    return x;
}

std::vector<float> importance_for(int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::lognormal_distribution<float> d(0.0f, 1.5f);
    std::vector<float> w(static_cast<size_t>(cols));
    for (auto& v : w) v = d(rng);
    for (int64_t c = 0; c < cols; c += 37) w[static_cast<size_t>(c)] = 0.0f;  // columns never read
    return w;
}

// Our bytes of every kind of row, with importance, decode in ggml as they decode here. (The bytes
// themselves are compared with ggml_quantize_chunk's by scripts/check-kquants through the CLI,
// peers.gguf_formats_cli_vs_ggml: ggml builds its IQ search tables in ~10 s per run, once there.)
TEST(GgmlIQuantOracle, OurBlocksDecodeAsGgmlsToFloat) {
    const GgmlLibrary& ggml = GgmlLibrary::get();
    const int64_t per_kind = 2, cols = 512, rows = kKinds * per_kind;
    const auto x = rows_of_every_kind(per_kind, cols, 501);
    const auto imp = importance_for(cols, 502);
    for (const auto& t : kTypes) {
        SCOPED_TRACE(t.name);
        std::vector<uint8_t> bytes(static_cast<size_t>(rows * (cols / 256) * gguf_type_size(t.type)));
        gguf_quantize(x.data(), rows, cols, t.type, bytes.data(), imp.data());
        std::vector<float> y(x.size());
        gguf_dequantize(bytes.data(), rows, cols, t.type, y.data());
        EXPECT_TRUE(test::same_values(y, ggml.dequantize(t.ggml, bytes.data(), rows, cols)));
    }
}

void put16(uint8_t* p, unsigned v) {
    p[0] = static_cast<uint8_t>(v & 0xFF);
    p[1] = static_cast<uint8_t>((v >> 8) & 0xFF);
}
void put32(uint8_t* p, uint32_t v) {
    for (int k = 0; k < 4; ++k) p[k] = static_cast<uint8_t>(v >> (8 * k));
}

// Blocks whose point indices run through the whole lattice (group g of the run selects point g),
// every other field random: signs, sub-block scales, shifts, and an fp16 d in [0.5, 2).
std::vector<uint8_t> lattice_blocks(GgufType t, int points, int64_t* nblocks) {
    const int groups = t == GgufType::IQ3_XXS || t == GgufType::IQ3_S ? 64 : 32;  // point indices per block
    *nblocks = points ? points / groups : 8;
    const int64_t bb = gguf_type_size(t);
    std::vector<uint8_t> out(static_cast<size_t>(*nblocks * bb));
    std::mt19937 rng(static_cast<uint32_t>(points * 7 + bb));
    for (auto& b : out) b = static_cast<uint8_t>(rng());
    for (int64_t b = 0; b < *nblocks; ++b) {
        uint8_t* y = out.data() + b * bb;
        const unsigned d = 0x3800u + (rng() & 0x07FF);  // fp16 in [0.5, 2)
        if (t != GgufType::IQ1_M && t != GgufType::TQ1_0 && t != GgufType::TQ2_0) put16(y, d);
        for (int g = 0; g < groups; ++g) {
            const unsigned p = static_cast<unsigned>(b * groups + g);
            switch (t) {
                case GgufType::IQ2_XXS: y[2 + 8 * (g / 4) + g % 4] = static_cast<uint8_t>(p); break;
                case GgufType::IQ2_XS: put16(y + 2 + 2 * g, p | ((p * 37u % 128u) << 9)); break;
                case GgufType::IQ2_S:
                    y[2 + g] = static_cast<uint8_t>(p);
                    y[66 + g / 4] = static_cast<uint8_t>((y[66 + g / 4] & ~(3u << (2 * (g % 4)))) | (((p >> 8) & 3u) << (2 * (g % 4))));
                    break;
                case GgufType::IQ3_XXS: y[2 + g] = static_cast<uint8_t>(p); break;
                case GgufType::IQ3_S:
                    y[2 + g] = static_cast<uint8_t>(p);
                    y[66 + g / 8] = static_cast<uint8_t>((y[66 + g / 8] & ~(1u << (g % 8))) | (((p >> 8) & 1u) << (g % 8)));
                    break;
                case GgufType::IQ1_S: {
                    y[2 + g] = static_cast<uint8_t>(p);
                    uint8_t* qh = y + 34 + 2 * (g / 4);
                    unsigned h = static_cast<unsigned>(qh[0] | (qh[1] << 8));
                    h = (h & ~(7u << (3 * (g % 4)))) | (((p >> 8) & 7u) << (3 * (g % 4)));
                    put16(qh, h);
                    break;
                }
                case GgufType::IQ1_M: {
                    y[g] = static_cast<uint8_t>(p);
                    uint8_t& qh = y[32 + g / 2];
                    qh = static_cast<uint8_t>((qh & ~(7u << (4 * (g % 2)))) | (((p >> 8) & 7u) << (4 * (g % 2))));
                    break;
                }
                default: break;
            }
        }
        if (t == GgufType::IQ2_XXS || t == GgufType::IQ3_XXS)  // all 128 sign patterns across the run
            for (int ib = 0; ib < 8; ++ib) {
                uint32_t aux = static_cast<uint32_t>(rng()) & 0xF0000000u;
                for (int l = 0; l < 4; ++l) aux |= ((static_cast<uint32_t>(b * 32 + ib * 4 + l) * 37u) % 128u) << (7 * l);
                put32(y + (t == GgufType::IQ2_XXS ? 6 + 8 * ib : 66 + 4 * ib), aux);
            }
        if (t == GgufType::IQ1_M) {  // d's nibbles in the top of the four scale words
            for (int k = 0; k < 4; ++k) {
                const unsigned w = static_cast<unsigned>(y[48 + 2 * k] | (y[49 + 2 * k] << 8));
                put16(y + 48 + 2 * k, (w & 0x0FFFu) | (((d >> (4 * k)) & 0xFu) << 12));
            }
        }
        if (t == GgufType::TQ1_0) put16(y + 52, d);
        if (t == GgufType::TQ2_0) put16(y + 64, d);
        if (t == GgufType::TQ1_0 || t == GgufType::TQ2_0)  // every byte value in every position class
            for (int j = 0; j < (t == GgufType::TQ1_0 ? 52 : 64); ++j) y[j] = static_cast<uint8_t>(b * 64 + j * 5);
    }
    return out;
}

TEST(GgmlIQuantOracle, EveryLatticePointAndSignPatternDecodesAsGgmlsToFloat) {
    const GgmlLibrary& ggml = GgmlLibrary::get();
    for (const auto& t : kTypes) {
        SCOPED_TRACE(t.name);
        int64_t nblocks = 0;
        const auto bytes = lattice_blocks(t.type, t.points, &nblocks);
        std::vector<float> ours(static_cast<size_t>(nblocks * 256));
        gguf_dequantize(bytes.data(), nblocks, 256, t.type, ours.data());
        const auto theirs = ggml.dequantize(t.ggml, bytes.data(), nblocks, 256);
        EXPECT_TRUE(test::same_values(ours, theirs));
        EXPECT_TRUE(test::same_values(reference::iquant_dequantize(bytes, nblocks, 256, t.ref), theirs));
        int nonzero = 0;
        for (float v : theirs) nonzero += v != 0.0f;
        EXPECT_GT(nonzero, static_cast<int>(theirs.size() / 2));  // the crafted scales are not zero
    }
}

}  // namespace
}  // namespace ql::kernels
