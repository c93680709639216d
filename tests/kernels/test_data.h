// SPDX-License-Identifier: GPL-3.0-or-later
// Shared inputs and comparisons for the kernel tests.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace ql::test {

inline uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

inline float float_of(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// Normal data with a per-row magnitude that spans many binades, plus the cases FORMATS.md names:
// zeros, all-equal rows, a huge outlier, denormals. No NaN/Inf (tests add those explicitly).
inline std::vector<float> mixed_tensor(int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> exp_dist(-30, 20);
    std::vector<float> x(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r) {
        const float mag = std::ldexp(1.0f, exp_dist(rng));
        const int kind = static_cast<int>(r % 7);
        for (int64_t c = 0; c < cols; ++c) {
            float v = normal(rng) * mag;
            if (kind == 1) v = 0.0f;
            if (kind == 2) v = 0.75f * mag;
            if (kind == 3 && c == cols / 3) v = 1e4f * mag;
            if (kind == 4) v = float_of(static_cast<uint32_t>(rng() & 0x807FFFFFu));  // denormals
            x[static_cast<size_t>(r * cols + c)] = v;
        }
    }
    return x;
}

// Equal as values (so -0 == +0) or both NaN.
inline ::testing::AssertionResult same_values(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes " << a.size() << " vs " << b.size();
    for (size_t i = 0; i < a.size(); ++i) {
        const bool both_nan = std::isnan(a[i]) && std::isnan(b[i]);
        if (!both_nan && !(a[i] == b[i]))
            return ::testing::AssertionFailure() << "element " << i << ": " << a[i] << " (0x" << std::hex
                                                 << bits_of(a[i]) << ") vs " << std::dec << b[i] << " (0x" << std::hex
                                                 << bits_of(b[i]) << ")";
    }
    return ::testing::AssertionSuccess();
}

// Bit-for-bit equality (for statistics, where the sign of a zero is part of the result).
inline ::testing::AssertionResult same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes " << a.size() << " vs " << b.size();
    for (size_t i = 0; i < a.size(); ++i)
        if (bits_of(a[i]) != bits_of(b[i]))
            return ::testing::AssertionFailure() << "element " << i << ": 0x" << std::hex << bits_of(a[i]) << " vs 0x"
                                                 << bits_of(b[i]);
    return ::testing::AssertionSuccess();
}

template <class T>
::testing::AssertionResult same_items(const std::vector<T>& a, const std::vector<T>& b) {
    if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes " << a.size() << " vs " << b.size();
    for (size_t i = 0; i < a.size(); ++i)
        if (!(a[i] == b[i]))
            return ::testing::AssertionFailure() << "item " << i << ": " << +a[i] << " vs " << +b[i];
    return ::testing::AssertionSuccess();
}

}  // namespace ql::test
