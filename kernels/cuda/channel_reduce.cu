// SPDX-License-Identifier: GPL-3.0-or-later
// Range statistics on the device (kernels/channel_reduce.cpp). Maxima and minima are taken on
// integer images of the floats (magnitude bits, sortable keys: kernels/magnitude_bits.h), so the
// result does not depend on the order of the reduction and equals the CPU's exactly. Partial
// results meet in global memory through integer atomics, starting from 0 (the key of +0.0f),
// which is also what the CPU's accumulators start from.
#include "kernels/channel_reduce.h"
#include "kernels/cuda/block_drivers.cuh"
#include "kernels/cuda_kernels.h"

namespace ql::kernels::cuda {
namespace {

using namespace detail;

constexpr int64_t kSegment = int64_t{kThreads} * 32;  // elements of one run a CTA reduces per task
constexpr int64_t kMinRunForRunsKernel = 128;
constexpr int64_t kReductionBlocksPerSm = 8;  // resident blocks: about one atomic per block

struct AbsmaxSink {
    uint32_t* out;
    QL_DEV void commit(int64_t c, const FiniteAbsmax& s) const {
        if (s.m != 0) atomicMax(out + c, s.m);
    }
};

struct RangeSink {
    int32_t* lo;
    int32_t* hi;
    QL_DEV void commit(int64_t c, const FiniteRange& s) const {
        if (s.lo < 0) atomicMin(lo + c, s.lo);
        if (s.hi > 0) atomicMax(hi + c, s.hi);
    }
};

// Combines the statistic over the CTA (warp shuffles, then shared memory) and commits it once.
// Every thread of the CTA must call it.
template <class Stat, class Sink>
QL_DEV void cta_commit(Stat s, int64_t c, const Sink& sink) {
    __shared__ uint64_t storage[(sizeof(Stat) * (kThreads / 32) + 7) / 8];  // 8-byte aligned
    Stat* part = reinterpret_cast<Stat*>(storage);
    team_reduce<32>(s);
    const int warp = static_cast<int>(threadIdx.x) / 32;
    if (threadIdx.x % 32 == 0) part[warp] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        Stat all = part[0];
        for (int w = 1; w < kThreads / 32; ++w) all.merge(part[w]);
        sink.commit(c, all);
    }
    __syncthreads();  // `part` is reused by the next task
}

template <class Stat>
QL_DEV void accumulate_span(const float* p, int64_t len, Stat& acc) {
    int64_t start = 0;
    if (aligned(p, 16)) {
        const float4* p4 = reinterpret_cast<const float4*>(p);
        const int64_t n4 = len / 4;
#pragma unroll 4
        for (int64_t q = threadIdx.x; q < n4; q += kThreads) {
            const float4 v = p4[q];
            acc.add(v.x);
            acc.add(v.y);
            acc.add(v.z);
            acc.add(v.w);
        }
        start = n4 * 4;
    }
    for (int64_t i = start + threadIdx.x; i < len; i += kThreads) acc.add(p[i]);
}

// Runs of `inner` contiguous elements (run r belongs to channel r % channels), cut into tasks of
// kSegment elements; a CTA keeps accumulating while its tasks stay in one channel (always, per
// tensor) and commits when the channel changes.
template <class Stat, class Sink>
__global__ void __launch_bounds__(kThreads) runs_kernel(const float* x, int64_t inner, int64_t channels,
                                                        int64_t nruns, int64_t segments, Sink sink) {
    const int64_t ntasks = nruns * segments;
    int64_t current = -1;  // uniform over the CTA
    Stat acc{};
    for (int64_t t = blockIdx.x; t < ntasks; t += gridDim.x) {
        const int64_t r = t / segments, seg = t - r * segments;
        const int64_t c = r % channels;
        if (c != current) {
            if (current >= 0) cta_commit(acc, current, sink);
            acc = Stat{};
            current = c;
        }
        const int64_t begin = seg * kSegment;
        const int64_t len = inner - begin < kSegment ? inner - begin : kSegment;
        accumulate_span(x + r * inner + begin, len, acc);
    }
    if (current >= 0) cta_commit(acc, current, sink);
}

// Short runs (inner < 128): thread j walks column j of the [outer, channels * inner] view over
// a chunk of rows; neighbouring threads read neighbouring floats.
template <class Stat, class Sink>
__global__ void __launch_bounds__(kThreads) columns_kernel(const float* x, int64_t width, int64_t inner, int64_t outer,
                                                           int64_t rows_per_chunk, int64_t column_blocks,
                                                           int64_t ntasks, Sink sink) {
    for (int64_t t = blockIdx.x; t < ntasks; t += gridDim.x) {
        const int64_t chunk = t / column_blocks;
        const int64_t j = (t - chunk * column_blocks) * kThreads + threadIdx.x;
        if (j >= width) continue;
        const int64_t o0 = chunk * rows_per_chunk;
        const int64_t o1 = outer - o0 < rows_per_chunk ? outer : o0 + rows_per_chunk;
        Stat acc{};
        for (int64_t o = o0; o < o1; ++o) acc.add(x[o * width + j]);
        sink.commit(j / inner, acc);
    }
}

__global__ void __launch_bounds__(kThreads) keys_to_floats_kernel(float* values, int64_t n) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * kThreads)
        values[i] = from_sortable_key(static_cast<int32_t>(float_bits(values[i])));
}

