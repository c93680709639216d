// SPDX-License-Identifier: GPL-3.0-or-later
// BF16 / FP16 round trips on the device with kernels/half_precision.h's conversions (RNE; FP16
// overflows to Inf), bit-identical to kernels/half_rounding.cpp.
#include "kernels/cuda/block_drivers.cuh"
#include "kernels/cuda_kernels.h"
#include "kernels/half_precision.h"

namespace ql::kernels::cuda {
namespace {

using namespace detail;

struct NoParam {};

template <bool Bf16>
struct RoundTripOp {
    using In = float;
    using Out = float;
    using Param = NoParam;
    QL_HD NoParam param(int64_t) const { return {}; }
    QL_HD float apply(float v, NoParam) const {
        return Bf16 ? bf16_bits_to_fp32(fp32_to_bf16_bits(v)) : fp16_bits_to_fp32(fp32_to_fp16_bits(v));
    }
};

template <bool Bf16>
struct EncodeOp {
    using In = float;
    using Out = uint16_t;
    using Param = NoParam;
    QL_HD NoParam param(int64_t) const { return {}; }
    QL_HD uint16_t apply(float v, NoParam) const { return Bf16 ? fp32_to_bf16_bits(v) : fp32_to_fp16_bits(v); }
};

template <bool Bf16>
struct DecodeOp {
    using In = uint16_t;
    using Out = float;
    using Param = NoParam;
    QL_HD NoParam param(int64_t) const { return {}; }
    QL_HD float apply(uint16_t h, NoParam) const { return Bf16 ? bf16_bits_to_fp32(h) : fp16_bits_to_fp32(h); }
};

}  // namespace

void half_round_trip(const float* x, float* y, int64_t n, HalfKind k, void* stream) {
    if (k == HalfKind::BF16)
        run_map("half_round_trip", RoundTripOp<true>{}, SingleParam{}, x, y, n, stream);
    else
        run_map("half_round_trip", RoundTripOp<false>{}, SingleParam{}, x, y, n, stream);
}

void half_encode(const float* x, int64_t n, HalfKind k, uint16_t* codes, void* stream) {
    if (k == HalfKind::BF16)
        run_map("half_encode", EncodeOp<true>{}, SingleParam{}, x, codes, n, stream);
    else
        run_map("half_encode", EncodeOp<false>{}, SingleParam{}, x, codes, n, stream);
}

void half_decode(const uint16_t* codes, int64_t n, HalfKind k, float* y, void* stream) {
    if (k == HalfKind::BF16)
        run_map("half_decode", DecodeOp<true>{}, SingleParam{}, codes, y, n, stream);
    else
        run_map("half_decode", DecodeOp<false>{}, SingleParam{}, codes, y, n, stream);
}

}  // namespace ql::kernels::cuda
