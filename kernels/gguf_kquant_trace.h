// SPDX-License-Identifier: GPL-3.0-or-later
// ggml's K-quant / IQ4 sub-block searches, one sub-block at a time with every candidate recorded:
// what the Format Explorer shows when it steps a sample super-block through the search. Scalar
// transcriptions of the same searches as gguf_kquant_search.h (the same float32 operations in
// ggml's order), so the result of each search is the kernels' own; tests/kernels checks that the
// traced results, quantized to the super-block's 4/6/8-bit scales, give the stored bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gguf_blocks.h"

namespace ql::kernels {

struct GgufSearchCandidate {
    int step = 0;            // ggml's loop index (is, itry or the refinement pass)
    float inverse_scale = 0; // the candidate's iscale (codes = nearest(iscale * (x - min)))
    float scale = 0;         // the scale fitted to the candidate's codes
    float min = 0;           // and the min (asymmetric types; 0 otherwise), as stored: x = scale q - min
    float objective = 0;     // what ggml compares (GgufSubBlockSearch::objective says which)
    bool accepted = false;   // ggml kept it as the best so far
};

struct GgufSubBlockSearch {
    std::string method;      // "make_qkx2_quants: 21 candidate steps ...", for the view
    std::string objective;   // "weighted squared error (smaller wins)" / "sum(wqx)^2 / sum(wq^2) (larger wins)"
    float scale = 0, min = 0;  // the search's result for the sub-block (before the super-block quantizes it)
    std::vector<GgufSearchCandidate> candidates;  // in ggml's order, the first one being the start
};

// Sub-block j of one block of a K-quant / IQ4 type t (x: gguf_block_elements(t) floats;
// importance: as many, or nullptr). Non-finite values are searched as 0, as the kernels do.
GgufSubBlockSearch gguf_trace_sub_block_search(const float* x, const float* importance, GgufType t, int j);

// The stored sub-block scale (and min) integers that ggml's super-block step makes of the
// searches' results (the 4/6/8-bit quantization of the scales, before requantization):
// GgufBlockFields.scales / .mins of the encoded block. For the view's "super-block" step.
void gguf_trace_super_block(const std::vector<GgufSubBlockSearch>& searches, const float* x, const float* importance,
                            GgufType t, GgufBlockFields* fields);

}  // namespace ql::kernels
