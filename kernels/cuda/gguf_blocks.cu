// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF block formats on the device: kernels/gguf_blocks.cpp transcribed function by function,
// one thread per 32-element block (the per-block logic -- signed max with first-index ties,
// Q4_1's min/max, element j and j+16 sharing a byte -- stays literally the CPU's). The log2
// threshold table behind MXFP4's floor(log2f) is the CPU's host table, copied once per device.
#include <climits>
#include <type_traits>

#include "kernels/cuda/block_drivers.cuh"
#include "kernels/cuda_kernels.h"
#include "kernels/half_precision.h"

namespace ql::kernels::cuda {
namespace {

using namespace detail;

constexpr int B = static_cast<int>(kGgufBlock);
constexpr int H = B / 2;

__constant__ float c_log2_thresholds[277];

PerDeviceOnce tables_uploaded;

void upload_tables() {
    tables_uploaded.run([] {
        check(cudaMemcpyToSymbol(c_log2_thresholds, ql::kernels::gguf_log2_round_up_thresholds(),
                                 sizeof(c_log2_thresholds)),
              "GGUF log2 table");
    });
}

// What x86-64's cvttss2si (the CPU kernels' float -> int cast) returns: NaN and out-of-range
// values give INT_MIN. ggml's arithmetic produces NaN for +-Inf in a block whose scale is 0; the
// CPU then casts it, and the code bits it keeps must be reproduced here. Shifts of the result
// are done on unsigned values (the CPU's `INT_MIN << 4` is 0 on x86).
QL_HD int to_int_x86(float v) {
    return (v >= -2147483648.0f && v < 2147483648.0f) ? static_cast<int>(v) : INT_MIN;
}
QL_HD uint32_t to_bits_x86(float v) { return static_cast<uint32_t>(to_int_x86(v)); }

QL_HD void store_fp16(uint8_t* p, float v) {
    const uint16_t h = fp32_to_fp16_bits(v);
    p[0] = static_cast<uint8_t>(h & 0xFF);
    p[1] = static_cast<uint8_t>(h >> 8);
}
QL_HD float load_fp16(const uint8_t* p) { return fp16_bits_to_fp32(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

QL_HD float round_half_away(float v) {
    const float a = abs_bits(v);
    float t = rne_small(a);
    t = t > a ? t - 1.0f : t;  // floor(a)
    t = (a - t) >= 0.5f ? t + 1.0f : t;
    return copy_sign_of(t, v);
}

QL_HD float trunc_nonneg(float v) {
    const float r = rne_small(v);
    return r > v ? r - 1.0f : r;
}

QL_HD float clampf(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

QL_HD float safe_inverse(float d) {
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    return is_finite_bits(id) ? id : 0.0f;
}

QL_HD float signed_max(const float* x) {
    float best = 0.0f;
    uint32_t best_mag = 0;
    for (int i = 0; i < B; ++i) {
        const uint32_t m = finite_magnitude_bits(x[i]);
        if (m > best_mag) {
            best_mag = m;
            best = x[i];
        }
    }
    return best;
}

QL_HD uint32_t finite_absmax_bits(const float* x) {
    uint32_t m = 0;
    for (int i = 0; i < B; ++i) {
        const uint32_t a = finite_magnitude_bits(x[i]);
        m = a > m ? a : m;
    }
    return m;
}

// ---- Q8_0 ---------------------------------------------------------------------------------------
QL_HD void q8_0_block(const float* x, uint8_t* out) {
    const float d = bits_float(finite_absmax_bits(x)) / 127.0f;
    const float id = safe_inverse(d);
    store_fp16(out, d);
    for (int i = 0; i < B; ++i) {
        const float v = is_nan_bits(x[i]) ? 0.0f : clampf(x[i] * id, -127.0f, 127.0f);
        out[2 + i] = static_cast<uint8_t>(to_bits_x86(round_half_away(v)));
    }
}

QL_HD void q8_0_decode(const uint8_t* in, float* y) {
    const float d = load_fp16(in);
    for (int i = 0; i < B; ++i) y[i] = static_cast<float>(static_cast<int8_t>(in[2 + i])) * d;
}

// ---- Q4_0 / Q5_0 ----------------------------------------------------------------------------------
template <int LEVELS>  // 16 or 32
QL_HD void offset_codes(const float* x, float* q, float* d_out) {
    const float mx = signed_max(x);
    const float d = mx / -static_cast<float>(LEVELS / 2);
    const float id = safe_inverse(d);
    const float bias = static_cast<float>(LEVELS / 2) + 0.5f;
    for (int i = 0; i < B; ++i) {
        // The CPU's std::fma: one rounding, as gguf-py (float64) and ggml native builds give.
        const float t = is_nan_bits(x[i]) ? bias : clampf(fmaf(x[i], id, bias), 0.0f, static_cast<float>(LEVELS));
        const float c = trunc_nonneg(t);
        q[i] = c > static_cast<float>(LEVELS - 1) ? static_cast<float>(LEVELS - 1) : c;
    }
    *d_out = d;
}

QL_HD void q4_0_block(const float* x, uint8_t* out) {
    float q[B], d;
    offset_codes<16>(x, q, &d);
    store_fp16(out, d);
    for (int j = 0; j < H; ++j) out[2 + j] = static_cast<uint8_t>(to_bits_x86(q[j]) | (to_bits_x86(q[j + H]) << 4));
}

QL_HD void q4_0_decode(const uint8_t* in, float* y) {
    const float d = load_fp16(in);
    for (int j = 0; j < H; ++j) {
        y[j] = static_cast<float>((in[2 + j] & 0x0F) - 8) * d;
        y[j + H] = static_cast<float>((in[2 + j] >> 4) - 8) * d;
    }
}

QL_HD void q5_0_block(const float* x, uint8_t* out) {
    float q[B], d;
    offset_codes<32>(x, q, &d);
    store_fp16(out, d);
    uint32_t qh = 0;
    for (int j = 0; j < B; ++j) qh |= ((to_bits_x86(q[j]) >> 4) & 1u) << j;
    for (int k = 0; k < 4; ++k) out[2 + k] = static_cast<uint8_t>(qh >> (8 * k));
    for (int j = 0; j < H; ++j)
        out[6 + j] = static_cast<uint8_t>((to_bits_x86(q[j]) & 0x0Fu) | ((to_bits_x86(q[j + H]) & 0x0Fu) << 4));
}

QL_HD int q5_0_code(const uint8_t* in, int j) {
    const uint32_t qh = in[2] | (in[3] << 8) | (in[4] << 16) | (static_cast<uint32_t>(in[5]) << 24);
    const int lo = j < H ? (in[6 + j] & 0x0F) : (in[6 + j - H] >> 4);
    return lo | static_cast<int>(((qh >> j) & 1u) << 4);
}

QL_HD void q5_0_decode(const uint8_t* in, float* y) {
    const float d = load_fp16(in);
    for (int j = 0; j < B; ++j) y[j] = static_cast<float>(q5_0_code(in, j) - 16) * d;
}

// ---- Q4_1 -----------------------------------------------------------------------------------------
QL_HD void q4_1_block(const float* x, uint8_t* out) {
    int32_t lo = INT32_MAX, hi = INT32_MIN;
    bool any = false;
    for (int i = 0; i < B; ++i) {
        if (magnitude_bits(x[i]) >= kInfBits) continue;
        const int32_t k = sortable_key(x[i]);
        lo = k < lo ? k : lo;
        hi = k > hi ? k : hi;
        any = true;
    }
    const float mn = any ? from_sortable_key(lo) : 0.0f;
    const float mx = any ? from_sortable_key(hi) : 0.0f;
    const float d = (mx - mn) / 15.0f;
    const float id = safe_inverse(d);
    store_fp16(out, d);
    store_fp16(out + 2, mn);
    uint32_t q[B];
    for (int i = 0; i < B; ++i) {
        const float t = is_nan_bits(x[i]) ? 0.0f : clampf((x[i] - mn) * id + 0.5f, 0.0f, 16.0f);
        const float c = trunc_nonneg(t);
        q[i] = to_bits_x86(c > 15.0f ? 15.0f : c);
    }
    for (int j = 0; j < H; ++j) out[4 + j] = static_cast<uint8_t>(q[j] | (q[j + H] << 4));
}

QL_HD void q4_1_decode(const uint8_t* in, float* y) {
    const float d = load_fp16(in), m = load_fp16(in + 2);
    for (int j = 0; j < H; ++j) {
        y[j] = static_cast<float>(in[4 + j] & 0x0F) * d + m;
        y[j + H] = static_cast<float>(in[4 + j] >> 4) * d + m;
    }
}

// ---- MXFP4 (GGUF flavour) -------------------------------------------------------------------------
QL_HD float mxfp4_doubled(int c) {  // {0, 1, 2, 3, 4, 6, 8, 12}[c]
    return c < 5 ? static_cast<float>(c) : (c == 5 ? 6.0f : (c == 6 ? 8.0f : 12.0f));
}

QL_HD int floor_log2_exact(float a) {  // a > 0 finite
    const int e = exponent_field(a);
    if (e > -127) return e;
    uint32_t m = float_bits(a) & 0x7FFFFFu;  // subnormal: a = m * 2^-149
    int p = -1;
    while (m) {
        m >>= 1;
        ++p;
    }
    return p - 149;
}

QL_DEV int gguf_floor_log2f(float a) {
    const int k = floor_log2_exact(a);
    return a >= c_log2_thresholds[k + 149] ? k + 1 : k;
}

QL_DEV uint8_t mxfp4_exponent(float amax) {
    if (!(amax > 0.0f)) return 0;
    const int e = gguf_floor_log2f(amax) - 2 + 127;
    return static_cast<uint8_t>(e < 0 ? 0 : (e > 254 ? 254 : e));
}

QL_HD float mxfp4_d(uint8_t e) { return pow2_any(static_cast<int>(e) - 128); }

QL_HD int mxfp4_code(float x, float d, float inv_d, bool normal_d) {
    if (is_nan_bits(x)) return 0;
    if (normal_d) {
        const float y = abs_bits(x * inv_d);
        int idx = (y > 0.5f) + (y > 1.5f) + (y > 2.5f) + (y > 3.5f) + (y > 5.0f) + (y > 7.0f) + (y > 10.0f);
        return (x < 0.0f && idx > 0) ? 8 + idx : idx;
    }
    int best = 0;
    float best_err = abs_bits(0.0f - x);
    for (int c = 1; c < 16; ++c) {
        const float k = c < 8 ? mxfp4_doubled(c) : -mxfp4_doubled(c - 8);
        const float err = abs_bits(d * k - x);
        if (err < best_err) {
            best_err = err;
            best = c;
        }
    }
    return best;
}

QL_HD float mxfp4_value(int code, float d) {
    const float k = mxfp4_doubled(code & 7);
    return (code & 8) ? -(d * k) : d * k;
}

QL_DEV void mxfp4_block(const float* x, uint8_t* out) {
    const uint8_t e = mxfp4_exponent(bits_float(finite_absmax_bits(x)));
    out[0] = e;
    const float d = mxfp4_d(e);
    const bool normal_d = e >= 2;
    const float inv_d = normal_d ? pow2_normal(128 - static_cast<int>(e)) : 0.0f;
    for (int j = 0; j < H; ++j) {
        int c0 = mxfp4_code(x[j], d, inv_d, normal_d);
        int c1 = mxfp4_code(x[j + H], d, inv_d, normal_d);
        if (!is_nan_bits(x[j]) && magnitude_bits(x[j]) == kInfBits) c0 = x[j] > 0 ? 7 : 15;
        if (!is_nan_bits(x[j + H]) && magnitude_bits(x[j + H]) == kInfBits) c1 = x[j + H] > 0 ? 7 : 15;
        out[1 + j] = static_cast<uint8_t>(c0 | (c1 << 4));
    }
}

QL_HD void mxfp4_decode(const uint8_t* in, float* y) {
    const float d = mxfp4_d(in[0]);
    for (int j = 0; j < H; ++j) {
        y[j] = mxfp4_value(in[1 + j] & 0x0F, d);
        y[j + H] = mxfp4_value(in[1 + j] >> 4, d);
    }
}

// ---- dispatch -----------------------------------------------------------------------------------
template <GgufType T>
QL_DEV void encode_block(const float* x, uint8_t* out) {
    if constexpr (T == GgufType::Q8_0) q8_0_block(x, out);
    if constexpr (T == GgufType::Q4_0) q4_0_block(x, out);
    if constexpr (T == GgufType::Q4_1) q4_1_block(x, out);
    if constexpr (T == GgufType::Q5_0) q5_0_block(x, out);
    if constexpr (T == GgufType::MXFP4) mxfp4_block(x, out);
}

template <GgufType T>
QL_DEV void decode_block(const uint8_t* in, float* y) {
    if constexpr (T == GgufType::Q8_0) q8_0_decode(in, y);
    if constexpr (T == GgufType::Q4_0) q4_0_decode(in, y);
    if constexpr (T == GgufType::Q4_1) q4_1_decode(in, y);
    if constexpr (T == GgufType::Q5_0) q5_0_decode(in, y);
    if constexpr (T == GgufType::MXFP4) mxfp4_decode(in, y);
}

// gguf_type_size as a constant expression (it sizes a local buffer).
constexpr int64_t type_size(GgufType t) {
    return t == GgufType::Q8_0   ? 34
           : t == GgufType::Q4_0 ? 18
           : t == GgufType::Q4_1 ? 20
           : t == GgufType::Q5_0 ? 22
                                 : 17;
}

template <GgufType T>
__global__ void __launch_bounds__(kThreads) quantize_kernel(const float* x, int64_t nblocks, uint8_t* blocks) {
    for (int64_t b = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; b < nblocks;
         b += static_cast<int64_t>(gridDim.x) * kThreads)
        encode_block<T>(x + b * B, blocks + b * type_size(T));
}

template <GgufType T>
__global__ void __launch_bounds__(kThreads) dequantize_kernel(const uint8_t* blocks, int64_t nblocks, float* y) {
    for (int64_t b = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; b < nblocks;
         b += static_cast<int64_t>(gridDim.x) * kThreads)
        decode_block<T>(blocks + b * type_size(T), y + b * B);
}

// gguf_blocks.cpp fake_blocks, with a short row tail padded with zeros.
template <GgufType T>
__global__ void __launch_bounds__(kThreads) fake_quant_kernel(const float* x, float* y, RowGeometry g,
                                                              int64_t nblocks) {
    for (int64_t b = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; b < nblocks;
         b += static_cast<int64_t>(gridDim.x) * kThreads) {
        int64_t off = 0, len = 0;
        g.locate(b, &off, &len);
        float pad[B];
        for (int i = 0; i < B; ++i) pad[i] = i < len ? x[off + i] : 0.0f;
        uint8_t buf[type_size(T)];
        float out[B];
        encode_block<T>(pad, buf);
        decode_block<T>(buf, out);
        for (int i = 0; i < len; ++i) y[off + i] = is_nan_bits(pad[i]) ? pad[i] : out[i];
    }
}

template <class Visitor>
void with_type(GgufType t, const Visitor& v) {
    switch (t) {
        case GgufType::Q8_0: v(std::integral_constant<GgufType, GgufType::Q8_0>{}); return;
        case GgufType::Q4_0: v(std::integral_constant<GgufType, GgufType::Q4_0>{}); return;
        case GgufType::Q4_1: v(std::integral_constant<GgufType, GgufType::Q4_1>{}); return;
        case GgufType::Q5_0: v(std::integral_constant<GgufType, GgufType::Q5_0>{}); return;
        case GgufType::MXFP4: v(std::integral_constant<GgufType, GgufType::MXFP4>{}); return;
    }
    invalid("unknown GGUF type");
}

void require_whole_blocks(int64_t cols) {
    if (cols % B != 0)
        invalid("GGUF rows must be a multiple of 32 elements, got " + std::to_string(cols) + " columns");
}

}  // namespace

void gguf_quantize(const float* x, int64_t rows, int64_t cols, GgufType t, uint8_t* blocks, void* stream) {
    require_whole_blocks(cols);
    const int64_t nb = rows * (cols / B);
    if (nb <= 0) return;
    upload_tables();
    with_type(t, [&](auto type) {
        launch("gguf_quantize", &quantize_kernel<decltype(type)::value>, grid_for(nb, kThreads), stream, x, nb, blocks);
    });
}

void gguf_dequantize(const uint8_t* blocks, int64_t rows, int64_t cols, GgufType t, float* y, void* stream) {
    require_whole_blocks(cols);
    const int64_t nb = rows * (cols / B);
    if (nb <= 0) return;
    with_type(t, [&](auto type) {
        launch("gguf_dequantize", &dequantize_kernel<decltype(type)::value>, grid_for(nb, kThreads), stream, blocks,
               nb, y);
    });
}

void gguf_fake_quant(const float* x, float* y, const RowBlocks& L, GgufType t, void* stream) {
    if (L.block != kGgufBlock) invalid("GGUF blocks are 32 elements, got L.block = " + std::to_string(L.block));
    const int64_t nb = L.block_count();
    if (nb <= 0 || L.elements() == 0) return;
    upload_tables();
    with_type(t, [&](auto type) {
        launch("gguf_fake_quant", &fake_quant_kernel<decltype(type)::value>, grid_for(nb, kThreads), stream, x, y,
               RowGeometry::of(L.cols, L.block), nb);
    });
}

}  // namespace ql::kernels::cuda
