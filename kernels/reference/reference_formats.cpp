// SPDX-License-Identifier: GPL-3.0-or-later
#include "kernels/reference/reference_formats.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

namespace ql::kernels::reference {
namespace {

struct Layout {
    int e, m, bias;
    unsigned max_code;  // magnitude code of max finite
    bool fp8;           // NaN keeps sign and maps to 0x7F
};

Layout layout_of(Element e) {
    switch (e) {
        case Element::E4M3: return {4, 3, 7, 0x7E, true};
        case Element::E5M2: return {5, 2, 15, 0x7B, true};
        case Element::E3M2: return {3, 2, 3, 0x1F, false};
        case Element::E2M3: return {2, 3, 1, 0x1F, false};
        case Element::E2M1: return {2, 1, 1, 0x7, false};
    }
    return {4, 3, 7, 0x7E, true};
}

float bits_to_float(uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

float quiet_nan() { return std::numeric_limits<float>::quiet_NaN(); }

}  // namespace

float element_value(Element el, unsigned code) {
    const Layout L = layout_of(el);
    const unsigned bits = 1 + L.e + L.m;
    const bool neg = (code >> (bits - 1)) & 1u;
    const unsigned ef = (code >> L.m) & ((1u << L.e) - 1u);
    const unsigned mf = code & ((1u << L.m) - 1u);
    double v;
    if (el == Element::E4M3 && ef == 15 && mf == 7) return quiet_nan();
    if (el == Element::E5M2 && ef == 31) return mf == 0 ? (neg ? -INFINITY : INFINITY) : quiet_nan();
    if (ef == 0)
        v = std::ldexp(static_cast<double>(mf), 1 - L.bias - L.m);
    else
        v = std::ldexp(1.0 + static_cast<double>(mf) / (1 << L.m), static_cast<int>(ef) - L.bias);
    return static_cast<float>(neg ? -v : v);
}

float element_max(Element el) { return element_value(el, layout_of(el).max_code); }

unsigned element_code_count(Element el) {
    const Layout L = layout_of(el);
    return 1u << (1 + L.e + L.m);
}

unsigned element_encode(Element el, float x) {
    const Layout L = layout_of(el);
    const unsigned sign_bit = 1u << (L.e + L.m);
    if (std::isnan(x)) return L.fp8 ? ((std::signbit(x) ? sign_bit : 0u) | 0x7Fu) : L.max_code;
    const unsigned sign = std::signbit(x) ? sign_bit : 0u;
    const double a = std::fabs(static_cast<double>(x));
    // Ascending non-negative grid = magnitude codes 0..max_code.
    unsigned best = L.max_code;
    for (unsigned c = 0; c < L.max_code; ++c) {
        const double lo = element_value(el, c), hi = element_value(el, c + 1);
        if (a > hi) continue;
        const double mid = (lo + hi) / 2.0;  // exact in double
        if (a < mid)
            best = c;
        else if (a > mid)
            best = c + 1;
        else
            best = (c % 2 == 0) ? c : c + 1;  // tie: even code (even mantissa)
        break;
    }
    return sign | best;
}

Encoded nvfp4(const std::vector<float>& x, int64_t rows, int64_t cols, float g) {
    Encoded r;
    r.global_scale = g;
    r.values.resize(x.size());
    r.codes.resize(x.size());
    const int64_t bpr = (cols + 15) / 16;
    for (int64_t row = 0; row < rows; ++row)
        for (int64_t b = 0; b < bpr; ++b) {
            const int64_t s0 = row * cols + b * 16, len = std::min<int64_t>(16, cols - b * 16);
            float bamax = 0.0f;
            for (int64_t i = 0; i < len; ++i)
                if (std::isfinite(x[s0 + i])) bamax = std::max(bamax, std::fabs(x[s0 + i]));
            float s = bamax == 0.0f ? 1.0f : bamax / (6.0f * g);
            if (s == 0.0f) s = 1.0f;
            const unsigned s8 = element_encode(Element::E4M3, s);
            r.scale_codes.push_back(static_cast<uint8_t>(s8));
            r.scales.push_back(element_value(Element::E4M3, s8));
            const float d = element_value(Element::E4M3, s8) * g;
            for (int64_t i = 0; i < len; ++i) {
                const float v = x[s0 + i];
                unsigned c;
                float out;
                if (std::isnan(v)) {
                    c = 7;
                    out = v;
                } else if (d == 0.0f) {
                    c = 0;
                    out = 0.0f;
                } else {
                    c = element_encode(Element::E2M1, v / d) & 7u;
                    if (v < 0.0f) c |= 8u;
                    out = element_value(Element::E2M1, c) * d;
                }
                r.codes[s0 + i] = static_cast<uint8_t>(c);
                r.values[s0 + i] = out;
            }
        }
    return r;
}

Encoded mx(const std::vector<float>& x, int64_t rows, int64_t cols, Element element, bool mx_int8,
           bool round_up, int64_t block) {
    Encoded r;
    r.values.resize(x.size());
    r.codes.resize(x.size());
    const int emax = mx_int8 ? 0 : static_cast<int>(std::ilogb(element_max(element)));
    const double max_elem = mx_int8 ? 127.0 / 64.0 : element_max(element);
    const int64_t bpr = (cols + block - 1) / block;
    for (int64_t row = 0; row < rows; ++row)
        for (int64_t b = 0; b < bpr; ++b) {
            const int64_t s0 = row * cols + b * block, len = std::min<int64_t>(block, cols - b * block);
            float amax = 0.0f;
            bool bad = false;
            for (int64_t i = 0; i < len; ++i) {
                if (!std::isfinite(x[s0 + i])) bad = true;
                amax = std::max(amax, std::fabs(x[s0 + i]));
            }
            int byte;
            if (bad) {
                byte = 255;
            } else if (!round_up) {
                int e = amax == 0.0f ? -127 : std::ilogb(amax);  // exact floor(log2)
                e = std::max(-127, std::min(127, std::max(e, -127) - emax));
                byte = e + 127;
            } else {
                // descale = amax * fl(1 / max_elem), rounded up to a power of two.
                const float inv = static_cast<float>(1.0 / max_elem);
                const float descale = amax * static_cast<float>(inv);
                int e;
                if (descale == 0.0f) {
                    e = -127;
                } else {
                    int ex;
                    const double fr = std::frexp(static_cast<double>(descale), &ex);  // descale = fr * 2^ex, fr in [0.5,1)
                    e = (fr == 0.5) ? ex - 1 : ex;                                     // ceil(log2)
                    if (e < -127) e = -127;
                    if (e > 127) e = 127;
                }
                byte = e + 127;
            }
            r.scale_codes.push_back(static_cast<uint8_t>(byte));
            const double scale = byte == 255 ? NAN : std::ldexp(1.0, byte - 127);
            r.scales.push_back(static_cast<float>(scale));
            for (int64_t i = 0; i < len; ++i) {
                const float v = x[s0 + i];
                if (byte == 255) {
                    r.codes[s0 + i] = static_cast<uint8_t>(mx_int8 ? 0 : element_encode(element, NAN) & 0xFFu);
                    r.values[s0 + i] = quiet_nan();
                    continue;
                }
                const double scaled = static_cast<double>(v) / scale;
                if (mx_int8) {
                    double k = std::nearbyint(scaled * 64.0);
                    k = std::max(-127.0, std::min(127.0, k));
                    r.codes[s0 + i] = static_cast<uint8_t>(static_cast<int8_t>(k));
                    r.values[s0 + i] = static_cast<float>(k / 64.0 * scale);
                } else {
                    const unsigned c = element_encode(element, static_cast<float>(scaled));
                    r.codes[s0 + i] = static_cast<uint8_t>(c);
                    r.values[s0 + i] = static_cast<float>(element_value(element, c) * scale);
                }
            }
        }
    return r;
}

Encoded fp8_tensor(const std::vector<float>& x, Element element) {
    Encoded r;
    float amax = 0.0f;
    for (float v : x)
        if (std::isfinite(v)) amax = std::max(amax, std::fabs(v));
    float scale = amax / element_max(element);
    if (scale == 0.0f) scale = 1.0f;
    r.scales.push_back(scale);
    for (float v : x) {
        const unsigned c = element_encode(element, v / scale);
        r.codes.push_back(static_cast<uint8_t>(c));
        r.values.push_back(element_value(element, c) * scale);
    }
    return r;
}

Encoded integer(const std::vector<float>& x, int64_t rows, int64_t cols, int bits, bool asym, int64_t group) {
    Encoded r;
    r.values.resize(x.size());
    r.codes.resize(x.size());
    auto run = [&](std::vector<int64_t> idx) {
        float mn = 0.0f, mx = 0.0f;
        for (int64_t i : idx)
            if (std::isfinite(x[i])) {
                mn = std::min(mn, x[i]);
                mx = std::max(mx, x[i]);
            }
        if (!asym) {
            const float qmax = static_cast<float>((1 << (bits - 1)) - 1);
            const float scale = std::max(-mn, mx) / qmax;
            r.scales.push_back(scale);
            for (int64_t i : idx) {
                const float v = x[i];
                float q = 0.0f;
                if (scale != 0.0f && !std::isnan(v)) q = std::max(-qmax, std::min(qmax, std::nearbyint(v / scale)));
                r.codes[i] = static_cast<uint8_t>(static_cast<int8_t>(q));
                r.values[i] = std::isnan(v) ? v : q * scale;
            }
            return;
        }
        const float levels = static_cast<float>((1 << bits) - 1);
        float scale = (mx - mn) / levels;
        scale = std::max(scale, std::ldexp(1.0f, -126));
        const float zp = std::max(0.0f, std::min(levels, -std::nearbyint(mn / scale))) + 0.0f;
        r.scales.push_back(scale);
        const float inv = 1.0f / scale;
        for (int64_t i : idx) {
            const float v = x[i];
            float q = zp;
            if (!std::isnan(v)) {
                const float t = v * inv;
                const float rt = std::isinf(t) ? t : std::nearbyint(t);
                q = std::max(0.0f, std::min(levels, rt + zp));
            }
            r.codes[i] = static_cast<uint8_t>(q);
            r.values[i] = std::isnan(v) ? v : (q - zp) * scale;
        }
    };
    if (group < 0) {
        std::vector<int64_t> all(x.size());
        for (size_t i = 0; i < x.size(); ++i) all[i] = static_cast<int64_t>(i);
        run(all);
    } else if (group == 0) {
        for (int64_t row = 0; row < rows; ++row) {
            std::vector<int64_t> idx;
            for (int64_t c = 0; c < cols; ++c) idx.push_back(row * cols + c);
            run(idx);
        }
    } else {
        for (int64_t row = 0; row < rows; ++row)
            for (int64_t g0 = 0; g0 < cols; g0 += group) {
                std::vector<int64_t> idx;
                for (int64_t c = g0; c < std::min(cols, g0 + group); ++c) idx.push_back(row * cols + c);
                run(idx);
            }
    }
    return r;
}

Encoded nf4(const std::vector<float>& x, int64_t block, const float codebook[16]) {
    // bitsandbytes 0.50 default backend: float32 midpoints, torch.bucketize(right=False).
    float mid[15];
    for (int i = 0; i < 15; ++i) mid[i] = (codebook[i] + codebook[i + 1]) / 2.0f;
    Encoded r;
    const int64_t n = static_cast<int64_t>(x.size());
    for (int64_t b0 = 0; b0 < n; b0 += block) {
        const int64_t len = std::min(block, n - b0);
        float absmax = 0.0f;
        for (int64_t i = 0; i < len; ++i)
            if (std::isfinite(x[b0 + i])) absmax = std::max(absmax, std::fabs(x[b0 + i]));
        const bool tail = len < block;
        if (tail) absmax = std::max(absmax, 1e-38f);
        r.scales.push_back(absmax);
        const float inv = 1.0f / std::max(absmax, 1e-38f);
        for (int64_t i = 0; i < len; ++i) {
            const float v = x[b0 + i];
            float s = tail ? v / absmax : v * inv;
            if (!std::isnan(s)) s = std::max(-1.0f, std::min(1.0f, s));
            int code = 0;
            for (int k = 0; k < 15; ++k)
                if (s > mid[k]) code = k + 1;
            r.codes.push_back(static_cast<uint8_t>(code));
            r.values.push_back(std::isnan(v) ? v : codebook[code] * absmax);
        }
    }
    return r;
}

namespace {

uint16_t to_half(float f) {
    // Round to nearest even through the hardware-independent route: double -> exact decision.
    const float a = std::fabs(f);
    const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
    if (std::isnan(f)) return sign | 0x7E00;
    if (a >= 65520.0f) return sign | 0x7C00;
    // Search the 0x7C00 finite magnitudes by bisection on value.
    auto val = [](uint16_t h) {
        const int e = (h >> 10) & 31, m = h & 1023;
        return e == 0 ? std::ldexp(static_cast<double>(m), -24) : std::ldexp(1.0 + m / 1024.0, e - 15);
    };
    uint16_t lo = 0, hi = 0x7BFF;
    while (hi - lo > 1) {
        const uint16_t mid = static_cast<uint16_t>((lo + hi) / 2);
        if (val(mid) <= a)
            lo = mid;
        else
            hi = mid;
    }
    if (a >= val(hi)) return sign | hi;
    const double mid = (val(lo) + val(hi)) / 2;
    uint16_t c = a < mid ? lo : (a > mid ? hi : ((lo % 2 == 0) ? lo : hi));
    return sign | c;
}

float from_half(uint16_t h) {
    const int e = (h >> 10) & 31, m = h & 1023;
    if (e == 31) return m ? std::numeric_limits<float>::quiet_NaN() : ((h & 0x8000) ? -INFINITY : INFINITY);
    const double v = e == 0 ? std::ldexp(static_cast<double>(m), -24) : std::ldexp(1.0 + m / 1024.0, e - 15);
    return static_cast<float>((h & 0x8000) ? -v : v);
}

void put_half(std::vector<uint8_t>& out, float v) {
    const uint16_t h = to_half(v);
    out.push_back(static_cast<uint8_t>(h & 0xFF));
    out.push_back(static_cast<uint8_t>(h >> 8));
}

}  // namespace

GgufEncoded gguf(const std::vector<float>& x, int64_t rows, int64_t cols, Gguf type) {
    GgufEncoded r;
    r.values.resize(x.size());
    const int64_t nb = rows * cols / 32;
    for (int64_t b = 0; b < nb; ++b) {
        const float* xb = x.data() + b * 32;
        float* yb = r.values.data() + b * 32;
        switch (type) {
            case Gguf::Q8_0: {
                float amax = 0;
                for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(xb[i]));
                const float d = amax / 127.0f;
                const float id = (d == 0.0f || std::isinf(1.0f / d)) ? 0.0f : 1.0f / d;
                put_half(r.bytes, d);
                const float dh = from_half(to_half(d));
                for (int i = 0; i < 32; ++i) {
                    const float q = std::round(xb[i] * id);  // half away from zero
                    r.bytes.push_back(static_cast<uint8_t>(static_cast<int8_t>(q)));
                    yb[i] = q * dh;
                }
                break;
            }
            case Gguf::Q4_0:
            case Gguf::Q5_0: {
                const bool five = type == Gguf::Q5_0;
                float amax = 0.0f, max = 0.0f;  // ggml: a block of zeros keeps max = +0.0 (d = -0.0)
                for (int i = 0; i < 32; ++i)
                    if (amax < std::fabs(xb[i])) {
                        amax = std::fabs(xb[i]);
                        max = xb[i];
                    }
                const float d = max / (five ? -16.0f : -8.0f);
                const float id = d == 0.0f ? 0.0f : 1.0f / d;
                int q[32];
                for (int i = 0; i < 32; ++i) {
                    // ggml-base and gguf-py: float32 product, then float32 sum, then truncation.
                    // Where 1/d overflows, ggml casts +-Inf / NaN to an integer: code 0 on x86.
                    const float t = xb[i] * id + (five ? 16.5f : 8.5f);
                    q[i] = std::isinf(id) ? 0 : std::min(five ? 31 : 15, std::max(0, static_cast<int>(std::trunc(t))));
                }
                put_half(r.bytes, d);
                const float dh = from_half(to_half(d));
                if (five) {
                    uint32_t qh = 0;
                    for (int j = 0; j < 32; ++j) qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
                    for (int k = 0; k < 4; ++k) r.bytes.push_back(static_cast<uint8_t>(qh >> (8 * k)));
                }
                for (int j = 0; j < 16; ++j) r.bytes.push_back(static_cast<uint8_t>((q[j] & 15) | ((q[j + 16] & 15) << 4)));
                for (int i = 0; i < 32; ++i) yb[i] = static_cast<float>(q[i] - (five ? 16 : 8)) * dh;
                break;
            }
            case Gguf::Q4_1: {
                float mx = -FLT_MAX, mn = FLT_MAX;  // ggml's loop: the first of equal extremes (+0 / -0) wins
                for (int i = 0; i < 32; ++i) {
                    if (xb[i] < mn) mn = xb[i];
                    if (xb[i] > mx) mx = xb[i];
                }
                const float d = (mx - mn) / 15.0f;
                const float id = (d == 0.0f || std::isinf(1.0f / d)) ? 0.0f : 1.0f / d;
                int q[32];
                for (int i = 0; i < 32; ++i) {
                    const float t = (xb[i] - mn) * id + 0.5f;
                    q[i] = std::min(15, std::max(0, static_cast<int>(std::trunc(t))));
                }
                put_half(r.bytes, d);
                put_half(r.bytes, mn);
                const float dh = from_half(to_half(d)), mh = from_half(to_half(mn));
                for (int j = 0; j < 16; ++j) r.bytes.push_back(static_cast<uint8_t>(q[j] | (q[j + 16] << 4)));
                for (int i = 0; i < 32; ++i) yb[i] = static_cast<float>(q[i]) * dh + mh;
                break;
            }
            case Gguf::MXFP4: {
                static const int kv[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
                float amax = 0;
                for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(xb[i]));
                int e = amax > 0 ? static_cast<int>(std::floor(std::log2f(amax))) - 2 + 127 : 0;
                e &= 0xFF;  // (uint8_t) of a negative float in ggml (x86) and gguf-py: wraps
                const float d = e < 2 ? bits_to_float(0x00200000u << e) : bits_to_float(static_cast<uint32_t>(e - 1) << 23);
                // (GGML_E8M0_TO_FP32_HALF)
                r.bytes.push_back(static_cast<uint8_t>(e));
                int q[32];
                for (int i = 0; i < 32; ++i) {
                    int best = 0;
                    float best_err = std::fabs(d * static_cast<float>(kv[0]) - xb[i]);
                    for (int c = 1; c < 16; ++c) {
                        const float err = std::fabs(d * static_cast<float>(kv[c]) - xb[i]);
                        if (err < best_err) {
                            best_err = err;
                            best = c;
                        }
                    }
                    q[i] = best;
                    yb[i] = d * static_cast<float>(kv[best]);
                }
                for (int j = 0; j < 16; ++j) r.bytes.push_back(static_cast<uint8_t>(q[j] | (q[j + 16] << 4)));
                break;
            }
        }
    }
    return r;
}

}  // namespace ql::kernels::reference
