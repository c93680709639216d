// SPDX-License-Identifier: GPL-3.0-or-later
// The registry of formats: names, layouts, scale structure and the representable element values
// (decoded by the same kernels that quantize, so the GUI plots exactly what the numerics do).
#include "engine/core/format_catalog.h"

#include <algorithm>
#include <cmath>

#include "engine/core/errors.h"
#include "kernels/minifloat.h"
#include "kernels/nf4.h"

namespace ql {
namespace {

using namespace ql::kernels;

template <class F>
std::vector<float> minifloat_values() {
    std::vector<float> v;
    for (unsigned c = 0; c < (2u << (F::exp_bits + F::man_bits)); ++c) {
        const float x = decode_element<F>(c);
        if (std::isfinite(x)) v.push_back(x + 0.0f);  // -0 and +0 collapse
    }
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
}

template <class F>
ElementLayout float_layout(const std::string& name) {
    ElementLayout e;
    e.name = name;
    e.sign_bits = 1;
    e.exponent_bits = F::exp_bits;
    e.mantissa_bits = F::man_bits;
    e.bias = F::bias;
    e.is_float = true;
    return e;
}

ElementLayout int_layout(int bits) {
    ElementLayout e;
    e.name = "INT" + std::to_string(bits);
    e.sign_bits = 1;
    e.mantissa_bits = bits - 1;
    e.is_integer = true;
    return e;
}

std::vector<float> int_levels(int lo, int hi, float step = 1.0f) {
    std::vector<float> v;
    for (int i = lo; i <= hi; ++i) v.push_back(static_cast<float>(i) * step);
    return v;
}

// llama.cpp's i-quants and ternary types (kernels/gguf_iquant_codec.h): lattice codes of 8 (IQ2,
// IQ1) or 4 (IQ3) values with per-value signs, or base-3 trits. Their element "code" is the index
// of the value's signed lattice level (what --codes writes), so the element layout is a codebook
// of those levels.
void add_iquant_formats(std::vector<FormatInfo>& out) {
    struct ISpec {
        const char* name;
        const char* title;
        int bytes, code_bits;
        const char* summary;
        const char* rule;
        const char* scale_type;
        const char* level_name;
        std::vector<float> values;
        bool requires_importance;
    };
    const std::vector<float> iq2 = {-43, -25, -8, 8, 25, 43};
    const std::vector<float> iq3xxs = {-62, -52, -44, -36, -28, -20, -12, -4, 4, 12, 20, 28, 36, 44, 52, 62};
    const std::vector<float> iq3s = {-15, -13, -11, -9, -7, -5, -3, -1, 1, 3, 5, 7, 9, 11, 13, 15};
    const std::vector<float> iq1 = {-1.125f, -0.875f, -0.125f, 0.125f, 0.875f, 1.125f};
    const std::vector<float> trits = {-1, 0, 1};
    const char* iq2_rule =
        "per sub-block: signs apart, |x| / scale rounded to levels {1, 3, 5} and moved to the nearest of the lattice's "
        "points, the least-squares scale of each candidate scale kept when it is better; 4-bit scale s = "
        "nearest((scale / d - 1) / 2) with d = max scale / 31;  x' = d (0.5 + s) / 4 * grid * sign";
    const std::vector<ISpec> specs = {
        {"gguf_iq2_xxs", "GGUF IQ2_XXS", 66, 3,
         "llama.cpp IQ2_XXS (2.06 bits per weight): groups of 8 values are one of 256 points of an 8-dimensional lattice "
         "with levels {8, 25, 43} (8 bits) plus 7 sign bits (the eighth sign makes the count of minus signs even); a "
         "4-bit scale per 32 under an fp16 super scale per 256.",
         iq2_rule, "FP16 d per 256, 4-bit scale per 32", "IQ2 level", iq2, true},
        {"gguf_iq2_xs", "GGUF IQ2_XS", 74, 3,
         "llama.cpp IQ2_XS (2.31 bits per weight): groups of 8 values are one of 512 lattice points (9 bits) with 7 sign "
         "bits; a 4-bit scale per 16 under an fp16 super scale per 256.",
         iq2_rule, "FP16 d per 256, 4-bit scale per 16", "IQ2 level", iq2, true},
        {"gguf_iq2_s", "GGUF IQ2_S", 82, 3,
         "llama.cpp IQ2_S (2.56 bits per weight): groups of 8 values are one of 1024 lattice points (10 bits) with all 8 "
         "signs stored; a 4-bit scale per 16 under an fp16 super scale per 256 (stored as 0.9875 d).",
         iq2_rule, "FP16 d per 256, 4-bit scale per 16", "IQ2 level", iq2, false},
        {"gguf_iq3_xxs", "GGUF IQ3_XXS", 98, 4,
         "llama.cpp IQ3_XXS (3.06 bits per weight): groups of 4 values are one of 256 points of a 4-dimensional lattice "
         "with levels {4, 12, ..., 52, 62}; 7 sign bits per 8 values (even count of minus signs) and a 4-bit scale per 32 "
         "under an fp16 super scale per 256 (stored as 1.0125 d).",
         "per 32: as IQ2 with 8 levels (candidate scales (15 + 0.2 k) / max, k = -15..15);  x' = d (0.5 + s) / 2 * grid * sign",
         "FP16 d per 256, 4-bit scale per 32", "IQ3_XXS level", iq3xxs, false},
        {"gguf_iq3_s", "GGUF IQ3_S", 110, 4,
         "llama.cpp IQ3_S (3.44 bits per weight): groups of 4 values are one of 512 lattice points with levels {1, 3, ..., "
         "15} (9 bits) and all signs stored; a 4-bit scale per 32 under an fp16 super scale per 256 (stored as 1.033 d). "
         "The base type of IQ3_S / IQ3_M / IQ3_XS files.",
         "per 32: as IQ3_XXS with 19 candidate scales and full signs;  x' = d (1 + 2 s) * grid * sign",
         "FP16 d per 256, 4-bit scale per 32", "IQ3_S level", iq3s, false},
        {"gguf_iq1_s", "GGUF IQ1_S", 50, 3,
         "llama.cpp IQ1_S (1.56 bits per weight): groups of 8 values are one of 2048 points of {-1, 0, 1}^8 (11 bits), "
         "shifted by +1/8 or -1/8 per 32; a 3-bit scale per 32 under an fp16 super scale per 256.",
         "per 32: the exact least-squares split of the sorted values into three levels (both shifts), then the nearest "
         "lattice point of each group; 3-bit scale = nearest((scale / d - 1) / 2), d = max scale / 15 (stored as 1.125 d);  "
         "x' = d (2 s + 1) (grid + shift)",
         "FP16 d per 256, 3-bit scale per 32", "IQ1 level", iq1, true},
        {"gguf_iq1_m", "GGUF IQ1_M", 56, 3,
         "llama.cpp IQ1_M (1.75 bits per weight): the IQ1_S lattice with a shift per group of 8 and a 3-bit scale per 16; "
         "the fp16 super scale is spread over the top nibbles of the scale words.",
         "per 16: the IQ1_S split search over four shift combinations; d refit over the super-block, stored as 1.1125 d;  "
         "x' = d (2 s + 1) (grid + shift)",
         "FP16 d per 256, 3-bit scale per 16", "IQ1 level", iq1, false},
        {"gguf_tq1_0", "GGUF TQ1_0", 54, 2,
         "llama.cpp TQ1_0 (1.69 bits per weight, BitNet b1.58 / TriLM ternary weights): trits of x / amax, five per byte "
         "(base 3, scaled by 256/243) and four per byte for the last 16, under an fp16 amax per 256.",
         "d = max |x| per 256 (fp16);  t = lroundf(x / d) in {-1, 0, 1};  x' = d t", "FP16 amax per 256", "trit", trits, false},
        {"gguf_tq2_0", "GGUF TQ2_0", 66, 2,
         "llama.cpp TQ2_0 (2.06 bits per weight, ternary): trits of x / amax in 2 bits each under an fp16 amax per 256.",
         "d = max |x| per 256 (fp16);  t = lroundf(x / d) in {-1, 0, 1};  x' = d t", "FP16 amax per 256", "trit", trits, false},
    };
    const std::string source =
        "ggml-org/llama.cpp ggml/src/ggml-quants.c quantize_iq2_xxs / iq2_xs / iq2_s / iq3_xxs / iq3_s / iq1_s / iq1_m, "
        "quantize_row_tq1_0_ref / tq2_0_ref and dequantize_row_*, lattices of ggml-common.h, as vendored by "
        "llama-cpp-python 0.3.36";
    for (const auto& k : specs) {
        FormatInfo f;
        f.name = k.name;
        f.title = k.title;
        f.family = "gguf";
        f.summary = k.summary;
        f.scale_rule = k.rule;
        f.source = source;
        const bool ternary = k.values.size() == 3;
        f.notes = {"Bit for bit with ggml_quantize_chunk (llama-quantize's quantizer), with or without an importance matrix "
                   "(one weight per input column)" + std::string(ternary ? "; the ternary types ignore it, as ggml does." : ".")};
        f.requires_importance = k.requires_importance;
        if (k.requires_importance)
            f.notes.push_back("Needs importance weights: ggml quantizes this type only with an importance matrix "
                              "(ggml_quantize_requires_imatrix); without one QuantLab refuses, as llama-quantize does.");
        if (!ternary)
            f.notes.push_back("An element has no bits of its own: a group of " + std::string(k.code_bits == 4 ? "4" : "8") +
                              " values is one lattice point plus signs. QuantLab's element code is the index of the value's "
                              "signed lattice level.");
        f.notes.push_back(ternary ? "Non-finite input: NaN and Inf count as 0 for the amax; Inf then takes the trit +-1, NaN "
                                    "stays NaN in fake quantization."
                                  : "Non-finite input: the search sees NaN and Inf as 0 and they decode as 0's code did; NaN "
                                    "stays NaN in fake quantization.");
        f.notes.push_back("Rows must be a multiple of 256 to export; fake quantization pads a short last block with zeros. "
                          "CPU kernels only (CUDA tensors make a round trip through them).");
        ElementLayout e;
        e.name = k.level_name;
        e.mantissa_bits = k.code_bits;
        e.is_codebook = true;
        f.element = e;
        f.element_bits = k.code_bits;
        f.element_values = k.values;
        f.element_max = std::max(std::fabs(k.values.front()), std::fabs(k.values.back()));
        f.block_size = 256;
        f.scale_type = k.scale_type;
        f.bits_per_element = k.bytes * 8.0 / 256;
        out.push_back(f);
    }
}

// NVFP4's elements and blocks, shared by its E5M3-scale variant: E2M1 in blocks of 16 with one
// 8-bit scale per block (4.5 bits per element).
void set_e2m1_blocks_of_16(FormatInfo& f, const char* scale_type) {
    f.element = float_layout<E2M1>("E2M1");
    f.element_bits = 4;
    f.element_max = 6.0f;
    f.element_values = minifloat_values<E2M1>();
    f.block_size = 16;
    f.scale_type = scale_type;
    f.bits_per_element = 4.5;
}

std::vector<FormatInfo> build() {
    std::vector<FormatInfo> out;
    const std::string modelopt = "NVIDIA Model Optimizer qtensor/nvfp4_tensor.py (export path)";
    const std::string torchao_mx = "pytorch/ao prototype/mx_formats/mx_tensor.py to_mx (OCP MX v1.0)";
    const std::string ggml = "ggml-org/llama.cpp ggml/src/ggml-quants.c quantize_row_*_ref and gguf-py/gguf/quants.py";
    const std::string nan_rule_amax =
        "NaN: stays NaN in its own element; the amax ignores NaN and Inf; +-Inf saturate to +-max x scale.";

    // Pass-through baselines.
    {
        FormatInfo f;
        f.name = "fp32";
        f.title = "FP32";
        f.family = "passthrough";
        f.summary = "IEEE float32: the unquantized baseline. Values pass through unchanged.";
        f.scale_rule = "none";
        f.source = "IEEE 754 binary32";
        f.element = ElementLayout{"FP32", 1, 8, 23, 127, true, false, false};
        f.element_bits = 32;
        f.element_max = 3.40282347e38f;
        f.bits_per_element = 32;
        f.packs = false;
        out.push_back(f);
        f.name = "bf16";
        f.title = "BF16";
        f.summary = "bfloat16: float32's exponent range with 7 mantissa bits. Rounded half to even.";
        f.source = "IEEE-style bfloat16, round half to even (as torch .to(bfloat16))";
        f.element = ElementLayout{"BF16", 1, 8, 7, 127, true, false, false};
        f.element_max = 3.38953139e38f;
        f.element_bits = 16;
        f.bits_per_element = 16;
        out.push_back(f);
        f.name = "fp16";
        f.title = "FP16";
        f.summary = "IEEE binary16: 5 exponent bits, 10 mantissa bits, max 65504; larger values become Inf.";
        f.source = "IEEE 754 binary16, round half to even";
        f.element = ElementLayout{"FP16", 1, 5, 10, 15, true, false, false};
        f.element_max = 65504.0f;
        out.push_back(f);
    }
    // FP8 with a per-tensor (or per-channel) scale.
    for (bool e4m3 : {true, false}) {
        FormatInfo f;
        f.name = e4m3 ? "fp8_e4m3" : "fp8_e5m2";
        f.title = e4m3 ? "FP8 E4M3" : "FP8 E5M2";
        f.family = "fp8";
        f.summary = e4m3 ? "8-bit float with 4 exponent and 3 mantissa bits (max 448, no Inf) and one float32 scale per "
                           "tensor or channel: the W8A8 format of FP8_DEFAULT."
                         : "8-bit float with 5 exponent and 2 mantissa bits (max 57344): more range, less precision; "
                           "common for gradients.";
        f.scale_rule = e4m3 ? "scale = amax / 448;  code = E4M3(x / scale);  x' = value(code) * scale"
                            : "scale = amax / 57344;  code = E5M2(x / scale);  x' = value(code) * scale";
        f.source = "NVIDIA Model Optimizer qtensor/fp8_tensor.py (export path); element rounding as pytorch c10 Float8";
        f.notes = {"Model Optimizer's fake-quant path multiplies by 448/amax instead of dividing by amax/448 and can differ "
                   "by 1 ulp; QuantLab follows the export path so fake quantization equals the exported checkpoint.",
                   nan_rule_amax};
        f.element = e4m3 ? float_layout<E4M3>("E4M3") : float_layout<E5M2>("E5M2");
        f.element_bits = 8;
        f.element_max = e4m3 ? 448.0f : 57344.0f;
        f.element_values = e4m3 ? minifloat_values<E4M3>() : minifloat_values<E5M2>();
        f.scale_type = "FP32 per tensor (or per channel)";
        f.bits_per_element = 8;
        f.granularities = {"tensor", "channel"};
        out.push_back(f);
    }
    {
        FormatInfo f;
        f.name = "nvfp4";
        f.title = "NVFP4";
        f.family = "nvfp4";
        f.summary = "4-bit E2M1 elements in blocks of 16 with an E4M3 scale per block and a float32 scale per tensor. "
                    "The fine blocks and the 3-bit-mantissa block scale keep small values that power-of-two scales lose.";
        f.scale_rule = "g = amax / (6*448);  s = E4M3(block_amax / (6 g));  code = E2M1(x / (s g));  x' = value(code) * s g";
        f.source = modelopt;
        f.notes = {"torchao's NVFP4 differs slightly: block scales are clamped to >= 2^-6, all-zero blocks get scale 2^-6 and "
                   "the multiplication order differs; QuantLab follows Model Optimizer's exported checkpoint.",
                   "A block whose E4M3 scale rounds to zero (block amax below about amax / 458752) decodes to zeros. Model "
                   "Optimizer 0.47 instead clamps the block scale to at least 2^-9 before the cast.",
                   nan_rule_amax};
        set_e2m1_blocks_of_16(f, "E4M3 per 16 elements + FP32 per tensor");
        out.push_back(f);
    }
    {
        FormatInfo f;
        f.name = "nvfp4_e5m3";
        f.title = "NVFP4 (E5M3 scales)";
        f.family = "nvfp4_e5m3";
        f.summary = "NVFP4's E2M1 elements in blocks of 16 with an unsigned E5M3 scale per block and no per-tensor scale "
                    "(AutoRound's NVFP4_E5M3, also in Intel Neural Compressor). Five exponent bits span 2^-17 .. 114688, so "
                    "no tensor amax is needed: activations quantize dynamically, block by block, without calibration.";
        f.scale_rule = "s = UE5M3(min(block_amax / 6, 114688));  code = E2M1(x / s);  x' = value(code) * s";
        f.source = "intel/auto-round auto_round/data_type/nvfp.py nvfp4_v2 (ref_fp4_quant, float_to_e5m3_frexp)";
        f.notes = {"UE5M3: 5 exponent bits (bias 15), 3 mantissa bits, no sign; the block scale is rounded to nearest, "
                   "ties to even, saturating at 114688 (byte 0xFE); subnormals reach 2^-17 and smaller scales underflow to "
                   "0 (the block decodes to zeros). 0xFF is NaN. As AutoRound 0.16.1 float_to_e5m3_frexp.",
                   "NaN / Inf: QuantLab's rule for every format (the block amax ignores them, NaN stays NaN, +-Inf "
                   "saturate to +-6 x scale); AutoRound lets a NaN or Inf decide its whole block's scale.",
                   "Against NVFP4: no global scale to calibrate or to share between fused layers, one byte per 16 "
                   "elements as before (4.5 bits per element); the block scale keeps E4M3's 3 mantissa bits, so the "
                   "precision of a scale is the same while its range grows from 448 .. 2^-9 (times g) to 114688 .. 2^-17."};
        set_e2m1_blocks_of_16(f, "UE5M3 per 16 elements");
        out.push_back(f);
    }
    struct MxSpec {
        const char* name;
        const char* title;
        ElementLayout layout;
        int bits;
        float max;
        std::vector<float> values;
    };
    const std::vector<MxSpec> mx = {
        {"mxfp8_e4m3", "MXFP8 (E4M3)", float_layout<E4M3>("E4M3"), 8, 448.0f, minifloat_values<E4M3>()},
        {"mxfp8_e5m2", "MXFP8 (E5M2)", float_layout<E5M2>("E5M2"), 8, 57344.0f, minifloat_values<E5M2>()},
        {"mxfp6_e3m2", "MXFP6 (E3M2)", float_layout<E3M2>("E3M2"), 6, 28.0f, minifloat_values<E3M2>()},
        {"mxfp6_e2m3", "MXFP6 (E2M3)", float_layout<E2M3>("E2M3"), 6, 7.5f, minifloat_values<E2M3>()},
        {"mxfp4", "MXFP4", float_layout<E2M1>("E2M1"), 4, 6.0f, minifloat_values<E2M1>()},
        {"mxint8", "MXINT8", int_layout(8), 8, 127.0f / 64.0f, int_levels(-127, 127, 1.0f / 64.0f)},
    };
    for (const auto& m : mx) {
        FormatInfo f;
        f.name = m.name;
        f.title = m.title;
        f.family = "mx";
        f.summary = std::string("OCP Microscaling: ") + m.layout.name +
                    " elements in blocks of 32 sharing one power-of-two (E8M0) scale.";
        f.scale_rule = "X = 2^(floor(log2(block_amax)) - emax_elem);  element = round(x / X);  x' = element * X "
                       "(the largest element can clip: the OCP floor rule)";
        f.source = torchao_mx;
        f.notes = {"Scale rule 'rceil' (scale = 2^ceil(log2(amax / max_elem)), never clips) is what NVIDIA hardware recipes use.",
                   "A block containing NaN or Inf gets the NaN scale (0xFF) and decodes to NaN entirely."};
        if (std::string(m.name) == "mxint8")
            f.notes.push_back("MXINT8 elements are 8-bit integers k with an implicit 2^-6: value = k / 64 * X, k in [-127, 127].");
        f.element = m.layout;
        f.element_bits = m.bits;
        f.element_max = m.max;
        f.element_values = m.values;
        f.block_size = 32;
        f.scale_type = "E8M0 (power of two) per 32 elements";
        f.bits_per_element = m.bits + 8.0 / 32.0;
        f.supports_scale_rule = true;
        out.push_back(f);
    }
    for (int bits : {8, 4, 3, 2}) {
        FormatInfo f;
        f.name = "int" + std::to_string(bits);
        f.title = "INT" + std::to_string(bits);
        f.family = "int";
        const int qmax = (1 << (bits - 1)) - 1;
        f.summary = "Uniform " + std::to_string(bits) +
                    "-bit integers with a float32 scale per tensor, channel or group (default group 128 for weights); "
                    "symmetric by default, asymmetric with a zero point.";
        f.scale_rule = "symmetric: scale = amax / " + std::to_string(qmax) + ";  q = clamp(rne(x / scale), -" +
                       std::to_string(qmax) + ", " + std::to_string(qmax) +
                       ");  asymmetric: scale = (max - min) / " + std::to_string((1 << bits) - 1) +
                       ", zero point = -rne(min / scale)";
        f.source = "symmetric: the INT4 AWQ export of Model Optimizer (scale = amax / 7 for INT4); asymmetric: torchao "
                   "MappingType.ASYMMETRIC";
        f.notes = {nan_rule_amax};
        f.element = int_layout(bits);
        f.element_bits = bits;
        f.element_max = static_cast<float>(qmax);
        f.element_values = int_levels(-qmax, qmax);
        f.scale_type = "FP32 per tensor, channel or group";
        f.bits_per_element = bits + 32.0 / 128.0;
        f.granularities = {"tensor", "channel", "group"};
        f.default_group_size = 128;
        f.supports_asymmetric = true;
        out.push_back(f);
    }
    // LLM.int8(): vector-wise INT8 (weights: per output row) and its activation side with the
    // outlier columns kept in full precision.
    for (bool decomposed : {false, true}) {
        FormatInfo f;
        f.name = decomposed ? "llm_int8" : "int8_vectorwise";
        f.title = decomposed ? "LLM.int8()" : "INT8 vector-wise";
        f.family = "llm_int8";
        f.summary = decomposed
                        ? "LLM.int8() for activations: INT8 per row (token) with an absmax scale, except the feature "
                          "columns holding a value with |x| >= 6 anywhere in the batch, which stay in full precision "
                          "(bitsandbytes' mixed-precision decomposition). Pair it with int8_vectorwise weights."
                        : "INT8 with one absmax scale per row along the last dimension: LLM.int8()'s weights (one "
                          "scale per output channel) and its activations without the decomposition.";
        f.scale_rule = std::string("a = FP16(x);  r = max |a| per row") + (decomposed ? " (over |a| < 6)" : "") +
                       ";  q = rne(a * (127 / r));  x' = (q * r) * (1/127)" +
                       (decomposed ? ";  columns with any |a| >= 6: x' = x" : "");
        f.source = "bitsandbytes 0.50 backends/default/ops.py int8_vectorwise_quant (threshold " +
                   std::string(decomposed ? "6.0" : "0") + "), _ops.py int8_vectorwise_dequant";
        f.notes = {"bitsandbytes' matmul dequantizes the int32 sum with (r_x * r_w) * 6.200124e-05, 1.8e-5 above "
                   "1/127^2 (its CPU kernel's constant); QuantLab's fake quantization multiplies the dequantized "
                   "operands, so layer outputs agree to ~2e-5 relative while the codes and scales agree bit for bit.",
                   "The outlier columns are chosen per call over all rows (every token of the batch), as bitsandbytes "
                   "does; their weights are the INT8-dequantized ones (bitsandbytes with has_fp16_weights=False).",
                   "NaN / Inf: r ignores them (bitsandbytes' max propagates them); NaN stays NaN; +-Inf is an outlier "
                   "(kept) with the decomposition and saturates to +-r without it."};
        f.element = int_layout(8);
        f.element_bits = 8;
        f.element_max = 127.0f;
        f.element_values = int_levels(-127, 127);
        f.scale_type = decomposed ? "FP32 absmax per row (token) + full-precision outlier columns" : "FP32 absmax per row";
        f.bits_per_element = 8;  // + 32 bits per row
        f.packs = !decomposed;
        out.push_back(f);
    }
    {
        FormatInfo f;
        f.name = "nf4";
        f.title = "NF4";
        f.family = "nf4";
        f.summary = "QLoRA NormalFloat4: 16 values placed at quantiles of a normal distribution, scaled by the absmax "
                    "of each block of 64 consecutive elements (of the flattened tensor).";
        f.scale_rule = "absmax per 64;  code = nearest(NF4, x / absmax);  x' = NF4[code] * absmax";
        f.source = "bitsandbytes backends/default/ops.py quantize_4bit (nf4), create_dynamic_map for double quantization";
        f.notes = {"Double quantization (QLoRA) stores each absmax as 8 bits: offset = mean(absmax), then blocks of 256 "
                   "with bitsandbytes' dynamic map; about 4.127 instead of 4.5 bits per element.",
                   "Nearest code: |x/absmax - NF4[i]| in float32, ties to the lower index (torch.argmin)."};
        ElementLayout e;
        e.name = "NF4 index";
        e.mantissa_bits = 4;
        e.is_codebook = true;
        f.element = e;
        f.element_bits = 4;
        f.element_max = 1.0f;
        f.element_values.assign(kNf4Codebook, kNf4Codebook + 16);
        f.block_size = 64;
        f.scale_type = "FP32 absmax per 64 elements (8-bit with double quantization)";
        f.bits_per_element = 4.5;
        f.supports_double_quant = true;
        f.default_group_size = 64;
        out.push_back(f);
    }
    struct GgufSpec {
        const char* name;
        const char* title;
        int bytes;
        const char* summary;
        const char* rule;
        std::vector<float> values;
        ElementLayout layout;
    };
    // GGUF Q4_0/Q5_0 store q + 8 (+ 16) unsigned; Q4_1 stores q unsigned (with a minimum).
    ElementLayout u4 = int_layout(4);
    u4.name = "UINT4";
    u4.sign_bits = 0;
    u4.mantissa_bits = 4;
    u4.code_offset = 8;
    ElementLayout u4_min = u4;
    u4_min.code_offset = 0;
    ElementLayout u5 = int_layout(5);
    u5.name = "UINT5";
    u5.sign_bits = 0;
    u5.mantissa_bits = 5;
    u5.code_offset = 16;
    const std::vector<GgufSpec> gguf = {
        {"gguf_q8_0", "GGUF Q8_0", 34, "llama.cpp Q8_0: 32 int8 values and one fp16 scale per block of 32.",
         "d = amax / 127 (stored fp16);  q = roundf(x / d);  x' = q * d", int_levels(-127, 127), int_layout(8)},
        {"gguf_q4_0", "GGUF Q4_0", 18, "llama.cpp Q4_0: 32 4-bit values and one fp16 scale per block of 32.",
         "d = max / -8 (the element of largest magnitude, signed);  q = trunc(x / d + 8.5);  x' = (q - 8) * d",
         int_levels(-8, 7), u4},
        {"gguf_q4_1", "GGUF Q4_1", 20, "llama.cpp Q4_1: 4-bit values with an fp16 scale and an fp16 minimum per 32.",
         "d = (max - min) / 15;  q = trunc((x - min) / d + 0.5);  x' = q * d + min", int_levels(0, 15), u4_min},
        {"gguf_q5_0", "GGUF Q5_0", 22, "llama.cpp Q5_0: 5-bit values (high bits stored apart) and an fp16 scale per 32.",
         "d = max / -16;  q = trunc(x / d + 16.5);  x' = (q - 16) * d", int_levels(-16, 15), u5},
        {"gguf_mxfp4", "GGUF MXFP4", 17,
         "llama.cpp's MXFP4: E2M1 values with an E8M0 scale per 32. Unlike OCP MXFP4, ties round toward the smaller "
         "magnitude and the exponent comes from floor(log2f(amax)).",
         "e = floor(log2f(amax)) - 2;  x' = nearest(E2M1 * 2^e, x) with ties toward zero", minifloat_values<E2M1>(),
         float_layout<E2M1>("E2M1")},
    };
    for (const auto& g : gguf) {
        FormatInfo f;
        f.name = g.name;
        f.title = g.title;
        f.family = "gguf";
        f.summary = g.summary;
        f.scale_rule = g.rule;
        f.source = ggml;
        f.notes = {"Q4_0 and Q5_0 round x * (1/d) and the + bias separately (no fused multiply-add), as ggml-base "
                   "(llama-quantize) and gguf-py do; blocks whose 1/d overflows (amax below ~2^-125) get code 0, as ggml.",
                   "Rows must be a multiple of 32 to export; fake quantization pads a short last block with zeros."};
        f.element = g.layout;
        f.element_bits = std::string(g.name) == "gguf_q8_0" ? 8 : (std::string(g.name) == "gguf_q5_0" ? 5 : 4);
        f.element_values = g.values;
        f.element_max = g.values.empty() ? 0.0f : std::max(std::fabs(g.values.front()), std::fabs(g.values.back()));
        f.block_size = 32;
        f.scale_type = std::string(g.name) == "gguf_mxfp4" ? "E8M0 per 32" : (std::string(g.name) == "gguf_q4_1" ? "FP16 scale + FP16 min per 32" : "FP16 per 32");
        f.bits_per_element = g.bytes * 8.0 / 32.0;
        out.push_back(f);
    }
    // K-quants and IQ4 (shared/design/GGUF_KQUANTS.md): super-blocks of 256 with sub-block
    // scales under an fp16 super scale, as llama-quantize writes them.
    auto unsigned_layout = [&](int bits, int offset) {
        ElementLayout e = int_layout(bits);
        e.name = "UINT" + std::to_string(bits);
        e.sign_bits = 0;
        e.mantissa_bits = bits;
        e.code_offset = offset;
        return e;
    };
    ElementLayout iq4;
    iq4.name = "IQ4 index";
    iq4.mantissa_bits = 4;
    iq4.is_codebook = true;
    const std::vector<float> kvalues = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    struct KSpec {
        const char* name;
        const char* title;
        int bytes, block, bits;
        const char* summary;
        const char* rule;
        const char* scale_type;
        std::vector<float> values;
        ElementLayout layout;
    };
    const std::string kquant_source =
        "ggml-org/llama.cpp ggml/src/ggml-quants.c quantize_row_q*_K_ref / quantize_q*_K (imatrix: quantize_row_*_impl), "
        "quantize_iq4_nl / quantize_iq4_xs, as vendored by llama-cpp-python 0.3.36";
    const std::vector<KSpec> kq = {
        {"gguf_q2_k", "GGUF Q2_K", 84, 256, 2,
         "llama.cpp Q2_K: 2-bit values in 16 sub-blocks of 16, each with a 4-bit scale and a 4-bit min, under an fp16 "
         "super scale and super min per 256.",
         "per 16: (scale, min) by ggml's weighted least-squares search (make_qkx2, |x| weights); 4-bit scale = "
         "nearest(15 scale / max scale), d = max scale / 15 (fp16);  x' = d sc q - dmin m",
         "FP16 d + dmin per 256, 4-bit scale + min per 16", int_levels(0, 3), unsigned_layout(2, 0)},
        {"gguf_q3_k", "GGUF Q3_K", 110, 256, 3,
         "llama.cpp Q3_K: 3-bit values (2 low bits + a high-bit mask) in 16 sub-blocks of 16 with signed 6-bit scales "
         "under an fp16 super scale per 256.",
         "per 16: scale by make_q3_quants (x^2 weights, 5 refinement passes); 6-bit scale = nearest(-32 s / max s) + 32, "
         "d = 1 / (-32 / max s) (fp16);  x' = d (sc - 32) (q - 4)",
         "FP16 d per 256, 6-bit scale per 16", int_levels(-4, 3), unsigned_layout(3, 4)},
        {"gguf_q4_k", "GGUF Q4_K", 144, 256, 4,
         "llama.cpp Q4_K: 4-bit values in 8 sub-blocks of 32, each with a 6-bit scale and a 6-bit min, under an fp16 "
         "super scale and super min per 256. The 'K' of Q4_K_M.",
         "per 32: (scale, min) by make_qkx2 (weights sqrt(mean x^2) + |x|, 21 candidate steps); 6-bit scale = "
         "nearest(63 scale / max scale), d = max scale / 63;  x' = d sc q - dmin m",
         "FP16 d + dmin per 256, 6-bit scale + min per 32", int_levels(0, 15), unsigned_layout(4, 0)},
        {"gguf_q5_k", "GGUF Q5_K", 176, 256, 5,
         "llama.cpp Q5_K: 5-bit values (4 low bits + a high-bit plane) in 8 sub-blocks of 32 with 6-bit scales and mins "
         "under fp16 super scales per 256.",
         "per 32: (scale, min) by make_qkx2 (16 candidate steps); 6-bit scale and min as Q4_K;  x' = d sc q - dmin m",
         "FP16 d + dmin per 256, 6-bit scale + min per 32", int_levels(0, 31), unsigned_layout(5, 0)},
        {"gguf_q6_k", "GGUF Q6_K", 210, 256, 6,
         "llama.cpp Q6_K: 6-bit values in 16 sub-blocks of 16 with signed 8-bit scales under an fp16 super scale per 256.",
         "per 16: scale by make_qx_quants (x^2 weights, 19 candidate scales); 8-bit scale = min(127, nearest(-128 s / max s)), "
         "d = 1 / (-128 / max s);  x' = d sc (q - 32)",
         "FP16 d per 256, int8 scale per 16", int_levels(-32, 31), unsigned_layout(6, 32)},
        {"gguf_iq4_nl", "GGUF IQ4_NL", 18, 32, 4,
         "llama.cpp IQ4_NL: 4-bit indices into a fixed non-linear grid of 16 values (kvalues_iq4nl, -127..113) with an "
         "fp16 scale per 32.",
         "d by ggml's search over 15 candidate scales (x^2 weights);  q = nearest grid value of x / d;  x' = d kvalues[q]",
         "FP16 per 32", kvalues, iq4},
        {"gguf_iq4_xs", "GGUF IQ4_XS", 136, 256, 4,
         "llama.cpp IQ4_XS: the IQ4_NL grid in 8 sub-blocks of 32 with 6-bit scales under an fp16 super scale per 256 "
         "(4.25 bits per weight).",
         "per 32: scale by the IQ4_NL search; 6-bit scale = nearest(s / d) + 32 with d = -max s / 32;  x' = d (sc - 32) kvalues[q]",
         "FP16 d per 256, 6-bit scale per 32", kvalues, iq4},
    };
    for (const auto& k : kq) {
        FormatInfo f;
        f.name = k.name;
        f.title = k.title;
        f.family = "gguf";
        f.summary = k.summary;
        f.scale_rule = k.rule;
        f.source = kquant_source;
        f.notes = {"Bit for bit with ggml_quantize_chunk (llama-quantize's quantizer), with or without an importance matrix "
                   "(one weight per input column).",
                   "Non-finite input: the search sees NaN and Inf as 0; Inf then takes the sub-block's extreme code, NaN stays "
                   "NaN in fake quantization.",
                   "Rows must be a multiple of " + std::to_string(k.block) +
                       " to export; fake quantization pads a short last block with zeros."};
        f.element = k.layout;
        f.element_bits = k.bits;
        f.element_values = k.values;
        f.element_max = std::max(std::fabs(k.values.front()), std::fabs(k.values.back()));
        f.block_size = k.block;
        f.scale_type = k.scale_type;
        f.bits_per_element = k.bytes * 8.0 / k.block;
        out.push_back(f);
    }
    add_iquant_formats(out);
    return out;
}

}  // namespace

const std::vector<FormatInfo>& all_formats() {
    static const std::vector<FormatInfo> formats = build();
    return formats;
}

const FormatInfo& format_info(const std::string& name) {
    for (const auto& f : all_formats())
        if (f.name == name) return f;
    std::string names;
    for (const auto& f : all_formats()) names += (names.empty() ? "" : ", ") + f.name;
    throw UserError("unknown format '" + name + "' (known: " + names + ")");
}

}  // namespace ql
