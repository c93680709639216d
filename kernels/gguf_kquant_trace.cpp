// SPDX-License-Identifier: GPL-3.0-or-later
// Scalar transcriptions of ggml's sub-block searches with a record of every candidate (spec:
// shared/design/GGUF_KQUANTS.md sections 3, 4 and 8; the lane-parallel kernels are
// gguf_kquant_search.h). Compiled with the kernels' -ffp-contract=off.
#include "kernels/gguf_kquant_trace.h"

#include <cmath>
#include <stdexcept>

#include "kernels/gguf_kquant_search.h"
#include "kernels/magnitude_bits.h"

namespace ql::kernels {
namespace {

using kquant::clamp_int;
using kquant::kGroupMaxEps;
using kquant::nearest_int;

float clean(float v) { return magnitude_bits(v) >= kInfBits ? 0.0f : v; }

// The value an fp16 field stores for v (GGML_FP32_TO_FP16, then back).
float fp16_value(float v) { return fp16_bits_to_fp32(kquant::ggml_fp16_bits(v)); }

// make_qkx2_quants (qkx3 false) / make_qkx3_quants; x, w: n values.
GgufSubBlockSearch trace_qkx(bool qkx3, int n, int nmax, const float* x, const float* w, float rmin, float rdelta,
                             int nstep, bool use_mad) {
    GgufSubBlockSearch r;
    r.objective = use_mad ? "weighted absolute error (smaller wins)" : "weighted squared error (smaller wins)";
    float min = x[0], max = x[0], sum_w = w[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (qkx3 ? max <= min : max == min) {
        r.scale = 0;
        r.min = -min;
        r.candidates.push_back({0, 0, 0, -min, 0, true});
        return r;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best = 0;
    std::vector<int> L(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
        L[i] = clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax);
        float diff = scale * static_cast<float>(L[i]) + min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        best += w[i] * diff;
    }
    r.candidates.push_back({-1, iscale, scale, -min, best, true});
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        std::vector<int> La(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) {
            La[i] = clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax);
            const float l = static_cast<float>(La[i]);
            sum_l += w[i] * l;
            sum_l2 += w[i] * l * l;
            sum_xl += w[i] * l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        GgufSearchCandidate c{is, iscale, 0, 0, std::nanf(""), false};
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * static_cast<float>(La[i]) + this_min - x[i];
                diff = use_mad ? std::fabs(diff) : diff * diff;
                cur += w[i] * diff;
            }
            c = {is, iscale, this_scale, -this_min, cur, cur < best};
            if (cur < best) {
                best = cur;
                scale = this_scale;
                min = this_min;
            }
        }
        r.candidates.push_back(c);
    }
    r.scale = scale;
    r.min = -min;
    return r;
}

// make_qx_quants(n, nmax, x, L, 1, w) (w: x^2 when null).
GgufSubBlockSearch trace_qx(int n, int nmax, const float* x, const float* qw) {
    GgufSubBlockSearch r;
    r.objective = "sum(w x l)^2 / sum(w l^2) (larger wins)";
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i)
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    if (amax < kGroupMaxEps) {
        r.candidates.push_back({0, 0, 0, 0, 0, true});
        return r;
    }
    auto sums = [&](float iscale, float* sumlx, float* suml2) {
        *sumlx = *suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const float l = static_cast<float>(clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1));
            const float w = qw ? qw[i] : x[i] * x[i];
            *sumlx += w * x[i] * l;
            *suml2 += w * l * l;
        }
    };
    float iscale = static_cast<float>(-nmax) / max, sumlx, suml2;
    sums(iscale, &sumlx, &suml2);
    float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    r.candidates.push_back({0, iscale, scale, 0, best, true});
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
        sums(iscale, &sumlx, &suml2);
        const bool take = suml2 > 0 && sumlx * sumlx > best * suml2;
        r.candidates.push_back({is, iscale, suml2 > 0 ? sumlx / suml2 : 0.0f, 0, suml2 > 0 ? sumlx * sumlx / suml2 : 0.0f, take});
        if (take) {
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    r.scale = scale;
    return r;
}

