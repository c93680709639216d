// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/gguf_iquant_cpu.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/cpu_dispatch.h"
#include "kernels/gguf_iquant_encode.h"
#include "kernels/magnitude_bits.h"
#include "kernels/parallel.h"

namespace ql::kernels {
namespace {

using namespace iquant;

template <class Visitor>
void visit_iquant_type(GgufType t, const Visitor& v) {
    switch (t) {
        case GgufType::IQ2_XXS: v(std::integral_constant<GgufType, GgufType::IQ2_XXS>{}); return;
        case GgufType::IQ2_XS: v(std::integral_constant<GgufType, GgufType::IQ2_XS>{}); return;
        case GgufType::IQ2_S: v(std::integral_constant<GgufType, GgufType::IQ2_S>{}); return;
        case GgufType::IQ3_XXS: v(std::integral_constant<GgufType, GgufType::IQ3_XXS>{}); return;
        case GgufType::IQ3_S: v(std::integral_constant<GgufType, GgufType::IQ3_S>{}); return;
        case GgufType::IQ1_S: v(std::integral_constant<GgufType, GgufType::IQ1_S>{}); return;
        case GgufType::IQ1_M: v(std::integral_constant<GgufType, GgufType::IQ1_M>{}); return;
        case GgufType::TQ1_0: v(std::integral_constant<GgufType, GgufType::TQ1_0>{}); return;
        case GgufType::TQ2_0: v(std::integral_constant<GgufType, GgufType::TQ2_0>{}); return;
        default: throw std::logic_error("not an i-quant / ternary GGUF type");
    }
}

// The lattice a type searches (IQ1_M shares IQ1_S's); none for the ternary types.
bool lattice_of(GgufType t, Lattice* l) {
    switch (t) {
        case GgufType::IQ2_XXS: *l = Lattice::IQ2_XXS; return true;
        case GgufType::IQ2_XS: *l = Lattice::IQ2_XS; return true;
        case GgufType::IQ2_S: *l = Lattice::IQ2_S; return true;
        case GgufType::IQ3_XXS: *l = Lattice::IQ3_XXS; return true;
        case GgufType::IQ3_S: *l = Lattice::IQ3_S; return true;
        case GgufType::IQ1_S:
        case GgufType::IQ1_M: *l = Lattice::IQ1_S; return true;
        default: return false;
    }
}

// One super-block: x (256 values, any) with per-element importance qw (or nullptr) -> y.
template <GgufType T>
QL_INLINE void encode_block(const float* x, const float* qw, uint8_t* y) {
    float xs[QK_K];
    bool nonfinite = false;
    for (int i = 0; i < QK_K; ++i) {
        const bool bad = magnitude_bits(x[i]) >= kInfBits;
        nonfinite |= bad;
        xs[i] = bad ? 0.0f : x[i];
    }
    if constexpr (T == GgufType::TQ1_0 || T == GgufType::TQ2_0) {
        uint8_t trits[QK_K];
        const float d = ternary_trits(xs, trits);
        if (nonfinite)
            for (int i = 0; i < QK_K; ++i)
                if (magnitude_bits(x[i]) == kInfBits) trits[i] = x[i] > 0 ? 2 : 0;
        if constexpr (T == GgufType::TQ1_0) pack_tq1_0(trits, d, y);
        if constexpr (T == GgufType::TQ2_0) pack_tq2_0(trits, d, y);
    } else {
        if constexpr (T == GgufType::IQ2_XXS) encode_iq2_xxs(xs, qw, y);
        if constexpr (T == GgufType::IQ2_XS) encode_iq2_xs_s<false>(xs, qw, y);
        if constexpr (T == GgufType::IQ2_S) encode_iq2_xs_s<true>(xs, qw, y);
        if constexpr (T == GgufType::IQ3_XXS) encode_iq3_xxs(xs, qw, y);
        if constexpr (T == GgufType::IQ3_S) encode_iq3_s(xs, qw, y);
        if constexpr (T == GgufType::IQ1_S) encode_iq1_s(xs, qw, y);
        if constexpr (T == GgufType::IQ1_M) encode_iq1_m(xs, qw, y);
    }
}

// Blocks [b0, b1) of a tensor whose rows hold bpr blocks.
template <GgufType T>
QL_CPU_CLONES void encode_range(const float* x, uint8_t* out, int64_t b0, int64_t b1, int64_t bpr, const float* importance) {
    constexpr int B = iq_block_bytes(T);
    for (int64_t b = b0; b < b1; ++b)
        encode_block<T>(x + b * QK_K, importance ? importance + (b % bpr) * QK_K : nullptr, out + b * B);
}

// Work units [u0, u1) of fake quantization: unit u is block u % bpr of row u / bpr; a short row
// tail is padded with zeros (importance 0), NaN inputs stay NaN. x and y may be the same buffer.
template <GgufType T>
QL_CPU_CLONES void fake_range(const float* x, float* y, const RowBlocks& L, int64_t u0, int64_t u1, const float* importance) {
    const int64_t bpr = (L.cols + QK_K - 1) / QK_K;
    float in[QK_K], qw[QK_K], dec[QK_K];
    uint8_t bytes[iq_block_bytes(T)];
    for (int64_t u = u0; u < u1; ++u) {
        const int64_t r = u / bpr, first = (u % bpr) * QK_K;
        const int64_t len = std::min<int64_t>(QK_K, L.cols - first);
        const float* xr = x + r * L.cols + first;
        for (int i = 0; i < QK_K; ++i) {
            in[i] = i < len ? xr[i] : 0.0f;
            if (importance) qw[i] = i < len ? importance[first + i] : 0.0f;
        }
        encode_block<T>(in, importance ? qw : nullptr, bytes);
        decode_iquant(T, bytes, dec);
        float* yr = y + r * L.cols + first;
        for (int64_t i = 0; i < len; ++i) yr[i] = is_nan_bits(in[i]) ? in[i] : dec[i];
    }
}

void check_importance(GgufType t, const float* importance) {
    if (!importance && iq_requires_importance(t))
        throw std::invalid_argument(std::string(t == GgufType::IQ2_XXS ? "IQ2_XXS" : t == GgufType::IQ2_XS ? "IQ2_XS" : "IQ1_S") +
                                    " requires importance weights (ggml_quantize_requires_imatrix)");
}

// The search tables, built before the threads start (each build is itself threaded).
void prepare(GgufType t) {
    Lattice l;
    if (lattice_of(t, &l)) lattice_search(l);
}

}  // namespace

void iquant_quantize_cpu(const float* x, int64_t rows, int64_t cols, GgufType t, uint8_t* blocks, const float* importance) {
    if (!gguf_uses_importance(t)) importance = nullptr;
    check_importance(t, importance);
    prepare(t);
    const int64_t bpr = cols / QK_K;
    visit_iquant_type(t, [&](auto type) {
        parallel_ranges(rows * bpr, 1, 1, [&](int64_t b0, int64_t b1) {
            encode_range<decltype(type)::value>(x, blocks, b0, b1, bpr, importance);
        });
    });
}

void iquant_dequantize_cpu(const uint8_t* blocks, int64_t rows, int64_t cols, GgufType t, float* y) {
    const int64_t nb = rows * (cols / QK_K), bb = iq_block_bytes(t);
    parallel_ranges(nb, 64, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) decode_iquant(t, blocks + b * bb, y + b * QK_K);
    });
}

void iquant_fake_quant_cpu(const float* x, float* y, const RowBlocks& L, GgufType t, const float* importance) {
    if (!gguf_uses_importance(t)) importance = nullptr;
    check_importance(t, importance);
    prepare(t);
    const int64_t units = L.rows * ((L.cols + QK_K - 1) / QK_K);
    visit_iquant_type(t, [&](auto type) {
        parallel_ranges(units, 1, 1, [&](int64_t u0, int64_t u1) {
            fake_range<decltype(type)::value>(x, y, L, u0, u1, importance);
        });
    });
}

}  // namespace ql::kernels
