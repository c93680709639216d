// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/nf4.h"

#include <vector>

#include "kernels/block_iteration.h"
#include "kernels/cpu_dispatch.h"
#include "kernels/magnitude_bits.h"

namespace ql::kernels {
namespace {

// Largest float s in [lo, hi] (lo < hi adjacent codebook values) for which
// fl(s - lo) <= fl(hi - s): the argmin still picks the lower index. The predicate is monotone in
// s (both differences are monotone and rounding is monotone), so bisection over the ordered
// float keys finds it exactly.
float tie_threshold(float lo, float hi) {
    int32_t a = sortable_key(lo), b = sortable_key(hi);  // P(lo) true, P(hi) false
    while (b - a > 1) {
        const int32_t m = a + (b - a) / 2;
        const float s = from_sortable_key(m);
        const float dl = abs_bits(s - lo);
        const float dh = abs_bits(s - hi);
        if (dl <= dh)
            a = m;
        else
            b = m;
    }
    return from_sortable_key(a);
}

std::vector<float> thresholds_of(const float* book, int n) {
    std::vector<float> t(static_cast<size_t>(n - 1));
    for (int i = 0; i + 1 < n; ++i) t[i] = tie_threshold(book[i], book[i + 1]);
    return t;
}

inline float nf4_scale_inverse(float absmax) {
    const float floor_value = 1e-38f;
    return 1.0f / (absmax > floor_value ? absmax : floor_value);
}

inline float clamp_unit(float s) { return s < -1.0f ? -1.0f : (s > 1.0f ? 1.0f : s); }

// Branch-free nearest code: count thresholds below s; the value is selected alongside.
struct Nf4Rounder {
    float t[15];
    float book[16];

    Nf4Rounder() {
        const float* th = nf4_thresholds();
        for (int i = 0; i < 15; ++i) t[i] = th[i];
        for (int i = 0; i < 16; ++i) book[i] = kNf4Codebook[i];
    }
    int code(float s) const {
        int c = 0;
        for (int i = 0; i < 15; ++i) c += s > t[i] ? 1 : 0;
        return c;
    }
    float value(float s) const {
        float v = book[0];
        for (int i = 0; i < 15; ++i) v = s > t[i] ? book[i + 1] : v;
        return v;
    }
};

inline float block_absmax(const float* x, int64_t len) {
    uint32_t m = 0;
    for (int64_t i = 0; i < len; ++i) {
        const uint32_t a = finite_magnitude_bits(x[i]);
        m = a > m ? a : m;
    }
    return bits_float(m);
}

QL_CPU_CLONES
void fake_quant_range(const float* __restrict x, float* __restrict y, int64_t len, float absmax,
                      const Nf4Rounder& r) {
    const float inv = nf4_scale_inverse(absmax);
    for (int64_t i = 0; i < len; ++i) {
        const float v = x[i];
        const float q = r.value(clamp_unit(v * inv)) * absmax;
        y[i] = is_nan_bits(v) ? v : q;
    }
}

QL_CPU_CLONES
void fake_quant_blocks64(const float* __restrict x, float* __restrict y, int64_t nblocks, const Nf4Rounder& r) {
    for (int64_t b = 0; b < nblocks; ++b) {
        const float* xb = x + b * kNf4Block;
        float* yb = y + b * kNf4Block;
        const float absmax = block_absmax(xb, kNf4Block);
        const float inv = nf4_scale_inverse(absmax);
        for (int i = 0; i < kNf4Block; ++i) {
            const float v = xb[i];
            const float q = r.value(clamp_unit(v * inv)) * absmax;
            yb[i] = is_nan_bits(v) ? v : q;
        }
    }
}

const Nf4Rounder& rounder() {
    static const Nf4Rounder r;
    return r;
}

}  // namespace

const float kNf4Codebook[16] = {
    -1.0f,
    -0.6961928009986877f,
    -0.5250730514526367f,
    -0.39491748809814453f,
    -0.28444138169288635f,
    -0.18477343022823334f,
    -0.09105003625154495f,
    0.0f,
    0.07958029955625534f,
    0.16093020141124725f,
    0.24611230194568634f,
    0.33791524171829224f,
    0.44070982933044434f,
    0.5626170039176941f,
    0.7229568362236023f,
    1.0f,
};

const float* nf4_thresholds() {
    static const std::vector<float> t = thresholds_of(kNf4Codebook, 16);
    return t.data();
}

const float* dynamic_map_thresholds() {
    static const std::vector<float> t = thresholds_of(kDynamicMapSigned, 256);
    return t.data();
}

int nf4_code_of(float s) { return rounder().code(s); }

int dynamic_map_code_of(float s) {
    // Binary search over the 255 thresholds: code = number of thresholds < s.
    const float* t = dynamic_map_thresholds();
    if (is_nan_bits(s)) return 0;
    int lo = 0, hi = 255;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (s > t[mid])
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void nf4_fake_quant(const float* x, float* y, int64_t n, int64_t block) {
    const Nf4Rounder& r = rounder();
    const RowBlocks L{1, n, block};
    if (block == kNf4Block && n % block == 0) {
        parallel_ranges(n / block, 512, 1, [&](int64_t b0, int64_t b1) {
            fake_quant_blocks64(x + b0 * block, y + b0 * block, b1 - b0, r);
        });
        return;
    }
    parallel_ranges(L.block_count(), std::max<int64_t>(1, 32768 / block), 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            const int64_t off = b * block, len = std::min(block, n - off);
            fake_quant_range(x + off, y + off, len, block_absmax(x + off, len), r);
        }
    });
}

