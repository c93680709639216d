// SPDX-License-Identifier: GPL-3.0-or-later
// Plain scalar transcriptions of ggml's i-quant and ternary quantizers (ggml/src/ggml-quants.c as
// vendored by llama-cpp-python 0.3.36): quantize_row_iq2_xxs_impl, quantize_row_iq2_xs_impl,
// quantize_row_iq2_s_impl, quantize_row_iq3_xxs_impl (IQ3_XXS), quantize_row_iq3_s_impl,
// quantize_row_iq1_s_impl, quantize_row_iq1_m_impl, quantize_row_tq1_0_ref,
// quantize_row_tq2_0_ref, their dequantize_row_*, and the search tables iq2xs_init_impl /
// iq3xs_init_impl build (distances sorted as ggml's qsort orders them). The fast CPU kernels
// (gguf_iquant_encode.h) are tested against these bit for bit, and these against ggml itself
// (tests/peers, scripts/check-kquants).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/gguf_iquant_grids.h"

namespace ql::kernels::reference {

enum class IQuant { IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, TQ1_0, TQ2_0 };

// Every type has blocks of 256 elements; bytes per block: 66, 74, 82, 98, 110, 50, 56, 54, 66.
int64_t iquant_block_bytes(IQuant t);

// ggml_quantize_requires_imatrix: IQ2_XXS, IQ2_XS and IQ1_S (ggml asserts on a null imatrix).
bool iquant_requires_importance(IQuant t);

// x: rows * cols float32, finite, cols a multiple of 256. importance: empty, or cols floats
// shared by every row (ggml_quantize_chunk's imatrix); std::invalid_argument when a type that
// requires one gets none. Returns what ggml_quantize_chunk(type, x, ..., importance or NULL)
// writes. TQ1_0 / TQ2_0 ignore importance, as ggml does.
std::vector<uint8_t> iquant_quantize(const std::vector<float>& x, int64_t rows, int64_t cols, IQuant t,
                                     const std::vector<float>& importance);

// The values ggml's dequantize_row_* computes from those bytes.
std::vector<float> iquant_dequantize(const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols, IQuant t);

// ggml's neighbour list of the level vector u (kmap index) of a lattice, as iq2xs_init_impl /
// iq3xs_init_impl build it (sorted by distance, then index): point indices in ggml's order;
// empty when u is a lattice point or has a level the quantizers never form.
std::vector<uint16_t> iquant_reference_neighbours(iquant::Lattice lattice, int u);

}  // namespace ql::kernels::reference
