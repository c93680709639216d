// SPDX-License-Identifier: GPL-3.0-or-later
// How the CUDA kernels walk their buffers. Formats supply an "op" with the arithmetic (written
// with the same QL_HD element functions as the CPU kernels); the drivers here decide which
// thread touches which element.
//
// Block formats (a statistic per block, then every element): a TEAM of consecutive lanes owns
// one block. The fast driver needs whole blocks of B floats (B a compile-time size), 16-byte
// aligned rows, and loads float4s: a warp reads 512 contiguous bytes per instruction, every lane
// first loads all of its slots (several blocks in flight per thread, to cover memory latency),
// then the team combines its statistic with shuffles, then writes. The generic driver handles
// any block size, short row tails and unaligned buffers with scalar, still coalesced, accesses
// and a second (cached) read of the block.
//
// Op interface for the block drivers:
//   using Stat = ...;          // kernels/magnitude_bits.h: Stat{} is the identity; add(float)
//   using Block = ...;         // what the elements need: scale, denominator, ...
//   Block block(const Stat&, int64_t b, int64_t len, bool leader) const;  // leader writes the
//                                                                         // block's own outputs
//   void elements4(int64_t i, float4 v, const Block&) const;  // x[i..i+3], i % 4 == 0
//   void element(int64_t i, float v, const Block&) const;
//
// Element-wise maps (decode, per-channel formats): a thread maps 4 consecutive elements with a
// parameter looked up per element (or once per quad when the geometry says a quad shares it).
#pragma once

#include "kernels/cuda/cuda_support.cuh"
#include "kernels/magnitude_bits.h"
#include "kernels/tensor_layout.h"

namespace ql::kernels::cuda::detail {

// ---- Block statistics -------------------------------------------------------------------------
// FiniteAbsmax, AnyAbsmax and FiniteRange (kernels/magnitude_bits.h) combined over TEAM lanes.

template <int TEAM, bool FINITE>
__device__ __forceinline__ void team_reduce(MaxMagnitude<FINITE>& s) {
    s.m = team_max<TEAM>(s.m);
}

template <int TEAM>
__device__ __forceinline__ void team_reduce(FiniteRange& s) {
    s.lo = team_min<TEAM>(s.lo);
    s.hi = team_max<TEAM>(s.hi);
}

// ---- Geometry of a RowBlocks buffer ------------------------------------------------------------

struct RowGeometry {
    int64_t cols = 0, block = 1, blocks_per_row = 0;

    static RowGeometry of(int64_t cols, int64_t block) { return {cols, block, (cols + block - 1) / block}; }