void nf4_encode(const float* x, int64_t n, int64_t block, uint8_t* codes, float* absmax) {
    const Nf4Rounder& r = rounder();
    const int64_t nb = (n + block - 1) / block;
    parallel_ranges(nb, std::max<int64_t>(1, 32768 / block), 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            const int64_t off = b * block, len = std::min(block, n - off);
            const float am = block_absmax(x + off, len);
            absmax[b] = am;
            const float inv = nf4_scale_inverse(am);
            for (int64_t i = 0; i < len; ++i)
                codes[off + i] = static_cast<uint8_t>(r.code(clamp_unit(x[off + i] * inv)));
        }
    });
}

void nf4_decode(const uint8_t* codes, const float* absmax, int64_t n, int64_t block, float* y) {
    const int64_t nb = (n + block - 1) / block;
    parallel_ranges(nb, std::max<int64_t>(1, 32768 / block), 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
            const int64_t off = b * block, len = std::min(block, n - off);
            const float am = absmax[b];
            for (int64_t i = 0; i < len; ++i) y[off + i] = kNf4Codebook[codes[off + i] & 15u] * am;
        }
    });
}

void nf4_double_quant(const float* absmax, int64_t nblocks, uint8_t* codes8, float* absmax2, float* offset) {
    // The mean is accumulated in double and rounded once: bitsandbytes takes torch.mean of the
    // float32 absmax (a pairwise float32 sum), which agrees except possibly in the last bit.
    double sum = 0.0;
    for (int64_t i = 0; i < nblocks; ++i) sum += absmax[i];
    const float off = nblocks > 0 ? static_cast<float>(sum / static_cast<double>(nblocks)) : 0.0f;
    *offset = off;
    const int64_t nb2 = (nblocks + kNf4DoubleQuantBlock - 1) / kNf4DoubleQuantBlock;
    std::vector<float> centred(static_cast<size_t>(nblocks));
    for (int64_t i = 0; i < nblocks; ++i) centred[i] = absmax[i] - off;
    for (int64_t b = 0; b < nb2; ++b) {
        const int64_t o = b * kNf4DoubleQuantBlock;
        const int64_t len = std::min(kNf4DoubleQuantBlock, nblocks - o);
        const float a2 = block_absmax(centred.data() + o, len);
        absmax2[b] = a2;
        // As bitsandbytes: 1 / absmax without a floor, so an all-equal block (a2 = 0) yields
        // NaN scaled values and code 0; it still decodes to the offset because a2 = 0.
        const float inv = 1.0f / a2;
        for (int64_t i = 0; i < len; ++i)
            codes8[o + i] = static_cast<uint8_t>(dynamic_map_code_of(clamp_unit(centred[o + i] * inv)));
    }
}

void nf4_double_dequant(const uint8_t* codes8, const float* absmax2, float offset, int64_t nblocks,
                        float* absmax_out) {
    for (int64_t i = 0; i < nblocks; ++i)
        absmax_out[i] = kDynamicMapSigned[codes8[i]] * absmax2[i / kNf4DoubleQuantBlock] + offset;
}

void nf4_fake_quant_double(const float* x, float* y, int64_t n, int64_t block) {
    const int64_t nb = (n + block - 1) / block;
    std::vector<uint8_t> codes(static_cast<size_t>(n));
    std::vector<float> absmax(static_cast<size_t>(nb)), absmax_dq(static_cast<size_t>(nb));
    std::vector<uint8_t> codes8(static_cast<size_t>(nb));
    std::vector<float> absmax2(static_cast<size_t>((nb + kNf4DoubleQuantBlock - 1) / kNf4DoubleQuantBlock));
    float offset = 0.0f;
    nf4_encode(x, n, block, codes.data(), absmax.data());
    nf4_double_quant(absmax.data(), nb, codes8.data(), absmax2.data(), &offset);
    nf4_double_dequant(codes8.data(), absmax2.data(), offset, nb, absmax_dq.data());
    nf4_decode(codes.data(), absmax_dq.data(), n, block, y);
    for (int64_t i = 0; i < n; ++i)
        if (is_nan_bits(x[i])) y[i] = x[i];
}

}  // namespace ql::kernels
