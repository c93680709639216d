// SPDX-License-Identifier: GPL-3.0-or-later
// Integer quantization on the device with the CPU kernels' quantizer (kernels/integer_step.h).
#include <type_traits>

#include "kernels/cuda/block_drivers.cuh"
#include "kernels/cuda_kernels.h"
#include "kernels/integer_step.h"

namespace ql::kernels::cuda {
namespace {

using namespace detail;

__global__ void __launch_bounds__(kThreads)
    params_kernel(const float* lo, const float* hi, int64_t n, IntFormat f, IntParams* params) {
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * kThreads)
        params[i] = IntStep::params_for_range(lo ? lo[i] : -hi[i], hi[i], f);
}

// ---- Per tensor / per channel: element-wise with the channel's step -------------------------

struct ChannelFakeOp {
    const IntParams* params;
    IntFormat f;
    using In = float;
    using Out = float;
    using Param = IntStep;
    QL_HD IntStep param(int64_t c) const { return IntStep::make(params[c], f); }
    QL_HD float apply(float v, const IntStep& s) const { return s.fake(v); }
};

struct ChannelEncodeOp {
    const IntParams* params;
    IntFormat f;
    using In = float;
    using Out = uint8_t;
    using Param = IntStep;
    QL_HD IntStep param(int64_t c) const { return IntStep::make(params[c], f); }
    QL_HD uint8_t apply(float v, const IntStep& s) const { return s.encode(v); }
};

struct DecodeOp {  // per channel or per group: params indexed by the geometry
    const IntParams* params;
    IntFormat f;
    using In = uint8_t;
    using Out = float;
    using Param = IntStep;
    QL_HD IntStep param(int64_t p) const { return IntStep::make(params[p], f); }
    QL_HD float apply(uint8_t c, const IntStep& s) const { return s.decode(c); }
};

// ---- Per group: statistics inside the pass ---------------------------------------------------

template <bool Asym>
struct GroupFakeOp {
    float* y;
    IntFormat f;
    using Stat = IntGroupStatistic<Asym>;
    using Block = IntStep;
    QL_HD IntStep block(const Stat& st, int64_t, int64_t, bool) const {
        return IntStep::make(IntStep::params_for(st, f), f);
    }
    QL_HD void elements4(int64_t i, float4 v, const IntStep& s) const {
        *reinterpret_cast<float4*>(y + i) = make_float4(s.template fake<Asym>(v.x), s.template fake<Asym>(v.y),
                                                        s.template fake<Asym>(v.z), s.template fake<Asym>(v.w));
    }
    QL_HD void element(int64_t i, float v, const IntStep& s) const { y[i] = s.template fake<Asym>(v); }
};

template <bool Asym>
struct GroupEncodeOp {
    uint8_t* codes;
    IntParams* params;
    IntFormat f;
    using Stat = IntGroupStatistic<Asym>;
    using Block = IntStep;
    QL_HD IntStep block(const Stat& st, int64_t b, int64_t, bool leader) const {
        const IntParams p = IntStep::params_for(st, f);
        if (leader) params[b] = p;
        return IntStep::make(p, f);
    }
    QL_HD void elements4(int64_t i, float4 v, const IntStep& s) const {
        *reinterpret_cast<uchar4*>(codes + i) = make_uchar4(s.encode(v.x), s.encode(v.y), s.encode(v.z), s.encode(v.w));
    }
    QL_HD void element(int64_t i, float v, const IntStep& s) const { codes[i] = s.encode(v); }
};

void require_format(IntFormat f) {
    if (f.bits < 2 || f.bits > 8) invalid("integer formats have 2..8 bits, got " + std::to_string(f.bits));
}

// Group sizes with a fast path; others (and tails, unaligned buffers) take the generic driver.
template <template <bool> class Op, class... Members>
void run_groups(const char* name, const float* x, const RowBlocks& L, IntFormat f, bool outputs_aligned,
                void* stream, Members... members) {
    if (L.block <= 0) invalid("group size must be positive");
    auto run = [&](auto asym) {
        using GroupOp = Op<decltype(asym)::value>;
        const GroupOp op{members..., f};
        switch (L.block) {
            case 32: run_blocks<32, 32>(name, op, x, L, outputs_aligned, stream); return;
            case 64: run_blocks<64, 32>(name, op, x, L, outputs_aligned, stream); return;
            case 256: run_blocks<256, 32>(name, op, x, L, outputs_aligned, stream); return;
            default: run_blocks<128, 32>(name, op, x, L, outputs_aligned, stream); return;
        }
    };
    if (f.asymmetric)
        run(std::true_type{});
    else
        run(std::false_type{});
}

}  // namespace

void int_params_for_range(const float* lo, const float* hi, int64_t channels, IntFormat f, IntParams* params,
                          void* stream) {
    require_format(f);
    if (channels <= 0) return;
    launch("int_params_for_range", &params_kernel, grid_for(channels, kThreads), stream, lo, hi, channels, f, params);
}

void int_fake_quant_channels(const float* x, float* y, const ChannelLayout& L, const IntParams* params, IntFormat f,
                             void* stream) {
    require_format(f);
    run_channel_map("int_fake_quant_channels", ChannelFakeOp{params, f}, L, x, y, stream);
}

void int_encode_channels(const float* x, const ChannelLayout& L, const IntParams* params, IntFormat f,
                         uint8_t* codes, void* stream) {
    require_format(f);
    run_channel_map("int_encode_channels", ChannelEncodeOp{params, f}, L, x, codes, stream);
}

void int_decode_channels(const uint8_t* codes, const ChannelLayout& L, const IntParams* params, IntFormat f,
                         float* y, void* stream) {
    require_format(f);
    run_channel_map("int_decode_channels", DecodeOp{params, f}, L, codes, y, stream);
}

void int_fake_quant_groups(const float* x, float* y, const RowBlocks& L, IntFormat f, void* stream) {
    require_format(f);
    run_groups<GroupFakeOp>("int_fake_quant_groups", x, L, f, aligned(y, 16), stream, y);
}

void int_encode_groups(const float* x, const RowBlocks& L, IntFormat f, uint8_t* codes, IntParams* params,
                       void* stream) {
    require_format(f);
    run_groups<GroupEncodeOp>("int_encode_groups", x, L, f, aligned(codes, 4), stream, codes, params);
}

void int_decode_groups(const uint8_t* codes, const IntParams* params, const RowBlocks& L, IntFormat f, float* y,
                       void* stream) {
    require_format(f);
    if (L.block <= 0) invalid("group size must be positive");
    const DecodeOp op{params, f};
    switch (L.block) {
        case 32: run_block_map<32>("int_decode_groups", op, L, codes, y, stream); return;
        case 64: run_block_map<64>("int_decode_groups", op, L, codes, y, stream); return;
        case 256: run_block_map<256>("int_decode_groups", op, L, codes, y, stream); return;
        default: run_block_map<128>("int_decode_groups", op, L, codes, y, stream); return;
    }
}

}  // namespace ql::kernels::cuda
