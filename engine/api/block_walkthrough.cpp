// SPDX-License-Identifier: GPL-3.0-or-later
// Explains the quantization of one block. The outputs and codes come from the same codec the
// engine uses (format_codec), and every intermediate shown is recomputed with the kernels' own
// element functions, so the teaching view can never disagree with the numerics.
#include "engine/api/block_walkthrough.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/core/errors.h"
#include "engine/core/format_catalog.h"
#include "engine/formats/format_codec.h"
#include "kernels/gguf_blocks.h"
#include "kernels/gguf_kquant_trace.h"
#include "kernels/microscaling.h"
#include "kernels/minifloat.h"
#include "kernels/nvfp4_e5m3.h"

namespace ql {
namespace {

using namespace ql::kernels;

std::string num(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.7g", v);
    return buf;
}

std::string bits(unsigned code, int width) {
    std::string s;
    for (int b = width - 1; b >= 0; --b) s += ((code >> b) & 1u) ? '1' : '0';
    return s;
}

// "s eeee mmm" with fields separated, for a float element layout.
std::string float_code_bits(unsigned code, const ElementLayout& e) {
    const int m = e.mantissa_bits, x = e.exponent_bits;
    return bits(code >> (x + m), 1) + " " + bits((code >> m) & ((1u << x) - 1u), x) + " " + bits(code & ((1u << m) - 1u), m);
}

float finite_amax(const std::vector<float>& v) {
    float m = 0;
    for (float x : v)
        if (std::isfinite(x)) m = std::max(m, std::fabs(x));
    return m;
}

// The super-block formats: the fp16 super scale (and min), each sub-block's search result and
// stored 4/6/8-bit scale, one sub-block's search candidate by candidate, then the
// requantization. Every number comes from the kernels (gguf_block_fields of the encoded bytes,
// gguf_trace_* of the same search).
template <class Step>
void explain_super_block(BlockWalkthrough& w, const std::vector<float>& padded, const FormatInfo& f,
                         const EncodedTensor& enc, int selected, const Step& step) {
    const GgufType t = gguf_format_kernel_type(f.name);
    const uint8_t* bytes = enc.gguf_blocks.data();
    const GgufBlockFields fields = gguf_block_fields(bytes, t);
    SuperBlockWalkthrough& sb = w.super_block;
    sb.present = true;
    sb.d = fields.d;
    sb.dmin = fields.dmin;
    sb.has_min = gguf_has_min(t);
    sb.scale_bits = fields.scale_bits;
    sb.sub_block_length = static_cast<int>(gguf_sub_block(t));
    const int subs = fields.sub_blocks;
    const float* sc = enc.scales.as<float>();
    std::vector<GgufSubBlockSearch> searches;
    for (int j = 0; j < subs; ++j) searches.push_back(gguf_trace_sub_block_search(padded.data(), nullptr, t, j));
    for (int j = 0; j < subs; ++j) {
        WalkthroughSubBlock s;
        s.first = j * sb.sub_block_length;
        s.length = sb.sub_block_length;
        s.search_scale = searches[static_cast<size_t>(j)].scale;
        s.search_min = searches[static_cast<size_t>(j)].min;
        s.stored_scale = fields.scales[j];
        s.stored_min = fields.mins[j];
        s.scale = sb.has_min ? sc[2 * j] : sc[j];
        s.min = sb.has_min ? sc[2 * j + 1] : 0.0;
        double se = 0;
        int cnt = 0;
        for (int i = s.first; i < s.first + s.length && i < static_cast<int>(w.output.size()); ++i)
            if (std::isfinite(w.input[static_cast<size_t>(i)])) {
                const double e = static_cast<double>(w.output[static_cast<size_t>(i)]) - w.input[static_cast<size_t>(i)];
                se += e * e;
                ++cnt;
            }
        s.mse = cnt ? se / cnt : 0.0;
        sb.sub_blocks.push_back(s);
    }
    sb.search_sub_block = std::clamp(selected, 0, subs - 1);
    const GgufSubBlockSearch& traced = searches[static_cast<size_t>(sb.search_sub_block)];
    sb.search_method = traced.method;
    sb.search_objective = traced.objective;
    for (const auto& c : traced.candidates)
        sb.search.push_back({c.step, c.inverse_scale, c.scale, c.min, c.objective, c.accepted});
    const WalkthroughSubBlock& sel = sb.sub_blocks[static_cast<size_t>(sb.search_sub_block)];
    w.scale = sel.scale;
    for (float v : f.element_values) w.grid.push_back(static_cast<float>(sel.scale * v - sel.min));

    const std::string sub = std::to_string(sb.sub_block_length);
    step("Super-block", std::to_string(subs) + " sub-blocks of " + sub + " (" + f.scale_type + ")",
         std::to_string(static_cast<int>(f.bits_per_element * static_cast<double>(gguf_block_elements(t)) / 8)) + " bytes");
    step("Search, sub-block " + std::to_string(sb.search_sub_block), traced.method,
         "scale " + num(traced.scale) + (sb.has_min ? ", min " + num(traced.min) : "") + " (" +
             std::to_string(traced.candidates.size()) + " candidates)");
    if (t == GgufType::IQ4_NL) {
        step("Scale", "d = the search's scale, stored fp16", num(sb.d));
    } else {
        step("Super scale", sb.has_min ? "d = max scale / 2^bits-1 (fp16), dmin likewise for the mins"
                                       : "d from the sub-block scale of largest magnitude (fp16)",
             "d " + num(sb.d) + (sb.has_min ? ", dmin " + num(sb.dmin) : ""));
        step("Sub-block scales", std::to_string(sb.scale_bits) + "-bit integers: nearest(scale / d)" +
                                     (sb.has_min ? ", mins likewise" : ""),
             "sub-block " + std::to_string(sb.search_sub_block) + ": " + std::to_string(sel.stored_scale) +
                 (sb.has_min ? " / " + std::to_string(sel.stored_min) : ""));
    }
    step("Requantize", sb.has_min ? "q = clamp(nearest((x + min) / scale)) with the stored scale and min"
                                  : (f.element.is_codebook ? "q = nearest grid value of x / scale" : "q = clamp(nearest(x / scale))"),
         "");
    step("Decode", sb.has_min ? "x' = scale * q - min" : (f.element.is_codebook ? "x' = scale * kvalues[q]" : "x' = scale * (q - offset)"),
         "");
}

// The i-quants and ternary types: the fp16 super scale, each sub-block's stored scale and
// decoded scale, then how the lattice codes decode (kernels/gguf_iquant_codec.h). Their searches
// are not traced step by step: `search` stays empty and search_method says what ggml searches.
template <class Step>
void explain_lattice_block(BlockWalkthrough& w, const FormatInfo& f, const EncodedTensor& enc, int selected, const Step& step) {
    const GgufType t = gguf_format_kernel_type(f.name);
    const GgufBlockFields fields = gguf_block_fields(enc.gguf_blocks.data(), t);
    SuperBlockWalkthrough& sb = w.super_block;
    sb.present = true;
    sb.d = fields.d;
    sb.scale_bits = fields.scale_bits;
    sb.sub_block_length = static_cast<int>(gguf_sub_block(t));
    const float* sc = enc.scales.as<float>();
    for (int j = 0; j < fields.sub_blocks; ++j) {
        WalkthroughSubBlock s;
        s.first = j * sb.sub_block_length;
        s.length = sb.sub_block_length;
        s.search_scale = std::nan("");  // not traced
        s.stored_scale = fields.scales[j];
        s.scale = sc[j];
        double se = 0;
        int cnt = 0;
        for (int i = s.first; i < s.first + s.length && i < static_cast<int>(w.output.size()); ++i)
            if (std::isfinite(w.input[static_cast<size_t>(i)])) {
                const double e = static_cast<double>(w.output[static_cast<size_t>(i)]) - w.input[static_cast<size_t>(i)];
                se += e * e;
                ++cnt;
            }
        s.mse = cnt ? se / cnt : 0.0;
        sb.sub_blocks.push_back(s);
    }
    sb.search_sub_block = std::clamp(selected, 0, fields.sub_blocks - 1);
    const WalkthroughSubBlock& sel = sb.sub_blocks[static_cast<size_t>(sb.search_sub_block)];
    w.scale = sel.scale;
    for (float v : f.element_values) w.grid.push_back(static_cast<float>(sel.scale * v));
    const bool ternary = t == GgufType::TQ1_0 || t == GgufType::TQ2_0;
    const bool iq1 = t == GgufType::IQ1_S || t == GgufType::IQ1_M;
    const bool even_signs = t == GgufType::IQ2_XXS || t == GgufType::IQ2_XS || t == GgufType::IQ3_XXS;
    const int group = t == GgufType::IQ3_XXS || t == GgufType::IQ3_S ? 4 : 8;
    sb.search_method = ternary ? "none: trits of x / amax"
                       : iq1   ? "exact least-squares split of the sorted values into the levels -1, 0, +1 (shift +-1/8), then "
                                 "each group of 8 moved to the nearest of the 2048 lattice points"
                               : "candidate scales around max / " + std::string(t == GgufType::IQ3_XXS || t == GgufType::IQ3_S ? "15" : "5") +
                                     "; |x| / scale rounded to the levels and each group of " + std::to_string(group) +
                                     " moved to the nearest lattice point (ggml's neighbour lists); the least-squares scale of "
                                     "the best candidate";
    sb.search_objective = ternary ? "" : "maximise (sum w x q)^2 / sum w q^2 (weights: importance * sqrt(sigma2 + x^2), or x^2)";
    step(ternary ? "Block" : "Super-block",
         std::to_string(fields.sub_blocks) + (ternary ? " block of 256" : " sub-blocks of " + std::to_string(sb.sub_block_length)) +
             " (" + f.scale_type + ")",
         std::to_string(static_cast<int>(f.bits_per_element * 256 / 8)) + " bytes");
    if (ternary) {
        step("Scale", "d = max |x| over the 256 (fp16)", num(sb.d));
        step("Encode", "t = lroundf(x / d) + 1 in {0, 1, 2}", t == GgufType::TQ1_0 ? "5 trits per byte (base 3, * 256 / 243, rounded up)" : "2 bits per trit");
        step("Decode", "x' = d (t - 1)", "");
        return;
    }
    if (!iq1)
        step("Signs", even_signs ? "|x| with 7 sign bits per 8 (an odd count of minus signs flips the least important one)"
                                 : "|x| with every sign stored",
             "");
    step("Search, sub-block " + std::to_string(sb.search_sub_block), sb.search_method, "scale " + num(sel.scale));
    step("Super scale", "d = max sub-block scale / " + std::string(iq1 ? "15" : "31") + " (fp16, with ggml's fudge factor)", num(sb.d));
    step("Sub-block scales", std::to_string(sb.scale_bits) + "-bit integers: nearest((scale / d - 1) / 2)",
         "sub-block " + std::to_string(sb.search_sub_block) + ": " + std::to_string(sel.stored_scale));
    step("Decode", iq1 ? "x' = d (2 s + 1) (grid + shift)" : "x' = scale * grid level * sign", "");
}

}  // namespace

BlockWalkthrough explain_block(const std::vector<float>& block, const QuantOptions& options, float tensor_amax, int sub_block) {
    if (block.empty()) throw UserError("the sample block is empty");
    BlockWalkthrough w;
    w.format = options.format;
    w.input = block;
    const int64_t n = static_cast<int64_t>(block.size());
    const std::vector<int64_t> shape = {n};
    QuantOptions o = options;
    QuantSpec spec = resolve_spec(o, shape);
    const FormatInfo& f = *spec.info;
    // One block is explained; longer samples would mix several scales in one account.
    const int64_t one_block = spec.block > 0 ? spec.block : 0;
    if (one_block > 0 && n > one_block)
        throw UserError("the sample holds " + std::to_string(n) + " values but one " + f.title + " block holds " +
                        std::to_string(one_block) + ": explain one block at a time");
    const float bamax = finite_amax(block);
    const float amax = std::isnan(tensor_amax) ? bamax : tensor_amax;
    if (f.family == "nvfp4" || f.family == "fp8" || (f.family == "int" && spec.granularity != Granularity::Group))
        spec.fixed_amax = std::max(amax, bamax);

    // IQ2_XXS, IQ2_XS and IQ1_S have no search without importance: one block is explained with
    // uniform weights (the padding gets 0, as fake quantization pads importance).
    const bool gguf = f.family == "gguf";
    const bool uniform_importance = gguf && gguf_requires_importance(gguf_format_kernel_type(f.name));
    if (uniform_importance) spec.importance.assign(block.size(), 1.0f);
    w.output.resize(block.size());
    fake_quantize_buffer(block.data(), w.output.data(), shape, spec);
    EncodedTensor enc;
    // GGUF blocks are encoded whole: a short sample is padded with zeros, as fake quantization
    // pads it (the padding's codes are not shown).
    std::vector<float> padded = block;
    if (gguf && one_block > n) padded.resize(static_cast<size_t>(one_block), 0.0f);
    if (uniform_importance) spec.importance.resize(padded.size(), 0.0f);
    const std::vector<int64_t> enc_shape = {static_cast<int64_t>(padded.size())};
    if (f.name != "fp32") enc = encode_buffer(padded.data(), enc_shape, spec);
    auto step = [&](std::string label, std::string formula, std::string result) {
        w.steps.push_back(WalkthroughStep{std::move(label), std::move(formula), std::move(result)});
    };
    if (uniform_importance)
        step("Importance", "none given, and " + f.title.substr(5) + " needs one (ggml_quantize_requires_imatrix)",
             "uniform weights 1 for this block");
    std::vector<float> level_values = f.element_values;  // element domain values to scale into the grid
    const std::string& fam = f.family;

    if (fam == "passthrough") {
        w.scale = 1;
        w.scaled = block;
        step("Rounding", f.name == "fp32" ? "none: float32 values pass through" : "round half to even to " + f.title,
             f.name == "fp32" ? "unchanged" : "each value keeps " + std::to_string(f.element.mantissa_bits) + " mantissa bits");
        if (f.name != "fp32")
            for (int64_t i = 0; i < n; ++i) {
                const unsigned c = enc.codes.as<uint16_t>()[i];
                w.codes.push_back(c);
                w.code_bits.push_back(float_code_bits(c, f.element));
            }
    } else if (fam == "fp8") {
        const float scale = enc.scales.as<float>()[0];
        w.scale = scale;
        w.global_scale = scale;
        step("Tensor amax", "max |x| over the tensor (finite values)", num(spec.fixed_amax));
        step("Scale", "amax / " + num(f.element_max), num(scale));
        step("Encode", "code = " + f.element.name + "(x / scale), round half to even, saturate at +-" + num(f.element_max), "");
        step("Decode", "x' = value(code) * scale", "");
    } else if (fam == "nvfp4") {
        const float g = *enc.global_scale;
        const uint8_t s8 = enc.raw_scales.at(0);
        const float s = bamax == 0.0f ? 1.0f : bamax / (6.0f * g);
        const float d = decode_element<E4M3>(s8) * g;
        w.scale = d;
        w.global_scale = g;
        step("Tensor amax", "max |x| over the whole tensor (finite values)", num(spec.fixed_amax));
        step("Global scale g", "amax / (6 * 448)", num(g));
        step("Block amax", "max |x_i| over this block of 16", num(bamax));
        step("Block scale s", "block_amax / (6 * g)", num(s));
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", s8);
        step("E4M3 block scale", "s8 = E4M3(s), round half to even", num(decode_element<E4M3>(s8)) + "  (code " + hex + " = " + bits(s8, 8) + ")");
        step("Denominator", "d = s8 * g", num(d));
        step("Encode", "code = E2M1(x / d), ties to even, saturate at +-6", "");
        step("Decode", "x' = E2M1[code] * d", "");
        if (d == 0.0f) step("Note", "s8 rounded to zero", "this block decodes to zeros");
    } else if (fam == "llm_int8") {
        // One row: the block is one token's features (or one output channel's weights).
        const float r = enc.scales.as<float>()[0];
        const float threshold = llm_int8_threshold(f.name);
        w.scale = r / 127.0f;
        step("FP16", "a = FP16(x), as bitsandbytes casts the operands", "");
        if (threshold > 0.0f)
            step("Outlier columns", "columns with |a| >= " + num(threshold) + " stay in full precision",
                 std::to_string(enc.outlier_columns.size()) + " of " + std::to_string(n) + " kept");
        step("Row absmax r", threshold > 0.0f ? "max |a| over the quantized values" : "max |a| over the row", num(r));
        step("Encode", "q = rne(a * (127 / r))", "");
        step("Decode", "x' = (q * r) * (1/127); kept columns: x' = x", "");
        w.kept.assign(block.size(), false);
        for (int64_t c : enc.outlier_columns) w.kept[static_cast<size_t>(c)] = true;
    } else if (fam == "nvfp4_e5m3") {
        const uint8_t s8 = enc.raw_scales.at(0);
        const float d = ue5m3_decode(s8);
        w.scale = d;
        step("Block amax", "max |x_i| over this block of 16 (finite values)", num(bamax));
        step("Block scale s", "block_amax / 6, at most 114688 (no tensor amax, no global scale)",
             num(std::min(bamax * static_cast<float>(1.0 / 6.0), kUe5m3Max)));
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02X", s8);
        step("UE5M3 block scale", "s8 = UE5M3(s): exponent bias 15, 3 mantissa bits rounded half to even without carry",
             num(d) + "  (code " + hex + " = " + bits(s8, 8) + ")");
        step("Encode", "code = E2M1(x / s8), ties to even, saturate at +-6", "");
        step("Decode", "x' = E2M1[code] * s8", "");
        if (d == 0.0f) step("Note", "an all-zero block", "scale 0: the block decodes to zeros");
    } else if (fam == "mx") {
        const uint8_t byte = enc.raw_scales.at(0);
        const int emax = exponent_field(f.element_max);  // 8, 15, 4, 2, 2, 0
        const float X = e8m0_to_float(byte);
        w.scale = X;
        step("Block amax", "max |x_i| over this block of 32", num(bamax));
        if (spec.mx_round_up) {
            step("Scale exponent", "ceil(log2(amax / " + num(f.element_max) + "))", std::to_string(static_cast<int>(byte) - 127));
        } else {
            step("floor(log2(amax))", "from the float32 exponent bits", bamax > 0 ? std::to_string(exponent_field(bamax)) : "-127 (zero block)");
            step("Scale exponent", "floor(log2(amax)) - emax_elem (emax_elem = " + std::to_string(emax) + "), clamped to [-127, 127]",
                 std::to_string(static_cast<int>(byte) - 127));
        }
        step("Shared scale X", "2^e, stored as the E8M0 byte e + 127", num(X) + "  (byte " + std::to_string(byte) + ")");
        step("Encode", f.name == "mxint8" ? "k = clamp(rne(64 * x / X), -127, 127)" : "code = " + f.element.name + "(x / X), ties to even, saturating", "");
        step("Decode", f.name == "mxint8" ? "x' = k / 64 * X" : "x' = value(code) * X", "");
        if (byte == kE8m0Nan) step("Note", "the block holds NaN or Inf", "scale byte 0xFF: the whole block is NaN");
    } else if (fam == "int") {
        const float scale = enc.scales.as<float>()[0];
        const int b = f.element_bits;
        w.scale = scale;
        if (spec.asymmetric) {
            const float zp = enc.zero_points.at(0);
            float mn = 0, mx = 0;
            for (float v : block)
                if (std::isfinite(v)) {
                    mn = std::min(mn, v);
                    mx = std::max(mx, v);
                }
            step("Range", "min(x, 0) .. max(x, 0)", num(mn) + " .. " + num(mx));
            step("Scale", "(max - min) / " + std::to_string((1 << b) - 1), num(scale));
            step("Zero point", "clamp(-rne(min / scale), 0, " + std::to_string((1 << b) - 1) + ")", num(zp));
            step("Encode", "q = clamp(rne(x / scale) + zp, 0, " + std::to_string((1 << b) - 1) + ")", "");
            step("Decode", "x' = (q - zp) * scale", "");
            level_values.clear();
            for (int q = 0; q < (1 << b); ++q) level_values.push_back(static_cast<float>(q) - zp);
        } else {
            const int qmax = (1 << (b - 1)) - 1;
            step(spec.granularity == Granularity::Group ? "Group amax" : "Tensor amax", "max |x|",
                 num(spec.granularity == Granularity::Group ? bamax : spec.fixed_amax));
            step("Scale", "amax / " + std::to_string(qmax), num(scale));
            step("Encode", "q = clamp(rne(x / scale), -" + std::to_string(qmax) + ", " + std::to_string(qmax) + ")", "");
            step("Decode", "x' = q * scale", "");
        }
    } else if (fam == "nf4") {
        const float absmax = enc.scales.as<float>()[0];
        w.scale = absmax;
        step("Block absmax", "max |x_i| over 64 consecutive elements", num(bamax));
        if (spec.double_quant) {
            step("Double quantization", "offset = mean(absmax); (absmax - offset) as 8 bits (dynamic map)",
                 "offset " + num(enc.offset.value_or(0)) + ", stored absmax " + num(absmax));
        }
        step("Normalise", "s = clamp(x / absmax, -1, 1)", "");
        step("Encode", "code = nearest NF4 value (ties to the lower index)", "");
        step("Decode", "x' = NF4[code] * absmax", "");
    } else if (fam == "gguf" && gguf_is_iquant(gguf_format_kernel_type(f.name))) {
        explain_lattice_block(w, f, enc, sub_block, step);
        level_values.clear();  // w.grid is filled by explain_lattice_block
    } else if (fam == "gguf" && gguf_is_super_block_format(f.name)) {
        explain_super_block(w, padded, f, enc, sub_block, step);
        level_values.clear();  // w.grid is filled by explain_super_block
    } else if (fam == "gguf") {
        const float d = enc.scales.as<float>()[0];
        w.scale = d;
        if (f.name == "gguf_q4_1") {
            float mn = 0, mx = 0;
            bool first = true;
            for (float v : block)
                if (std::isfinite(v)) {
                    mn = first ? v : std::min(mn, v);
                    mx = first ? v : std::max(mx, v);
                    first = false;
                }
            step("Block statistics", "min and max of the block", num(mn) + " .. " + num(mx));
        } else if (f.name == "gguf_q4_0" || f.name == "gguf_q5_0") {
            float signed_max = 0;
            for (float v : block)
                if (std::isfinite(v) && std::fabs(v) > std::fabs(signed_max)) signed_max = v;
            step("Block statistics", "max: the element of largest magnitude, with its sign", num(signed_max));
        } else {
            step("Block statistics", "max |x_i| over the block of 32", num(bamax));
        }
        step("Scale", f.scale_rule, num(d));
        step("Bytes", "block of 32 elements in " + std::to_string(static_cast<int>(f.bits_per_element * 32 / 8)) + " bytes", "");
        if (f.name == "gguf_q4_1") {
            const float m = enc.scales.as<float>()[1];
            level_values.clear();
            for (int q = 0; q < 16; ++q) level_values.push_back(static_cast<float>(q) + m / d);
        }
    }

    // Per-element view: the element-domain value, code and bit pattern.
    if (fam != "passthrough") {
        const SuperBlockWalkthrough& sb = w.super_block;
        for (int64_t i = 0; i < n; ++i) {
            if (sb.present) {  // each element in its own sub-block's domain: (x + min) / scale
                const WalkthroughSubBlock& s = sb.sub_blocks[static_cast<size_t>(i / sb.sub_block_length)];
                w.scaled.push_back(s.scale != 0 ? static_cast<float>((block[i] + s.min) / s.scale) : 0.0f);
            } else {
                w.scaled.push_back(w.scale != 0 ? static_cast<float>(block[i] / w.scale) : 0.0f);
            }
            unsigned c = 0;
            const NdArray& codes = enc.codes;
            if (codes.dtype == DType::Int8)
                c = static_cast<unsigned>(static_cast<uint8_t>(codes.as<int8_t>()[i]));
            else
                c = codes.as<uint8_t>()[i];
            w.codes.push_back(c);
            if (f.element.is_float && f.element_bits <= 8)
                w.code_bits.push_back(float_code_bits(c, f.element));
            else
                w.code_bits.push_back(bits(c, f.element_bits));
        }
    }
    if (!w.super_block.present)
        for (float v : level_values) w.grid.push_back(static_cast<float>(v * w.scale));
    double se = 0;
    int64_t cnt = 0;
    for (int64_t i = 0; i < n; ++i)
        if (std::isfinite(block[i])) {
            const double e = static_cast<double>(w.output[i]) - block[i];
            se += e * e;
            ++cnt;
        }
    w.mse = cnt ? se / static_cast<double>(cnt) : 0.0;
    return w;
}

}  // namespace ql
