// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/gguf_shape_fallback.h"

#include "engine/core/errors.h"

namespace ql {

GgmlType gguf_shape_fallback(int64_t ncols, GgmlType target, std::string& why) {
    const int64_t qk = ggml_block_size(target);
    if (ncols % qk == 0) return target;
    GgmlType r = target;
    switch (target) {
        case GgmlType::IQ1_S:
        case GgmlType::IQ1_M:
        case GgmlType::IQ2_XXS:
        case GgmlType::IQ2_XS:
        case GgmlType::IQ2_S:
        case GgmlType::IQ3_XXS:
        case GgmlType::IQ3_S:
        case GgmlType::IQ4_XS: r = GgmlType::IQ4_NL; break;
        case GgmlType::Q2_K:
        case GgmlType::Q3_K:
        case GgmlType::TQ1_0:
        case GgmlType::TQ2_0: r = GgmlType::Q4_0; break;
        case GgmlType::Q4_K: r = GgmlType::Q5_0; break;
        case GgmlType::Q5_K: r = GgmlType::Q5_1; break;
        case GgmlType::Q6_K: r = GgmlType::Q8_0; break;
        default:
            if (qk > 32) throw UserError(std::string("GGUF: no fallback is defined for type ") + ggml_type_name(target));
            break;  // a 32-block type: the F16 check below
    }
    why = "ne[0] " + std::to_string(ncols) + " is not a multiple of " + std::to_string(qk) + " (" + ggml_type_name(target) + ")";
    if (ncols % ggml_block_size(r) != 0) {
        r = GgmlType::F16;
        why += ", nor of its fallback's block: F16";
    } else {
        why += std::string(" -> ") + ggml_type_name(r);
    }
    return r;
}

}  // namespace ql
