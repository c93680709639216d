// SPDX-License-Identifier: GPL-3.0-or-later
// OCP Microscaling on the device with the CPU kernels' element types and block scaling
// (kernels/mx_element.h).
#include "kernels/cuda/block_drivers.cuh"
#include "kernels/cuda_kernels.h"
#include "kernels/mx_element.h"

namespace ql::kernels::cuda {
namespace {

using namespace detail;

template <class El>
struct FakeOp {
    float* y;
    MxScaleRule rule;
    float inv_max;
    using Stat = AnyAbsmax;
    using Block = MxBlockScale;
    QL_HD MxBlockScale block(const Stat& st, int64_t, int64_t, bool) const {
        return mx_block_scale(mx_scale_byte<El>(st.value(), rule, inv_max));
    }
    QL_HD void elements4(int64_t i, float4 v, const MxBlockScale& k) const {
        *reinterpret_cast<float4*>(y + i) = make_float4(mx_fake_element<El>(v.x, k), mx_fake_element<El>(v.y, k),
                                                        mx_fake_element<El>(v.z, k), mx_fake_element<El>(v.w, k));
    }
    QL_HD void element(int64_t i, float v, const MxBlockScale& k) const { y[i] = mx_fake_element<El>(v, k); }
};

template <class El>
struct EncodeOp {
    uint8_t* codes;
    uint8_t* scales;
    MxScaleRule rule;
    float inv_max;
    using Stat = AnyAbsmax;
    using Block = MxBlockScale;
    QL_HD MxBlockScale block(const Stat& st, int64_t b, int64_t, bool leader) const {
        const uint8_t byte = mx_scale_byte<El>(st.value(), rule, inv_max);
        if (leader) scales[b] = byte;
        return mx_block_scale(byte);
    }
    QL_HD void elements4(int64_t i, float4 v, const MxBlockScale& k) const {
        *reinterpret_cast<uchar4*>(codes + i) = make_uchar4(mx_code_element<El>(v.x, k), mx_code_element<El>(v.y, k),
                                                            mx_code_element<El>(v.z, k), mx_code_element<El>(v.w, k));
    }
    QL_HD void element(int64_t i, float v, const MxBlockScale& k) const { codes[i] = mx_code_element<El>(v, k); }
};

template <class El>
struct DecodeOp {
    const uint8_t* scales;
    using In = uint8_t;
    using Out = float;
    using Param = float;
    QL_HD float param(int64_t b) const { return e8m0_to_float(scales[b]); }
    QL_HD float apply(uint8_t c, float scale) const { return mx_decode_element<El>(c, scale); }
};

template <class Visitor>
void with_element(MxElement e, const Visitor& v) {
    if (!visit_mx_element(e, v)) invalid("unknown MX element type");
}

void require_block(const RowBlocks& L) {
    if (L.block <= 0) invalid("MX block size must be positive");
}

}  // namespace

void mx_fake_quant(const float* x, float* y, const RowBlocks& L, MxElement e, MxScaleRule rule, void* stream) {
    require_block(L);
    with_element(e, [&](auto el) {
        using El = decltype(el);
        run_blocks<kMxBlock, 32>("mx_fake_quant", FakeOp<El>{y, rule, mx_inverse_max<El>()}, x, L, aligned(y, 16),
                                 stream);
    });
}

void mx_encode(const float* x, const RowBlocks& L, MxElement e, MxScaleRule rule, uint8_t* codes, uint8_t* scales,
               void* stream) {
    require_block(L);
    with_element(e, [&](auto el) {
        using El = decltype(el);
        run_blocks<kMxBlock, 32>("mx_encode", EncodeOp<El>{codes, scales, rule, mx_inverse_max<El>()}, x, L,
                                 aligned(codes, 4), stream);
    });
}

void mx_decode(const uint8_t* codes, const uint8_t* scales, const RowBlocks& L, MxElement e, float* y, void* stream) {
    require_block(L);
    with_element(e, [&](auto el) {
        using El = decltype(el);
        run_block_map<kMxBlock>("mx_decode", DecodeOp<El>{scales}, L, codes, y, stream);
    });
}

}  // namespace ql::kernels::cuda
