// SPDX-License-Identifier: GPL-3.0-or-later
// The fast block-diagonal Walsh–Hadamard kernel against the scalar reference (bit for bit) and
// against the dense Sylvester matrix in double precision (the definition itself).
#include "kernels/hadamard.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "kernels/reference/reference_hadamard.h"
#include "tests/kernels/test_data.h"

namespace ql::kernels {
namespace {

std::vector<float> random_signs(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<float> s(static_cast<size_t>(n));
    for (float& v : s) v = (rng() & 1u) ? 1.0f : -1.0f;
    return s;
}

std::vector<float> fast(const std::vector<float>& x, int64_t rows, int64_t cols, int64_t block,
                        const std::vector<float>& signs = {}) {
    std::vector<float> y(x.size(), -7.0f);
    hadamard_rows(x.data(), y.data(), HadamardLayout{rows, cols, block}, signs.empty() ? nullptr : signs.data());
    return y;
}

// Sylvester entry: H[i][j] = (-1)^popcount(i & j).
double sylvester(int64_t i, int64_t j) { return __builtin_popcountll(static_cast<unsigned long long>(i & j)) % 2 ? -1.0 : 1.0; }

TEST(HadamardKernel, FastEqualsReferenceBitForBit) {
    struct Case {
        int64_t rows, cols, block;
    };
    for (const Case& c : {Case{3, 1, 1}, Case{5, 2, 2}, Case{7, 4, 4}, Case{9, 8, 8}, Case{11, 16, 16}, Case{13, 64, 64},
                          Case{4, 192, 64}, Case{6, 384, 128}, Case{2, 512, 512}, Case{3, 1536, 512}, Case{2, 4096, 4096},
                          Case{2, 12, 4}, Case{5, 96, 32}, Case{3, 192, 16}}) {
        SCOPED_TRACE(testing::Message() << c.rows << "x" << c.cols << " block " << c.block);
        const auto x = test::mixed_tensor(c.rows, c.cols, static_cast<uint32_t>(c.cols + c.block));
        EXPECT_TRUE(test::same_bits(fast(x, c.rows, c.cols, c.block), reference::hadamard_rows(x, c.rows, c.cols, c.block)));
        const auto s = random_signs(c.cols, 7);
        EXPECT_TRUE(test::same_bits(fast(x, c.rows, c.cols, c.block, s),
                                    reference::hadamard_rows(x, c.rows, c.cols, c.block, s)));
    }
}

TEST(HadamardKernel, MatchesTheDenseSylvesterMatrix) {
    const int64_t rows = 3, cols = 192, block = 64;
    const auto x = test::mixed_tensor(rows, cols, 3);
    const auto s = random_signs(cols, 11);
    const auto y = fast(x, rows, cols, block, s);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t b0 = 0; b0 < cols; b0 += block)
            for (int64_t i = 0; i < block; ++i) {
                double want = 0, scale = 0;
                for (int64_t j = 0; j < block; ++j) {
                    const double v = static_cast<double>(x[static_cast<size_t>(r * cols + b0 + j)]) * s[static_cast<size_t>(b0 + j)];
                    want += sylvester(i, j) * v;
                    scale += std::fabs(v);
                }
                want /= std::sqrt(static_cast<double>(block));
                // float32 butterflies: log2(block) roundings of partial sums no larger than sum |v|.
                EXPECT_NEAR(y[static_cast<size_t>(r * cols + b0 + i)], want, 1e-6 * scale + 1e-30)
                    << "row " << r << " element " << b0 + i;
            }
}

TEST(HadamardKernel, IsOrthogonalAndItsOwnInverse) {
    const int64_t rows = 4, cols = 384, block = 128;
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(rows * cols));
    for (float& v : x) v = normal(rng);
    const auto y = fast(x, rows, cols, block);
    const auto back = fast(y, rows, cols, block);
    for (int64_t r = 0; r < rows; ++r) {
        double nx = 0, ny = 0;
        for (int64_t c = 0; c < cols; ++c) {
            nx += static_cast<double>(x[static_cast<size_t>(r * cols + c)]) * x[static_cast<size_t>(r * cols + c)];
            ny += static_cast<double>(y[static_cast<size_t>(r * cols + c)]) * y[static_cast<size_t>(r * cols + c)];
        }
        EXPECT_NEAR(ny / nx, 1.0, 1e-6);
    }
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(back[i], x[i], 2e-6f * (1.0f + std::fabs(x[i])));
    // A block's indicator spreads evenly: H e_0 / sqrt(b) = (1, ..., 1) / sqrt(b).
    std::vector<float> e(128, 0.0f);
    e[0] = 1.0f;
    for (float v : fast(e, 1, 128, 128)) EXPECT_EQ(v, hadamard_scale(128));
}

TEST(HadamardKernel, InPlaceEqualsOutOfPlace) {
    const int64_t rows = 70, cols = 320, block = 64;
    auto x = test::mixed_tensor(rows, cols, 9);
    const auto s = random_signs(cols, 2);
    const auto y = fast(x, rows, cols, block, s);
    hadamard_rows(x.data(), x.data(), HadamardLayout{rows, cols, block}, s.data());
    EXPECT_TRUE(test::same_bits(x, y));
}

TEST(HadamardKernel, NonFiniteValuesStayInTheirBlock) {
    std::vector<float> x(32, 1.0f);
    x[3] = std::nanf("");
    const auto y = fast(x, 1, 32, 16);
    for (int i = 0; i < 16; ++i) EXPECT_TRUE(std::isnan(y[static_cast<size_t>(i)])) << i;
    for (int i = 16; i < 32; ++i) EXPECT_TRUE(std::isfinite(y[static_cast<size_t>(i)])) << i;
    EXPECT_TRUE(test::same_values(y, reference::hadamard_rows(x, 1, 32, 16)));
}

TEST(HadamardKernel, BlockHelpersFollowModelOptimizer) {
    EXPECT_EQ(largest_power_of_two_divisor(192), 64);
    EXPECT_EQ(largest_power_of_two_divisor(1536), 512);
    EXPECT_EQ(largest_power_of_two_divisor(7), 1);
    EXPECT_EQ(default_hadamard_block(512), 512);
    EXPECT_EQ(default_hadamard_block(384), 128);
    EXPECT_TRUE(is_power_of_two(1));
    EXPECT_FALSE(is_power_of_two(0));
    EXPECT_FALSE(is_power_of_two(96));
    EXPECT_EQ(hadamard_scale(16), 0.25f);
    EXPECT_THROW(largest_power_of_two_divisor(0), std::invalid_argument);
}

TEST(HadamardKernel, BadLayoutsAreRefused) {
    std::vector<float> x(96, 1.0f);
    EXPECT_THROW(hadamard_rows(x.data(), x.data(), HadamardLayout{1, 96, 48}), std::invalid_argument);  // not 2^k
    EXPECT_THROW(hadamard_rows(x.data(), x.data(), HadamardLayout{1, 96, 64}), std::invalid_argument);  // does not divide
    EXPECT_THROW(hadamard_rows(x.data(), x.data(), HadamardLayout{-1, 96, 32}), std::invalid_argument);
    EXPECT_NO_THROW(hadamard_rows(x.data(), x.data(), HadamardLayout{0, 96, 48}));  // empty: nothing to check
}

}  // namespace
}  // namespace ql::kernels
