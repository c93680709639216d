// SPDX-License-Identifier: GPL-3.0-or-later
// ggml's primitives shared by the scalar transcriptions (reference_kquants.cpp defines them,
// reference_iquants.cpp uses them too): ggml-quants.c nearest_int, MAX / MIN and
// make_qp_quants, ggml-impl.h's software fp32 <-> fp16 conversions (GGUF_KQUANTS.md section 1).
#pragma once

#include <cstdint>

namespace ql::kernels::reference::ggml_ref {

template <class T>
T MAX(T a, T b) { return a > b ? a : b; }
template <class T>
T MIN(T a, T b) { return a < b ? a : b; }

// nearest_int: the float32 bit trick (round half to even for |f| <= 4194303); NaN gives 0.
int nearest_int(float fval);
// GGML_FP32_TO_FP16 / GGML_FP16_TO_FP32, and little-endian stores and loads of them.
uint16_t fp32_to_fp16(float f);
float fp16_to_fp32(uint16_t h);
void put_fp16(uint8_t* p, float v);
float get_fp16(const uint8_t* p);
// make_qp_quants (GGUF_KQUANTS.md section 3.5).
float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* quant_weights);

}  // namespace ql::kernels::reference::ggml_ref
