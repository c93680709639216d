// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/gguf_kernel_types.h"

#include <cctype>

namespace ql {

namespace {
using kernels::GgufType;

struct Pair {
    GgmlType file;
    GgufType kernel;
};
constexpr Pair kPairs[] = {{GgmlType::Q8_0, GgufType::Q8_0},     {GgmlType::Q4_0, GgufType::Q4_0},
                           {GgmlType::Q4_1, GgufType::Q4_1},     {GgmlType::Q5_0, GgufType::Q5_0},
                           {GgmlType::MXFP4, GgufType::MXFP4},   {GgmlType::Q2_K, GgufType::Q2_K},
                           {GgmlType::Q3_K, GgufType::Q3_K},     {GgmlType::Q4_K, GgufType::Q4_K},
                           {GgmlType::Q5_K, GgufType::Q5_K},     {GgmlType::Q6_K, GgufType::Q6_K},
                           {GgmlType::IQ4_NL, GgufType::IQ4_NL}, {GgmlType::IQ4_XS, GgufType::IQ4_XS},
                           {GgmlType::IQ2_XXS, GgufType::IQ2_XXS}, {GgmlType::IQ2_XS, GgufType::IQ2_XS},
                           {GgmlType::IQ2_S, GgufType::IQ2_S},   {GgmlType::IQ3_XXS, GgufType::IQ3_XXS},
                           {GgmlType::IQ3_S, GgufType::IQ3_S},   {GgmlType::IQ1_S, GgufType::IQ1_S},
                           {GgmlType::IQ1_M, GgufType::IQ1_M},   {GgmlType::TQ1_0, GgufType::TQ1_0},
                           {GgmlType::TQ2_0, GgufType::TQ2_0}};
}  // namespace

std::optional<kernels::GgufType> gguf_kernel_type(GgmlType t) {
    for (const Pair& p : kPairs)
        if (p.file == t) return p.kernel;
    return std::nullopt;
}

GgmlType ggml_type_of(kernels::GgufType t) {
    for (const Pair& p : kPairs)
        if (p.kernel == t) return p.file;
    return GgmlType::F32;
}

std::string gguf_format_name(GgmlType t) {
    if (!gguf_kernel_type(t)) return "";
    std::string n = ggml_type_name(t);
    for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return "gguf_" + n;
}

}  // namespace ql