    // Element offset and length of block b (the last block of a row may be short).
    QL_HD void locate(int64_t b, int64_t* off, int64_t* len) const {
        const int64_t row = b / blocks_per_row;
        const int64_t j = b - row * blocks_per_row;
        const int64_t start = j * block;
        *off = row * cols + start;
        *len = cols - start < block ? cols - start : block;
    }
    // Block of element i.
    QL_HD int64_t block_of(int64_t i) const {
        const int64_t row = i / cols;
        return row * blocks_per_row + (i - row * cols) / block;
    }
};

// ---- Block drivers -----------------------------------------------------------------------------

template <int B>
struct VecTiling {
    static_assert(B % 4 == 0, "blocks of whole float4s");
    static constexpr int kTeam = B / 4 < 32 ? B / 4 : 32;  // lanes per block
    static_assert(32 % kTeam == 0 && (B / 4) % kTeam == 0, "a team divides the warp and the block");
    static constexpr int kVecsPerLane = B / 4 / kTeam;                      // float4s per lane per block
    static constexpr int kSlots = kVecsPerLane >= 4 ? 1 : 4 / kVecsPerLane;  // blocks in flight per lane
    static constexpr int kTeamsPerCta = kThreads / kTeam;
    static constexpr int64_t kBlocksPerIteration = int64_t{kTeamsPerCta} * kSlots;
};

// Whole blocks [0, nblocks) of B floats; x 16-byte aligned.
template <int B, class Op>
__global__ void __launch_bounds__(kThreads) vec_blocks_kernel(Op op, const float* x, int64_t nblocks) {
    using T = VecTiling<B>;
    const int team = static_cast<int>(threadIdx.x) / T::kTeam;
    const int lane = static_cast<int>(threadIdx.x) % T::kTeam;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    // The loop bounds are the same for every thread of the CUDA block, so whole warps reach the
    // shuffles together; teams past the end load zeros and write nothing.
    for (int64_t base = static_cast<int64_t>(blockIdx.x) * T::kBlocksPerIteration; base < nblocks;
         base += static_cast<int64_t>(gridDim.x) * T::kBlocksPerIteration) {
        float4 v[T::kSlots][T::kVecsPerLane];
#pragma unroll
        for (int s = 0; s < T::kSlots; ++s) {
            const int64_t b = base + s * T::kTeamsPerCta + team;
#pragma unroll
            for (int k = 0; k < T::kVecsPerLane; ++k)
                v[s][k] = b < nblocks ? x4[b * (B / 4) + lane + k * T::kTeam] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int s = 0; s < T::kSlots; ++s) {
            const int64_t b = base + s * T::kTeamsPerCta + team;
            typename Op::Stat st{};
#pragma unroll
            for (int k = 0; k < T::kVecsPerLane; ++k) {
                st.add(v[s][k].x);
                st.add(v[s][k].y);
                st.add(v[s][k].z);
                st.add(v[s][k].w);
            }
            team_reduce<T::kTeam>(st);
            if (b < nblocks) {
                const typename Op::Block blk = op.block(st, b, B, lane == 0);
#pragma unroll
                for (int k = 0; k < T::kVecsPerLane; ++k) op.elements4(b * B + 4 * (lane + k * T::kTeam), v[s][k], blk);
            }
        }
    }
}

// Blocks [b_begin, b_end) of any geometry; scalar accesses, TEAM lanes per block.
template <int TEAM, class Op>
__global__ void __launch_bounds__(kThreads) generic_blocks_kernel(Op op, const float* x, RowGeometry g,
                                                                  int64_t b_begin, int64_t b_end) {
    constexpr int kTeams = kThreads / TEAM;
    const int team = static_cast<int>(threadIdx.x) / TEAM;
    const int lane = static_cast<int>(threadIdx.x) % TEAM;
    for (int64_t base = b_begin + static_cast<int64_t>(blockIdx.x) * kTeams; base < b_end;
         base += static_cast<int64_t>(gridDim.x) * kTeams) {
        const int64_t b = base + team;
        int64_t off = 0, len = 0;
        if (b < b_end) g.locate(b, &off, &len);
        typename Op::Stat st{};
        for (int64_t k = lane; k < len; k += TEAM) st.add(x[off + k]);
        team_reduce<TEAM>(st);
        if (b < b_end) {
            const typename Op::Block blk = op.block(st, b, len, lane == 0);
            for (int64_t k = lane; k < len; k += TEAM) op.element(off + k, x[off + k], blk);
        }
    }
}

// Picks the driver: the vectorised one for whole, aligned blocks of size B (for a single row,
// e.g. NF4's flattened tensor, all blocks but a short last one), the generic one for the rest.
// `outputs_aligned` says whether the op's outputs allow 4-element vector stores.
template <int B, int GENERIC_TEAM, class Op>
void run_blocks(const char* name, const Op& op, const float* x, const RowBlocks& L, bool outputs_aligned,
                void* stream) {
    const int64_t nblocks = L.block_count();
    if (nblocks == 0 || L.elements() == 0) return;
    int64_t vec_blocks = 0;
    if (L.block == B && aligned(x, 16) && outputs_aligned && (L.divisible() || L.rows == 1))
        vec_blocks = L.divisible() ? nblocks : L.cols / B;
    if (vec_blocks > 0)
        launch(name, &vec_blocks_kernel<B, Op>, grid_for(vec_blocks, VecTiling<B>::kBlocksPerIteration), stream, op,
               x, vec_blocks);
    if (vec_blocks < nblocks)
        launch(name, &generic_blocks_kernel<GENERIC_TEAM, Op>, grid_for(nblocks - vec_blocks, kThreads / GENERIC_TEAM),
               stream, op, x, RowGeometry::of(L.cols, L.block), vec_blocks, nblocks);
}

// ---- Element-wise maps ----------------------------------------------------------------------
//
// Op interface:  using In, Out, Param;  Param param(int64_t p) const;  Out apply(In, const Param&) const;
// Geometry:      int64_t param_of(int64_t i) const;  bool quad_uniform  (elements 4k..4k+3 share
//                their parameter).

template <class T>
struct Vec4;
template <>
struct Vec4<float> {
    using type = float4;
};
template <>
struct Vec4<uint8_t> {
    using type = uchar4;
};
template <>
struct Vec4<uint16_t> {
    using type = ushort4;
};

// One parameter for the whole buffer (per-tensor scale, or none).
struct SingleParam {
    bool quad_uniform = true;
    QL_HD int64_t param_of(int64_t) const { return 0; }
};

// Channel (i / inner) % channels of a ChannelLayout.
struct ChannelParam {
    int64_t channels = 1, inner = 1;
    bool quad_uniform = false;
    QL_HD int64_t param_of(int64_t i) const { return (i / inner) % channels; }
};

// Block i / B of a buffer of whole blocks (B a multiple of 4: a quad never straddles blocks).
template <int B>
struct WholeBlockParam {
    bool quad_uniform = true;
    QL_HD int64_t param_of(int64_t i) const { return i / B; }
};

// The same with a run-time block size.
struct DivisibleBlockParam {
    int64_t block = 1;
    bool quad_uniform = false;
    QL_HD int64_t param_of(int64_t i) const { return i / block; }
};

// Block of element i in any RowBlocks geometry.
struct RowBlockParam {
    RowGeometry g;
    bool quad_uniform = false;
    QL_HD int64_t param_of(int64_t i) const { return g.block_of(i); }
};

constexpr int kMapSlots = 4;  // quads in flight per thread

template <class Op, class Geometry>
__global__ void __launch_bounds__(kThreads) vec_map_kernel(Op op, Geometry geo, const typename Op::In* in,
                                                           typename Op::Out* out, int64_t nquads) {
    using In4 = typename Vec4<typename Op::In>::type;
    using Out4 = typename Vec4<typename Op::Out>::type;
    const In4* in4 = reinterpret_cast<const In4*>(in);
    Out4* out4 = reinterpret_cast<Out4*>(out);
    constexpr int64_t kPerIteration = int64_t{kThreads} * kMapSlots;
    for (int64_t base = static_cast<int64_t>(blockIdx.x) * kPerIteration; base < nquads;
         base += static_cast<int64_t>(gridDim.x) * kPerIteration) {
        In4 v[kMapSlots];
#pragma unroll
        for (int s = 0; s < kMapSlots; ++s) {
            const int64_t q = base + s * kThreads + threadIdx.x;
            if (q < nquads) v[s] = in4[q];
        }
#pragma unroll
        for (int s = 0; s < kMapSlots; ++s) {
            const int64_t q = base + s * kThreads + threadIdx.x;
            if (q >= nquads) continue;
            const int64_t i = 4 * q;
            Out4 r;
            if (geo.quad_uniform) {
                const typename Op::Param p = op.param(geo.param_of(i));
                r.x = op.apply(v[s].x, p);
                r.y = op.apply(v[s].y, p);
                r.z = op.apply(v[s].z, p);
                r.w = op.apply(v[s].w, p);
            } else {
                r.x = op.apply(v[s].x, op.param(geo.param_of(i)));
                r.y = op.apply(v[s].y, op.param(geo.param_of(i + 1)));
                r.z = op.apply(v[s].z, op.param(geo.param_of(i + 2)));
                r.w = op.apply(v[s].w, op.param(geo.param_of(i + 3)));
            }
            out4[q] = r;
        }
    }
}

template <class Op, class Geometry>
__global__ void __launch_bounds__(kThreads) scalar_map_kernel(Op op, Geometry geo, const typename Op::In* in,
                                                              typename Op::Out* out, int64_t begin, int64_t end) {
    for (int64_t i = begin + static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < end;
         i += static_cast<int64_t>(gridDim.x) * kThreads)
        out[i] = op.apply(in[i], op.param(geo.param_of(i)));
}

// out[i] = op.apply(in[i], op.param(geo.param_of(i))) for i < n: vector path over the aligned
// whole quads, scalar path for the rest.
template <class Op, class Geometry>
void run_map(const char* name, const Op& op, const Geometry& geo, const typename Op::In* in, typename Op::Out* out,
             int64_t n, void* stream) {
    if (n <= 0) return;
    int64_t done = 0;
    if (aligned(in, 4 * sizeof(typename Op::In)) && aligned(out, 4 * sizeof(typename Op::Out))) {
        const int64_t nquads = n / 4;
        if (nquads > 0)
            launch(name, &vec_map_kernel<Op, Geometry>, grid_for(nquads, int64_t{kThreads} * kMapSlots), stream, op,
                   geo, in, out, nquads);
        done = nquads * 4;
    }
    if (done < n)
        launch(name, &scalar_map_kernel<Op, Geometry>, grid_for(n - done, kThreads), stream, op, geo, in, out, done,
               n);
}

// Decoding a RowBlocks buffer: the block of each element, looked up once per quad where quads
// cannot straddle blocks (rows and blocks both multiples of 4 long).
template <int B, class Op>
void run_block_map(const char* name, const Op& op, const RowBlocks& L, const typename Op::In* in,
                   typename Op::Out* out, void* stream) {
    if (L.elements() == 0) return;
    const bool quads_stay_in_blocks = L.block % 4 == 0 && L.cols % 4 == 0;
    if (L.block == B && L.divisible())
        run_map(name, op, WholeBlockParam<B>{}, in, out, L.elements(), stream);
    else if (L.divisible())
        run_map(name, op, DivisibleBlockParam{L.block, quads_stay_in_blocks}, in, out, L.elements(), stream);
    else
        run_map(name, op, RowBlockParam{RowGeometry::of(L.cols, L.block), quads_stay_in_blocks}, in, out,
                L.elements(), stream);
}

// Per-channel maps: one parameter per tensor, or per channel (per quad when inner % 4 == 0).
template <class Op>
void run_channel_map(const char* name, const Op& op, const ChannelLayout& L, const typename Op::In* in,
                     typename Op::Out* out, void* stream) {
    if (L.channels == 1)
        run_map(name, op, SingleParam{}, in, out, L.elements(), stream);
    else
        run_map(name, op, ChannelParam{L.channels, L.inner, L.inner % 4 == 0}, in, out, L.elements(), stream);
}

}  // namespace ql::kernels::cuda::detail
