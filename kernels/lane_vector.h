// SPDX-License-Identifier: GPL-3.0-or-later
// K float32 / int32 lanes as one value, for kernels that run the same scalar arithmetic on K
// independent blocks at once (gguf_kquant_search.h). On the CPU they are GCC vector types, so
// every lane operation is one (or two) SIMD instructions in each QL_CPU_CLONES clone; on CUDA
// (and other compilers) a struct of K values with the same operators. Every operation is the
// IEEE float32 / two's-complement int32 operation of each lane, nothing fused or reordered.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/portable.h"

namespace ql::kernels::lanes {

#if defined(__GNUC__) && !defined(__CUDACC__)

template <int K>
struct Types;
template <>
struct Types<8> {
    typedef float F __attribute__((vector_size(32)));
    typedef int32_t I __attribute__((vector_size(32)));
};
template <>
struct Types<16> {
    typedef float F __attribute__((vector_size(64)));
    typedef int32_t I __attribute__((vector_size(64)));
};
template <int K>
using VF = typename Types<K>::F;
template <int K>
using VI = typename Types<K>::I;

template <int K>
QL_HD VF<K> load(const float* p) {
    VF<K> v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
template <int K>
QL_HD void store(float* p, VF<K> v) {
    std::memcpy(p, &v, sizeof v);
}
template <int K>
QL_HD VF<K> splat(float f) {
    return VF<K>{} + f;
}
template <int K>
QL_HD VI<K> splat_int(int i) {
    return VI<K>{} + i;
}
template <int K>
QL_HD VI<K> bits(VF<K> v) {
    return (VI<K>)v;  // GCC: a cast between vectors of one size keeps the bits
}
template <int K>
QL_HD VF<K> from_bits(VI<K> v) {
    return (VF<K>)v;
}
template <int K>
QL_HD VF<K> to_float(VI<K> v) {
    return __builtin_convertvector(v, VF<K>);
}
// m: a comparison result (all bits set or clear per lane).
template <int K>
QL_HD VF<K> select(VI<K> m, VF<K> a, VF<K> b) {
    return from_bits<K>((bits<K>(a) & m) | (bits<K>(b) & ~m));
}
template <int K>
QL_HD VI<K> select(VI<K> m, VI<K> a, VI<K> b) {
    return (a & m) | (b & ~m);
}
template <int K>
QL_HD bool any(VI<K> m) {
    int32_t r = 0;
    for (int k = 0; k < K; ++k) r |= m[k];
    return r != 0;
}

#else

template <int K, class T>
struct Lanes {
    T v[K];
    QL_HD T& operator[](int k) { return v[k]; }
    QL_HD const T& operator[](int k) const { return v[k]; }
};
template <int K>
using VF = Lanes<K, float>;
template <int K>
using VI = Lanes<K, int32_t>;

#define QL_LANES_BINARY(OP, R)                                                   \
    template <int K, class T>                                                   \
    QL_HD Lanes<K, R> operator OP(const Lanes<K, T>& a, const Lanes<K, T>& b) { \
        Lanes<K, R> r;                                                          \
        for (int k = 0; k < K; ++k) r.v[k] = a.v[k] OP b.v[k];                  \
        return r;                                                               \
    }                                                                           \
    template <int K, class T>                                                   \
    QL_HD Lanes<K, R> operator OP(const Lanes<K, T>& a, T b) {                  \
        Lanes<K, R> r;                                                          \
        for (int k = 0; k < K; ++k) r.v[k] = a.v[k] OP b;                       \
        return r;                                                               \
    }                                                                           \
    template <int K, class T>                                                   \
    QL_HD Lanes<K, R> operator OP(T a, const Lanes<K, T>& b) {                  \
        Lanes<K, R> r;                                                          \
        for (int k = 0; k < K; ++k) r.v[k] = a OP b.v[k];                       \
        return r;                                                               \
    }
QL_LANES_BINARY(+, T)
QL_LANES_BINARY(-, T)
QL_LANES_BINARY(*, T)
QL_LANES_BINARY(/, T)
QL_LANES_BINARY(&, T)
QL_LANES_BINARY(|, T)
#undef QL_LANES_BINARY
#define QL_LANES_COMPARE(OP)                                                           \
    template <int K, class T>                                                         \
    QL_HD Lanes<K, int32_t> operator OP(const Lanes<K, T>& a, const Lanes<K, T>& b) { \
        Lanes<K, int32_t> r;                                                          \
        for (int k = 0; k < K; ++k) r.v[k] = a.v[k] OP b.v[k] ? -1 : 0;               \
        return r;                                                                     \
    }                                                                                 \
    template <int K, class T>                                                         \
    QL_HD Lanes<K, int32_t> operator OP(const Lanes<K, T>& a, T b) {                  \
        Lanes<K, int32_t> r;                                                          \
        for (int k = 0; k < K; ++k) r.v[k] = a.v[k] OP b ? -1 : 0;                    \
        return r;                                                                     \
    }
QL_LANES_COMPARE(<)
QL_LANES_COMPARE(>)
QL_LANES_COMPARE(<=)
QL_LANES_COMPARE(>=)
QL_LANES_COMPARE(==)
QL_LANES_COMPARE(!=)
#undef QL_LANES_COMPARE
template <int K, class T>
QL_HD Lanes<K, T> operator-(const Lanes<K, T>& a) {
    Lanes<K, T> r;
    for (int k = 0; k < K; ++k) r.v[k] = -a.v[k];
    return r;
}
template <int K, class T>
QL_HD Lanes<K, T> operator~(const Lanes<K, T>& a) {
    Lanes<K, T> r;
    for (int k = 0; k < K; ++k) r.v[k] = ~a.v[k];
    return r;
}
template <int K, class T>
QL_HD Lanes<K, T>& operator+=(Lanes<K, T>& a, const Lanes<K, T>& b) {
    for (int k = 0; k < K; ++k) a.v[k] += b.v[k];
    return a;
}
template <int K, class T>
QL_HD Lanes<K, T>& operator|=(Lanes<K, T>& a, const Lanes<K, T>& b) {
    for (int k = 0; k < K; ++k) a.v[k] |= b.v[k];
    return a;
}

template <int K>
QL_HD VF<K> load(const float* p) {
    VF<K> v;
    for (int k = 0; k < K; ++k) v.v[k] = p[k];
    return v;
}
template <int K>
QL_HD void store(float* p, VF<K> v) {
    for (int k = 0; k < K; ++k) p[k] = v.v[k];
}
template <int K>
QL_HD VF<K> splat(float f) {
    VF<K> v;
    for (int k = 0; k < K; ++k) v.v[k] = f;
    return v;
}
template <int K>
QL_HD VI<K> splat_int(int i) {
    VI<K> v;
    for (int k = 0; k < K; ++k) v.v[k] = i;
    return v;
}
template <int K>
QL_HD VI<K> bits(VF<K> a) {
    VI<K> r;
    for (int k = 0; k < K; ++k) r.v[k] = static_cast<int32_t>(float_bits(a.v[k]));
    return r;
}
template <int K>
QL_HD VF<K> from_bits(VI<K> a) {
    VF<K> r;
    for (int k = 0; k < K; ++k) r.v[k] = bits_float(static_cast<uint32_t>(a.v[k]));
    return r;
}
template <int K>
QL_HD VF<K> to_float(VI<K> a) {
    VF<K> r;
    for (int k = 0; k < K; ++k) r.v[k] = static_cast<float>(a.v[k]);
    return r;
}
template <int K>
QL_HD VF<K> select(VI<K> m, VF<K> a, VF<K> b) {
    VF<K> r;
    for (int k = 0; k < K; ++k) r.v[k] = m.v[k] ? a.v[k] : b.v[k];
    return r;
}
template <int K>
QL_HD VI<K> select(VI<K> m, VI<K> a, VI<K> b) {
    VI<K> r;
    for (int k = 0; k < K; ++k) r.v[k] = m.v[k] ? a.v[k] : b.v[k];
    return r;
}
template <int K>
QL_HD bool any(VI<K> m) {
    int32_t r = 0;
    for (int k = 0; k < K; ++k) r |= m.v[k];
    return r != 0;
}

#endif

// |a| (clears the sign bit, as fabsf).
template <int K>
QL_HD VF<K> abs(VF<K> a) {
    return from_bits<K>(bits<K>(a) & splat_int<K>(0x7FFFFFFF));
}

template <int K>
QL_HD VI<K> is_nan(VF<K> a) {
    return a != a;
}

}  // namespace ql::kernels::lanes