template <class Stat, class Sink>
void reduce(const char* name, const float* x, const ChannelLayout& L, const Sink& sink, void* stream) {
    if (L.elements() == 0) return;
    if (L.inner >= kMinRunForRunsKernel || L.outer * L.channels == 1) {
        const int64_t nruns = L.outer * L.channels;
        const int64_t segments = (L.inner + kSegment - 1) / kSegment;
        launch(name, &runs_kernel<Stat, Sink>, grid_for(nruns * segments, 1, kReductionBlocksPerSm), stream, x, L.inner,
               L.channels, nruns, segments, sink);
        return;
    }
    const int64_t width = L.channels * L.inner;
    const int64_t rows_per_chunk = L.outer / 1024 > 16 ? (L.outer + 1023) / 1024 : 16;  // <= ~1024 atomics per column
    const int64_t chunks = (L.outer + rows_per_chunk - 1) / rows_per_chunk;
    const int64_t column_blocks = (width + kThreads - 1) / kThreads;
    const int64_t ntasks = chunks * column_blocks;
    launch(name, &columns_kernel<Stat, Sink>, grid_for(ntasks, 1, kReductionBlocksPerSm), stream, x, width, L.inner,
           L.outer, rows_per_chunk, column_blocks, ntasks, sink);
}

void zero(void* p, int64_t floats, void* stream) {
    check(cudaMemsetAsync(p, 0, static_cast<size_t>(floats) * sizeof(float), as_stream(stream)), "cudaMemsetAsync");
}

}  // namespace

void channel_finite_absmax(const float* x, const ChannelLayout& L, float* out, void* stream) {
    if (L.channels <= 0) return;
    zero(out, L.channels, stream);
    reduce<FiniteAbsmax>("channel_finite_absmax", x, L, AbsmaxSink{reinterpret_cast<uint32_t*>(out)}, stream);
}

void channel_finite_range(const float* x, const ChannelLayout& L, float* mins, float* maxs, void* stream) {
    if (L.channels <= 0) return;
    zero(mins, L.channels, stream);
    zero(maxs, L.channels, stream);
    reduce<FiniteRange>("channel_finite_range", x, L,
                        RangeSink{reinterpret_cast<int32_t*>(mins), reinterpret_cast<int32_t*>(maxs)}, stream);
    launch("channel_finite_range", &keys_to_floats_kernel, grid_for(L.channels, kThreads), stream, mins, L.channels);
    launch("channel_finite_range", &keys_to_floats_kernel, grid_for(L.channels, kThreads), stream, maxs, L.channels);
}

float finite_absmax(const float* x, int64_t n, void* stream) {
    const DeviceArray<float> result(1, stream);
    channel_finite_absmax(x, ChannelLayout{1, 1, n}, result.data(), stream);
    float host = 0.0f;
    copy_to_host(&host, result.data(), sizeof host, stream);
    return host;
}

}  // namespace ql::kernels::cuda