// make_q3_quants(n, nmax, x, L, true): the start and each refinement pass.
GgufSubBlockSearch trace_q3(int n, int nmax, const float* x) {
    GgufSubBlockSearch r;
    r.objective = "sum(w x l)^2 / sum(w l^2), w = x^2 (larger wins); step = refinement pass";
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i)
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    if (amax < kGroupMaxEps) {
        r.candidates.push_back({0, 0, 0, 0, 0, true});
        return r;
    }
    const float iscale = static_cast<float>(-nmax) / max;
    std::vector<int> L(static_cast<size_t>(n));
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        L[i] = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        const float w = x[i] * x[i], l = static_cast<float>(L[i]);
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    auto record = [&](int step, bool changed) {
        r.candidates.push_back({step, iscale, suml2 > 0 ? sumlx / suml2 : 0.0f, 0, suml2 > 0 ? sumlx * sumlx / suml2 : 0.0f, changed});
    };
    record(0, true);
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i], li = static_cast<float>(L[i]);
            float slx = sumlx - w * x[i] * li;
            if (slx > 0) {
                float sl2 = suml2 - w * li * li;
                const int nl = clamp_int(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (nl != L[i]) {
                    const float fnl = static_cast<float>(nl);
                    slx += w * x[i] * fnl;
                    sl2 += w * fnl * fnl;
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = nl;
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        record(itry + 1, n_changed > 0);
        if (!n_changed) break;
    }
    r.scale = suml2 > 0 ? sumlx / suml2 : 0.0f;
    return r;
}

int iq4_index(float x) {  // best_index_int8(16, kvalues_iq4nl, x) [QG]
    static const float k[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    if (x <= k[0]) return 0;
    if (x >= k[15]) return 15;
    int ml = 0, mu = 15;
    while (mu - ml > 1) {
        const int mav = (ml + mu) / 2;
        if (x < k[mav])
            mu = mav;
        else
            ml = mav;
    }
    return x - k[mu - 1] < k[mu] - x ? mu - 1 : mu;
}

// The scale search of quantize_row_iq4_nl_impl (ntry = 7) for one block of 32.
GgufSubBlockSearch trace_iq4(const float* x, const float* w) {
    GgufSubBlockSearch r;
    r.method = "quantize_row_iq4_nl_impl: d = max / 127, then 15 inverse scales (itry - 127) / max; each d = sum(w q x) / sum(w q^2)";
    r.objective = "sum(w q x)^2 / sum(w q^2) (larger wins)";
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j)
        if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    if (amax < kGroupMaxEps) {
        r.candidates.push_back({0, 0, 0, 0, 0, true});
        return r;
    }
    auto sums = [&](float id, float* sumqx, float* sumq2) {
        *sumqx = *sumq2 = 0;
        for (int j = 0; j < 32; ++j) {
            const float q = kquant::iq4_value(iq4_index(id * x[j]));
            *sumqx += w[j] * q * x[j];
            *sumq2 += w[j] * q * q;
        }
    };
    float d = -max / kquant::iq4_value(0);
    float id = 1 / d, sumqx, sumq2;
    sums(id, &sumqx, &sumq2);
    d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
    float best = d * sumqx;
    r.candidates.push_back({-8, id, d, 0, best, true});
    for (int itry = -7; itry <= 7; ++itry) {
        id = static_cast<float>(itry - 127) / max;
        sums(id, &sumqx, &sumq2);
        const bool take = sumq2 > 0 && sumqx * sumqx > best * sumq2;
        r.candidates.push_back({itry, id, sumq2 > 0 ? sumqx / sumq2 : 0.0f, 0, sumq2 > 0 ? sumqx * sumqx / sumq2 : 0.0f, take});
        if (take) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    r.scale = d;
    return r;
}

bool is_kquant(GgufType t) { return t >= GgufType::Q2_K && t <= GgufType::IQ4_XS; }

float sum_squares(const std::vector<float>& x) {
    float s = 0;
    for (float v : x) s += v * v;
    return s;
}

// The sanitised block and, with importance, the weights ggml's impl functions give sub-block j
// (n elements from j * n), and the per-sub-block weight sums sw (make_qp's weights).
struct Prepared {
    std::vector<float> x;        // the whole block, non-finite as 0
    std::vector<float> weights;  // the whole block's search weights
};

Prepared prepare(const float* x_in, const float* qw, GgufType t) {
    const int E = static_cast<int>(gguf_block_elements(t)), sub = static_cast<int>(gguf_sub_block(t));
    Prepared p;
    p.x.resize(static_cast<size_t>(E));
    for (int i = 0; i < E; ++i) p.x[i] = clean(x_in[i]);
    p.weights.resize(static_cast<size_t>(E));
    const float s2 = sum_squares(p.x);
    switch (t) {
        case GgufType::Q2_K: {
            const float sigma2 = s2 / 256;
            for (int i = 0; i < E; ++i) p.weights[i] = qw ? qw[i] * std::sqrt(sigma2 + p.x[i] * p.x[i]) : std::fabs(p.x[i]);
            break;
        }
        case GgufType::Q4_K:
        case GgufType::Q5_K: {
            const float sigma2 = 2 * s2 / 256;
            for (int j = 0; j < E / sub; ++j) {
                float sx2 = 0;
                for (int l = 0; l < sub; ++l) sx2 += p.x[j * sub + l] * p.x[j * sub + l];
                const float av_x = std::sqrt(sx2 / 32);
                for (int l = 0; l < sub; ++l) {
                    const float v = p.x[j * sub + l];
                    p.weights[j * sub + l] = qw ? qw[j * sub + l] * std::sqrt(sigma2 + v * v) : av_x + std::fabs(v);
                }
            }
            break;
        }
        case GgufType::Q3_K: {
            const float sigma2 = 2 * s2 / 256;
            for (int i = 0; i < E; ++i) p.weights[i] = qw ? qw[i] * std::sqrt(sigma2 + p.x[i] * p.x[i]) : p.x[i] * p.x[i];
            break;
        }
        case GgufType::Q6_K:
            for (int i = 0; i < E; ++i) p.weights[i] = qw ? qw[i] : p.x[i] * p.x[i];
            break;
        case GgufType::IQ4_NL:
        case GgufType::IQ4_XS: {
            const float sigma2 = s2 * (2.0f / static_cast<float>(E));
            for (int i = 0; i < E; ++i) p.weights[i] = qw ? qw[i] * std::sqrt(sigma2 + p.x[i] * p.x[i]) : p.x[i] * p.x[i];
            break;
        }
        default: throw std::invalid_argument("gguf_trace: not a K-quant / IQ4 type");
    }
    return p;
}

}  // namespace

GgufSubBlockSearch gguf_trace_sub_block_search(const float* x_in, const float* qw, GgufType t, int j) {
    if (!is_kquant(t)) throw std::invalid_argument("gguf_trace_sub_block_search: not a K-quant / IQ4 type");
    const int sub = static_cast<int>(gguf_sub_block(t));
    if (j < 0 || j >= static_cast<int>(gguf_block_elements(t)) / sub) throw std::invalid_argument("gguf_trace_sub_block_search: no such sub-block");
    const Prepared p = prepare(x_in, qw, t);
    const float* x = p.x.data() + j * sub;
    const float* w = p.weights.data() + j * sub;
    GgufSubBlockSearch r;
    switch (t) {
        case GgufType::Q2_K:
            r = qw ? trace_qkx(true, 16, 3, x, w, -0.9f, 0.05f, 36, false) : trace_qkx(false, 16, 3, x, w, -0.5f, 0.1f, 15, true);
            r.method = qw ? "make_qkx3_quants: 37 inverse scales (-0.9 + 0.05 is + 3) / (max - min), weights imatrix * sqrt(sigma2 + x^2)"
                          : "make_qkx2_quants: 16 inverse scales (-0.5 + 0.1 is + 3) / (max - min), weights |x|, absolute error";
            break;
        case GgufType::Q3_K:
            r = qw ? trace_qx(16, 4, x, w) : trace_q3(16, 4, x);
            r.method = qw ? "make_qx_quants: 19 inverse scales -(4 + 0.1 is) / max, weights imatrix * sqrt(sigma2 + x^2)"
                          : "make_q3_quants: codes from -4 / max, then up to 5 passes moving single codes";
            break;
        case GgufType::Q4_K:
        case GgufType::Q5_K: {
            const int nmax = t == GgufType::Q4_K ? 15 : 31;
            if (qw) {
                r = trace_qkx(true, 32, nmax, x, w, -0.9f, 0.05f, 36, false);
                r.method = "make_qkx3_quants: 37 inverse scales (-0.9 + 0.05 is + " + std::to_string(nmax) +
                           ") / (max - min), weights imatrix * sqrt(sigma2 + x^2)";
            } else {
                r = t == GgufType::Q4_K ? trace_qkx(false, 32, 15, x, w, -1.0f, 0.1f, 20, false)
                                        : trace_qkx(false, 32, 31, x, w, -0.5f, 0.1f, 15, false);
                r.method = t == GgufType::Q4_K
                               ? "make_qkx2_quants: 21 inverse scales (-1 + 0.1 is + 15) / (max - min), weights sqrt(mean x^2) + |x|"
                               : "make_qkx2_quants: 16 inverse scales (-0.5 + 0.1 is + 31) / (max - min), weights sqrt(mean x^2) + |x|";
            }
            break;
        }
        case GgufType::Q6_K:
            r = trace_qx(16, 32, x, w);
            r.method = std::string("make_qx_quants: 19 inverse scales -(32 + 0.1 is) / max, weights ") + (qw ? "imatrix" : "x^2");
            break;
        default: {  // IQ4
            r = trace_iq4(x, w);
            break;
        }
    }
    return r;
}

void gguf_trace_super_block(const std::vector<GgufSubBlockSearch>& searches, const float* x_in, const float* qw,
                            GgufType t, GgufBlockFields* f) {
    const int n = static_cast<int>(searches.size());
    const int sub = static_cast<int>(gguf_sub_block(t));
    if (n != static_cast<int>(gguf_block_elements(t)) / sub) throw std::invalid_argument("gguf_trace_super_block: one search per sub-block");
    *f = GgufBlockFields{};
    f->sub_blocks = n;
    float s[16] = {}, m[16] = {};
    for (int j = 0; j < n; ++j) {
        s[j] = searches[j].scale;
        m[j] = searches[j].min;
    }
    const Prepared p = prepare(x_in, qw, t);
    float sw[16] = {};
    for (int j = 0; j < n; ++j)
        for (int l = 0; l < sub; ++l) sw[j] += p.weights[j * sub + l];
    switch (t) {
        case GgufType::Q2_K: {
            f->scale_bits = 4;
            if (!qw) {
                float max_scale = 0, max_min = 0;
                for (int j = 0; j < n; ++j) {
                    if (s[j] > max_scale) max_scale = s[j];
                    if (m[j] > max_min) max_min = m[j];
                }
                for (int j = 0; j < n; ++j) {
                    int byte = max_scale > 0 ? static_cast<uint8_t>(nearest_int(15.0f / max_scale * s[j])) : 0;
                    if (max_min > 0) byte = static_cast<uint8_t>(byte | (static_cast<unsigned>(nearest_int(15.0f / max_min * m[j])) << 4));
                    f->scales[j] = byte & 0xF;
                    f->mins[j] = byte >> 4;
                }
                f->d = fp16_value(max_scale > 0 ? max_scale / 15.0f : 0.0f);
                f->dmin = fp16_value(max_min > 0 ? max_min / 15.0f : 0.0f);
            } else {
                uint8_t Ls[16], Lm[16];
                f->d = fp16_value(kquant::make_qp_quants<16>(15, s, Ls, sw));
                f->dmin = fp16_value(kquant::make_qp_quants<16>(15, m, Lm, sw));
                for (int j = 0; j < n; ++j) {
                    const int byte = static_cast<uint8_t>(Ls[j] | (Lm[j] << 4));
                    f->scales[j] = byte & 0xF;
                    f->mins[j] = byte >> 4;
                }
            }
            break;
        }
        case GgufType::Q3_K: {
            f->scale_bits = 6;
            if (!qw) {
                float max_scale = 0, amax = 0;
                for (int j = 0; j < n; ++j)
                    if (std::fabs(s[j]) > amax) {
                        amax = std::fabs(s[j]);
                        max_scale = s[j];
                    }
                if (max_scale != 0) {
                    const float iscale = -32.0f / max_scale;
                    for (int j = 0; j < n; ++j) f->scales[j] = clamp_int(static_cast<int8_t>(nearest_int(iscale * s[j])), -32, 31) + 32;
                    f->d = fp16_value(1 / iscale);
                }
            } else {
                int Ls[16];
                f->d = fp16_value(kquant::make_qx_quants<16>(32, s, Ls, sw));
                for (int j = 0; j < n; ++j) f->scales[j] = Ls[j];
            }
            break;
        }
        case GgufType::Q4_K:
        case GgufType::Q5_K: {
            f->scale_bits = 6;
            if (!qw) {
                float max_scale = 0, max_min = 0;
                for (int j = 0; j < n; ++j) {
                    if (s[j] > max_scale) max_scale = s[j];
                    if (m[j] > max_min) max_min = m[j];
                }
                const float inv_s = max_scale > 0 ? 63.0f / max_scale : 0.0f, inv_m = max_min > 0 ? 63.0f / max_min : 0.0f;
                for (int j = 0; j < n; ++j) {
                    const uint8_t ls = static_cast<uint8_t>(nearest_int(inv_s * s[j])), lm = static_cast<uint8_t>(nearest_int(inv_m * m[j]));
                    f->scales[j] = ls < 63 ? ls : 63;
                    f->mins[j] = lm < 63 ? lm : 63;
                }
                f->d = fp16_value(max_scale / 63.0f);
                f->dmin = fp16_value(max_min / 63.0f);
            } else {
                uint8_t Ls[8], Lm[8];
                f->d = fp16_value(kquant::make_qp_quants<8>(63, s, Ls, sw));
                f->dmin = fp16_value(kquant::make_qp_quants<8>(63, m, Lm, sw));
                for (int j = 0; j < n; ++j) {
                    f->scales[j] = t == GgufType::Q5_K && Ls[j] > 63 ? 63 : Ls[j];
                    f->mins[j] = t == GgufType::Q5_K && Lm[j] > 63 ? 63 : Lm[j];
                }
            }
            break;
        }
        case GgufType::Q6_K: {
            f->scale_bits = 8;
            float max_scale = 0, max_abs = 0;
            for (int j = 0; j < n; ++j)
                if (std::fabs(s[j]) > max_abs) {
                    max_abs = std::fabs(s[j]);
                    max_scale = s[j];
                }
            if (max_abs >= kGroupMaxEps) {
                const float iscale = -128.0f / max_scale;
                f->d = fp16_value(1 / iscale);
                for (int j = 0; j < n; ++j) {
                    const int v = nearest_int(iscale * s[j]);
                    f->scales[j] = static_cast<int8_t>(v < 127 ? v : 127);
                }
            }
            break;
        }
        case GgufType::IQ4_XS: {
            f->scale_bits = 6;
            float max_scale = 0, amax = 0;
            for (int j = 0; j < n; ++j)
                if (std::fabs(s[j]) > amax) {
                    amax = std::fabs(s[j]);
                    max_scale = s[j];
                }
            const float d = -max_scale / 32.0f, id = d != 0 ? 1 / d : 0.0f;
            f->d = fp16_value(d);
            for (int j = 0; j < n; ++j) f->scales[j] = clamp_int(nearest_int(id * s[j]), -32, 31) + 32;
            break;
        }
        case GgufType::IQ4_NL: f->d = fp16_value(s[0]); break;
        default: throw std::invalid_argument("gguf_trace_super_block: not a K-quant / IQ4 type");
    }
}

}  // namespace ql::kernels
