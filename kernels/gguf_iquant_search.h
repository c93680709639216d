// SPDX-License-Identifier: GPL-3.0-or-later
// The inner searches of ggml's i-quant quantizers, eight candidates per SIMD operation, with
// every candidate's float32 arithmetic exactly ggml's (same operations, same order, no FMA), so
// that the choice is ggml's bit for bit:
//  - nearest_point: iq2_find_best_neighbour / iq3_find_best_neighbour (positions q = 2 l + 1) and
//    iq1_find_best_neighbour2 (q = xg[l]): the first candidate with the smallest weighted squared
//    distance; where ggml aborts (no distance below FLT_MAX) the first candidate.
//  - CandidateScan: ggml's sequential "if (sumq2 > 0 && sumqx^2 > best sumq2) accept" over a run
//    of candidates computed eight at a time: a group of eight in which no candidate passes
//    against the best so far is skipped whole (no candidate before the first passing one can
//    have been accepted), the rest is replayed one by one as ggml does.
// CPU only (GCC vector extensions); included by gguf_iquant_cpu.cpp's cloned functions.
#pragma once

#include <cfloat>
#include <cstdint>
#include <cstring>

#include "kernels/cpu_dispatch.h"
#include "kernels/gguf_iquant_lattice.h"

namespace ql::kernels::iquant {

typedef float F8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));

QL_INLINE F8 load8(const float* p) {
    F8 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
QL_INLINE void store8(float* p, F8 v) { std::memcpy(p, &v, sizeof v); }
QL_INLINE F8 splat8(float f) { return F8{} + f; }
QL_INLINE F8 select8(I8 m, F8 a, F8 b) { return (F8)(((I8)a & m) | ((I8)b & ~m)); }
// Lane k of the result is v[idx[k] % 8]: GCC's run-time permute. Clang (the fuzzer's compiler)
// has no __builtin_shuffle with a variable mask, so it gathers lane by lane (the same values).
QL_INLINE F8 permute8(F8 v, I8 idx) {
#if defined(__clang__)
    F8 r;
    for (int k = 0; k < 8; ++k) r[k] = v[idx[k] & 7];
    return r;
#else
    return __builtin_shuffle(v, idx);
#endif
}
QL_INLINE I8 select8i(I8 m, I8 a, I8 b) { return (a & m) | (b & ~m); }
// The smallest lane, in every lane (no NaN lanes).
QL_INLINE F8 hmin8(F8 v) {
    F8 t = __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3);
    v = select8(t < v, t, v);
    t = __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5);
    v = select8(t < v, t, v);
    t = __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6);
    return select8(t < v, t, v);
}
QL_INLINE I8 hmin8i(I8 v) {
    I8 t = __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3);
    v = select8i(t < v, t, v);
    t = __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5);
    v = select8i(t < v, t, v);
    t = __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6);
    return select8i(t < v, t, v);
}

// The point of list `l` nearest to xval (dims values) under `weight`, for a sub-block scale
// `scale`. xg: nullptr for positions q = 2 l + 1 (IQ2, IQ3), else the three IQ1 values q = xg[l].
// ggml adds, per coordinate c in order, weight[c] * diff * diff with diff = scale * q - xval[c]:
// a term that depends only on (c, l), so the terms are computed once per level and each
// candidate's sum gathers them by its level indices (the same float operations, the same order).
// Writes the chosen point's level indices to L and returns the point.
template <int D>
QL_INLINE int nearest_point(const LatticeSearch& s, const NeighbourList& l, const float* xval, const float* weight,
                            float scale, const float* xg, int8_t* L) {
    const int bits = s.table->bits, mask = (1 << bits) - 1;
    const F8 q = xg ? F8{xg[0], xg[1], xg[2], 0, 0, 0, 0, 0} : F8{1, 3, 5, 7, 9, 11, 13, 15};
    F8 terms[D];
    for (int c = 0; c < D; ++c) {
        const F8 diff = splat8(scale) * q - splat8(xval[c]);
        terms[c] = (splat8(weight[c]) * diff) * diff;
    }
    const int32_t* packed = s.packed.data() + l.packed;
    // Per lane the first smallest distance and its candidate (strict <, as ggml's scan; NaN never
    // wins); then the smallest of those, the first candidate on ties: ggml's sequential choice.
    F8 best = splat8(FLT_MAX);
    I8 best_at = I8{} - 1, j = I8{0, 1, 2, 3, 4, 5, 6, 7};
    for (uint32_t j0 = 0; j0 < l.padded; j0 += 8, j += 8) {
        I8 p;
        std::memcpy(&p, packed + j0, sizeof p);
        F8 d2 = splat8(0.0f);
        for (int c = 0; c < D; ++c) d2 = d2 + permute8(terms[c], (p >> (bits * c)) & mask);
        const I8 less = d2 < best;
        best = select8(less, d2, best);
        best_at = (j & less) | (best_at & ~less);
    }
    // (Padding lanes repeat candidate 0: they tie with it and lose on the index.)
    const F8 m = hmin8(best);
    const I8 at = select8i(best == m, best_at, I8{} + 0x7FFFFFFF);
    int best_j = m[0] < FLT_MAX ? hmin8i(at)[0] : -1;
    if (best_j < 0) best_j = 0;  // ggml: GGML_ASSERT(grid_index >= 0)
    const int point = s.indices[l.first + static_cast<uint32_t>(best_j)];
    for (int c = 0; c < D; ++c) L[c] = s.point_levels[static_cast<size_t>(point * D + c)];
    return point;
}

// The list of a vector u that is not a point.
inline const NeighbourList& list_of(const LatticeSearch& s, int32_t m) { return s.lists[static_cast<size_t>(-m - 1)]; }

// ggml's running best of a search over candidates with (sumqx, sumq2).
struct CandidateScan {
    float best;
    int chosen = -1;     // the last accepted candidate
    float scale = 0.0f;  // its sumqx / sumq2

    explicit CandidateScan(float initial_best) : best(initial_best) {}

    // Candidates in ggml's order: lanes k = 0 .. n - 1 (n <= 8), and within a lane the V
    // variants v (IQ1's shifts); candidate (k, v) is numbered first + V k + v.
    template <int V>
    QL_INLINE void offer8(int first, int n, const F8* sumqx, const F8* sumq2) {
        I8 pass = I8{};
        for (int v = 0; v < V; ++v) pass |= (sumq2[v] > 0.0f) & (sumqx[v] * sumqx[v] > splat8(best) * sumq2[v]);
        int any = 0;
        for (int k = 0; k < n; ++k) any |= pass[k];
        if (!any) return;
        alignas(32) float qx[V][8], q2[V][8];
        for (int v = 0; v < V; ++v) {
            store8(qx[v], sumqx[v]);
            store8(q2[v], sumq2[v]);
        }
        for (int k = 0; k < n; ++k)
            for (int v = 0; v < V; ++v) offer(first + V * k + v, qx[v][k], q2[v][k]);
    }
    QL_INLINE void offer(int index, float sumqx, float sumq2) {
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            chosen = index;
        }
    }
};

}  // namespace ql::kernels::iquant
