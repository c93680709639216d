// SPDX-License-Identifier: GPL-3.0-or-later
// Shared by the GGUF K-quant and i-quant engine tests: seeded normal weights and the spec a
// format resolves to for a shape.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/formats/format_codec.h"

namespace ql::test {

// n values from N(0, scale²), reproducible from the seed (std::mt19937).
inline std::vector<float> normal_values(int64_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = d(rng);
    return v;
}

inline QuantSpec spec_of(const std::string& format, const std::vector<int64_t>& shape) {
    QuantOptions o;
    o.format = format;
    return resolve_spec(o, shape);
}

}  // namespace ql::test
