// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/compressed_tensors_layout.h"

#include <ATen/Functions.h>

#include <cmath>
#include <cstring>

#include "engine/core/errors.h"
#include "engine/export/exact_weight_codes.h"
#include "engine/formats/format_codec.h"
#include "engine/models/linear_layer.h"
#include "engine/quant/layer_quantizer.h"
#include "engine/quant/quant_plan.h"
#include "kernels/integer_step.h"
#include "kernels/minifloat.h"
#include "kernels/mx_element.h"
#include "kernels/nvfp4.h"
#include "kernels/nvfp4_block.h"
#include "kernels/packing.h"
#include "kernels/scaled_fp8_element.h"

namespace ql {
namespace {

using D = SafetensorsDtype;

constexpr const char* kPack = "pack-quantized";
constexpr const char* kInt = "int-quantized";
constexpr const char* kFloat = "float-quantized";
constexpr const char* kNaive = "naive-quantized";
constexpr const char* kNvfp4 = "nvfp4-pack-quantized";
constexpr const char* kMxfp4 = "mxfp4-pack-quantized";

CtArgs args(int bits, const char* type, const char* strategy, int64_t group = 0) {
    CtArgs a;
    a.num_bits = bits;
    a.type = type;
    a.strategy = strategy;
    a.group_size = group;
    return a;
}

// compressed-tensors' presets (quantization/quant_scheme.py): NVFP4 / NVFP4A16, MXFP4 / MXFP4A16.
CtArgs nvfp4_args() {
    CtArgs a = args(4, "float", "tensor_group", 16);
    a.scale_dtype = "torch.float8_e4m3fn";
    return a;
}
CtArgs mxfp4_args() {
    CtArgs a = args(4, "float", "group", 32);
    a.scale_dtype = "torch.uint8";
    return a;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

float f32_at(const ExportTensor& t, int64_t i) {
    float v;
    std::memcpy(&v, t.bytes.data() + i * 4, 4);
    return v;
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
    std::vector<uint8_t> b(v.size() * 4);
    if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
    return b;
}

const ExportTensor& find(const std::vector<ExportTensor>& ts, const std::string& name) {
    for (const ExportTensor& t : ts)
        if (t.name == name) return t;
    throw UserError("missing tensor '" + name + "'");
}

// Dense LSB-first packing of `n` B-bit unsigned values into ceil(n*B/32) little-endian int32
// words (compressed-tensors pack_to_int32: element i at global bit i*B, straddling words).
void pack_bits_row(const uint8_t* v, int64_t n, int bits, uint8_t* words_le) {
    const int64_t words = ceil_div(n * bits, 32);
    std::memset(words_le, 0, static_cast<size_t>(words * 4));
    for (int64_t i = 0; i < n; ++i) {
        const uint32_t value = v[i] & ((1u << bits) - 1u);
        for (int b = 0; b < bits; ++b) {
            if (!((value >> b) & 1u)) continue;
            const int64_t bit = i * bits + b;
            words_le[bit / 8] = static_cast<uint8_t>(words_le[bit / 8] | (1u << (bit % 8)));
        }
    }
}

void unpack_bits_row(const uint8_t* words_le, int64_t n, int bits, uint8_t* v) {
    for (int64_t i = 0; i < n; ++i) {
        uint32_t value = 0;
        for (int b = 0; b < bits; ++b) {
            const int64_t bit = i * bits + b;
            value |= static_cast<uint32_t>((words_le[bit / 8] >> (bit % 8)) & 1u) << b;
        }
        v[i] = static_cast<uint8_t>(value);
    }
}

std::string args_key(const CtArgs& a) {
    std::string k = "w" + std::to_string(a.num_bits) + " " + a.type + (a.symmetric ? " sym " : " asym ") + a.strategy;
    if (a.group_size > 0) k += " " + std::to_string(a.group_size);
    if (a.dynamic != "false") k += " dynamic=" + a.dynamic;
    return k;
}

}  // namespace

bool CtArgs::operator==(const CtArgs& o) const {
    return num_bits == o.num_bits && type == o.type && symmetric == o.symmetric && strategy == o.strategy &&
           group_size == o.group_size && dynamic == o.dynamic && scale_dtype == o.scale_dtype && observer == o.observer;
}

std::string CtScheme::key() const { return format + " " + args_key(weights) + " | " + (input ? args_key(*input) : "-"); }

std::string ct_supported_formats_text() {
    return "pack-quantized (intN symmetric or asymmetric, group or per channel along out, inputs off: W4A16, W8A16), "
           "int-quantized (int8 symmetric per channel with int8 static per-tensor inputs: W8A8), "
           "float-quantized (fp8_e4m3 per tensor or per channel with fp8_e4m3 static or dynamic per-tensor inputs, or "
           "inputs off), nvfp4-pack-quantized (nvfp4 weights with nvfp4 static inputs or inputs off), "
           "mxfp4-pack-quantized (mxfp4 weights with mxfp4 dynamic floor-rule inputs or inputs off)";
}

CtScheme ct_scheme_of(const LayerQuantizer& l) {
    const std::string& n = l.name();
    const QuantizerSettings& w = l.plan().weight;
    const QuantizerSettings& in = l.plan().input;
    const bool has_in = l.input_configured();
    const bool pqs = l.pre_quant_scale().defined();
    const std::string what = describe(w, false) + " weights with " + describe(in, true) + " inputs";
    auto refuse = [&](const std::string& why) -> CtScheme {
        throw UserError("layer " + n + ": " + why + " has no compressed-tensors layout; supported: " + ct_supported_formats_text());
    };
    if (l.layer().kind() != LayerKind::Linear) return refuse("a " + std::string(layer_kind_name(l.layer().kind())) + " layer");
    if (const auto* linear = dynamic_cast<const LinearLayer*>(&l.layer()); linear && linear->file_layout_in_out)
        throw UserError("layer " + n + ": a GPT-2 Conv1D layer (stored [in, out]) has no compressed-tensors layout: "
                        "compressed-tensors compresses nn.Linear modules only (compressors/base.py COMPRESSIBLE_MODULE_TYPES)");
    if (pqs)
        throw UserError("layer " + n + ": its AWQ / SmoothQuant pre_quant_scale (x * s before the matmul) has no compressed-tensors "
                        "tensor (vLLM would drop it and compute with wrong inputs); fold it into the preceding layer "
                        "(SmoothQuant does where a norm precedes) or export with --as hf-modelopt");
    const QuantSpec ws = l.weight_spec();
    const std::string wf = ws.info->name;
    const std::string fam = ws.info->family;
    const QuantSpec& is = l.plan().input_spec;
    const std::string inf = has_in ? is.info->name : "";
    const std::vector<int64_t> shape = weight_matrix_shape(l.layer());
    const int64_t in_features = shape[1];
    CtScheme s;
    if (fam == "int") {
        const int bits = ws.info->element_bits;
        if (ws.granularity == Granularity::Group) {
            if (in_features % ws.block != 0) return refuse(what + " (in_features " + std::to_string(in_features) + " not a multiple of the group)");
            s.weights = args(bits, "int", "group", ws.block);
        } else if (ws.granularity == Granularity::Channel && ws.axis == 0) {
            s.weights = args(bits, "int", "channel");
        } else {
            return refuse(what + " (per-tensor or per-input-channel integer weights)");
        }
        s.weights.symmetric = !ws.asymmetric;
        if (!has_in) {
            s.format = kPack;
            return s;
        }
        if (bits == 8 && !ws.asymmetric && s.weights.strategy == "channel" && inf == "int8" && !in.dynamic && !is.asymmetric &&
            is.granularity == Granularity::Tensor) {
            s.format = kInt;
            s.input = args(8, "int", "tensor");
            s.input->observer = "static_minmax";
            return s;
        }
        return refuse(what);
    }
    if (wf == "fp8_e4m3") {
        if (ws.granularity == Granularity::Tensor)
            s.weights = args(8, "float", "tensor");
        else if (ws.granularity == Granularity::Channel && ws.axis == 0)
            s.weights = args(8, "float", "channel");
        else
            return refuse(what);
        if (!has_in) {
            s.format = kNaive;
            return s;
        }
        if (inf != "fp8_e4m3" || is.granularity != Granularity::Tensor) return refuse(what);
        s.format = kFloat;
        s.input = args(8, "float", "tensor");
        if (in.dynamic)
            s.input->dynamic = "true";
        else
            s.input->observer = "static_minmax";
        return s;
    }
    if (wf == "nvfp4") {
        if (in_features % 16 != 0) return refuse(what + " (in_features not a multiple of 16)");
        s.format = kNvfp4;
        s.weights = nvfp4_args();
        if (!has_in) return s;
        // QuantLab's NVFP4 inputs: a calibrated global scale, block scales from the data =
        // compressed-tensors' tensor_group with dynamic "local" (NVFP4 preset).
        if (inf != "nvfp4" || in.dynamic) return refuse(what + " (NVFP4 inputs need a calibrated, static global scale)");
        s.input = nvfp4_args();
        s.input->dynamic = "local";
        s.input->observer = "static_minmax";
        return s;
    }
    if (wf == "mxfp4") {
        if (in_features % 32 != 0) return refuse(what + " (in_features not a multiple of 32)");
        if (ws.mx_round_up) return refuse(what + " (the rceil scale rule; compressed-tensors uses floor)");
        s.format = kMxfp4;
        s.weights = mxfp4_args();
        if (!has_in) return s;
        if (inf != "mxfp4" || is.mx_round_up) return refuse(what);
        s.input = mxfp4_args();
        s.input->dynamic = "true";
        return s;
    }
    return refuse(what);
}

CtScheme ct_scheme_from_args(const std::string& format, const CtArgs& w, const std::optional<CtArgs>& in,
                             const std::string& where) {
    CtScheme s{format, w, in};
    auto bad = [&](const std::string& why) -> CtScheme {
        throw UserError(where + ": " + why + " (QuantLab reads " + ct_supported_formats_text() + ")");
    };
    if (format == kPack) {
        if (w.type != "int" || w.num_bits < 2 || w.num_bits > 8) return bad("pack-quantized needs int weights of 2..8 bits");
        if (w.strategy != "group" && w.strategy != "channel") return bad("pack-quantized weights: strategy '" + w.strategy + "'");
    } else if (format == kInt) {
        if (w.type != "int" || w.num_bits != 8 || w.strategy != "channel" || !w.symmetric)
            return bad("int-quantized needs int8 symmetric per-channel weights");
    } else if (format == kFloat || format == kNaive) {
        if (w.type != "float" || w.num_bits != 8 || (w.strategy != "tensor" && w.strategy != "channel"))
            return bad(format + " needs float8 weights per tensor or per channel");
    } else if (format == kNvfp4) {
        if (w.type != "float" || w.num_bits != 4 || w.group_size != 16) return bad("nvfp4-pack-quantized needs float 4-bit weights, group 16");
    } else if (format == kMxfp4) {
        if (w.type != "float" || w.num_bits != 4 || w.group_size != 32) return bad("mxfp4-pack-quantized needs float 4-bit weights, group 32");
    } else {
        return bad("format '" + format + "' is not one QuantLab reads");
    }
    if (w.strategy == "group" && w.group_size <= 0) return bad("group strategy without a positive group_size");
    return s;
}

std::vector<ExpectedTensor> ct_expected_tensors(const std::string& layer, const CtScheme& s, int64_t out, int64_t in) {
    const std::string p = layer + ".";
    std::vector<ExpectedTensor> e;
    const CtArgs& w = s.weights;
    const int64_t scales_per_row = w.strategy == "group" || w.strategy == "tensor_group" ? in / w.group_size : 1;
    if (s.format == kPack) {
        e.push_back({p + "weight_packed", D::I32, {out, ceil_div(in * w.num_bits, 32)}});
        e.push_back({p + "weight_scale", D::F32, {out, scales_per_row}});
        e.push_back({p + "weight_shape", D::I64, {2}});
        if (!w.symmetric) e.push_back({p + "weight_zero_point", D::I32, {ceil_div(out * w.num_bits, 32), scales_per_row}});
    } else if (s.format == kInt) {
        e.push_back({p + "weight", D::I8, {out, in}});
        e.push_back({p + "weight_scale", D::F32, {out, 1}});
    } else if (s.format == kFloat || s.format == kNaive) {
        e.push_back({p + "weight", D::F8_E4M3, {out, in}});
        e.push_back({p + "weight_scale", D::F32, w.strategy == "tensor" ? std::vector<int64_t>{1} : std::vector<int64_t>{out, 1}});
    } else if (s.format == kNvfp4) {
        e.push_back({p + "weight_packed", D::U8, {out, in / 2}});
        e.push_back({p + "weight_scale", D::F8_E4M3, {out, in / 16}});
        e.push_back({p + "weight_global_scale", D::F32, {1}});
        if (s.input) e.push_back({p + "input_global_scale", D::F32, {1}});
    } else if (s.format == kMxfp4) {
        e.push_back({p + "weight_packed", D::U8, {out, in / 2}});
        e.push_back({p + "weight_scale", D::U8, {out, in / 32}});
    }
    if (s.input && s.input_static() && (s.format == kInt || s.format == kFloat)) e.push_back({p + "input_scale", D::F32, {1}});
    return e;
}

CtPackedLayer pack_ct_layer(LayerQuantizer& l, const CtScheme& s) {
    const std::string p = l.name() + ".";
    const std::vector<int64_t> shape = weight_matrix_shape(l.layer());
    const int64_t out = shape[0], in = shape[1];
    const QuantSpec spec = l.weight_spec();
    CtPackedLayer r;
    EncodedTensor e = exact_weight_codes(l, shape);
    const uint8_t* codes = e.codes.as<uint8_t>();
    const std::vector<float> scales(e.scales.as<float>(), e.scales.as<float>() + e.scales.numel());
    const CtArgs& w = s.weights;
    if (s.format == kPack) {
        const int bits = w.num_bits;
        const uint8_t offset = static_cast<uint8_t>(1u << (bits - 1));
        // compressed-tensors stores q + 2^(B-1) with q in [-2^(B-1), 2^(B-1) - 1]: QuantLab's
        // symmetric codes are q itself (two's complement), its asymmetric codes are already
        // unsigned (q_ct = code - 2^(B-1), zp_ct = zp - 2^(B-1), and (q_ct - zp_ct) = code - zp).
        const int64_t wpr = ceil_div(in * bits, 32);
        std::vector<uint8_t> packed(static_cast<size_t>(out * wpr * 4)), row(static_cast<size_t>(in));
        for (int64_t rr = 0; rr < out; ++rr) {
            for (int64_t c = 0; c < in; ++c) {
                const uint8_t code = codes[rr * in + c];
                row[static_cast<size_t>(c)] = w.symmetric ? static_cast<uint8_t>(code + offset) : code;
            }
            pack_bits_row(row.data(), in, bits, packed.data() + rr * wpr * 4);
        }
        r.tensors.push_back({p + "weight_packed", D::I32, {out, wpr}, std::move(packed)});
        const int64_t per_row = static_cast<int64_t>(scales.size()) / out;
        r.tensors.push_back({p + "weight_scale", D::F32, {out, per_row}, f32_bytes(scales)});
        const int64_t dims[2] = {out, in};
        std::vector<uint8_t> shape_bytes(16);
        std::memcpy(shape_bytes.data(), dims, 16);
        r.tensors.push_back({p + "weight_shape", D::I64, {2}, std::move(shape_bytes)});
        if (!w.symmetric) {
            // Zero points [out, groups] packed along out: column j's `out` values -> ceil(out*B/32) words.
            const int64_t zw = ceil_div(out * bits, 32);
            std::vector<uint8_t> zp(static_cast<size_t>(zw * per_row * 4)), col(static_cast<size_t>(out)), words(static_cast<size_t>(zw * 4));
            for (int64_t j = 0; j < per_row; ++j) {
                for (int64_t rr = 0; rr < out; ++rr) col[static_cast<size_t>(rr)] = static_cast<uint8_t>(e.zero_points[static_cast<size_t>(rr * per_row + j)]);
                pack_bits_row(col.data(), out, bits, words.data());
                for (int64_t k = 0; k < zw; ++k) std::memcpy(zp.data() + (k * per_row + j) * 4, words.data() + k * 4, 4);
            }
            r.tensors.push_back({p + "weight_zero_point", D::I32, {zw, per_row}, std::move(zp)});
        }
    } else if (s.format == kInt) {
        r.tensors.push_back({p + "weight", D::I8, {out, in}, std::vector<uint8_t>(codes, codes + out * in)});
        r.tensors.push_back({p + "weight_scale", D::F32, {out, 1}, f32_bytes(scales)});
    } else if (s.format == kFloat || s.format == kNaive) {
        r.tensors.push_back({p + "weight", D::F8_E4M3, {out, in}, std::vector<uint8_t>(codes, codes + out * in)});
        r.tensors.push_back({p + "weight_scale", D::F32,
                             w.strategy == "tensor" ? std::vector<int64_t>{1} : std::vector<int64_t>{out, 1}, f32_bytes(scales)});
    } else if (s.format == kNvfp4 || s.format == kMxfp4) {
        std::vector<uint8_t> packed(static_cast<size_t>(out * (in / 2)));
        kernels::pack_nibbles(codes, out, in, kernels::NibbleOrder::LowFirst, packed.data());
        r.tensors.push_back({p + "weight_packed", D::U8, {out, in / 2}, std::move(packed)});
        if (s.format == kNvfp4) {
            r.tensors.push_back({p + "weight_scale", D::F8_E4M3, {out, in / 16}, e.raw_scales});
            const float g = *e.global_scale;
            if (!(g > 0) || !std::isfinite(g))
                throw UserError("layer " + l.name() + ": NVFP4 global scale " + std::to_string(g) +
                                " (an all-zero or non-finite weight) has no finite reciprocal for weight_global_scale");
            r.nvfp4_global_scale = g;
            // compressed-tensors multiplies by its global scale: the reciprocal of Model
            // Optimizer's weight_scale_2 (its converter entrypoints/convert/converters/modelopt_nvfp4.py
            // computes 1 / weight_scale_2 in float32; so does this).
            r.tensors.push_back({p + "weight_global_scale", D::F32, {1}, f32_bytes({1.0f / g})});
        } else {
            r.tensors.push_back({p + "weight_scale", D::U8, {out, in / 32}, e.raw_scales});
        }
    }
    (void)spec;
    if (s.input && s.input_static()) {
        if (std::isnan(l.input_amax()))
            throw UserError("layer " + l.name() + ": the static input quantizer is not calibrated (no input amax to export)");
        const float amax = l.input_amax();
        if (s.format == kNvfp4) {
            const float g = kernels::nvfp4_global_scale(amax);
            if (!(g > 0)) throw UserError("layer " + l.name() + ": calibrated input amax " + std::to_string(amax) + " gives no input_global_scale");
            r.tensors.push_back({p + "input_global_scale", D::F32, {1}, f32_bytes({1.0f / g})});
        } else if (s.format == kFloat) {
            r.tensors.push_back({p + "input_scale", D::F32, {1}, f32_bytes({kernels::fp8_scale_of(amax, 448.0f)})});
        } else if (s.format == kInt) {
            const kernels::IntParams ip = kernels::int_params_for_range(-amax, amax, kernels::IntFormat{8, false});
            r.tensors.push_back({p + "input_scale", D::F32, {1}, f32_bytes({ip.scale})});
        }
    }
    return r;
}

std::vector<float> dequantize_ct_layer(const std::string& layer, const CtScheme& s, int64_t out, int64_t in,
                                       const std::vector<ExportTensor>& tensors, CtArithmetic arithmetic, float nvfp4_g) {
    const std::string p = layer + ".";
    std::vector<float> y(static_cast<size_t>(out * in));
    const CtArgs& w = s.weights;
    const int64_t per_row = w.strategy == "group" || w.strategy == "tensor_group" ? in / w.group_size : 1;
    const int64_t group = w.strategy == "group" || w.strategy == "tensor_group" ? w.group_size : in;
    if (s.format == kPack) {
        const ExportTensor& packed = find(tensors, p + "weight_packed");
        const ExportTensor& scale = find(tensors, p + "weight_scale");
        const int bits = w.num_bits;
        const int64_t wpr = ceil_div(in * bits, 32);
        const float offset = static_cast<float>(1 << (bits - 1));
        std::vector<float> zps(static_cast<size_t>(out * per_row), offset);
        if (!w.symmetric) {
            const ExportTensor& zp = find(tensors, p + "weight_zero_point");
            const int64_t zw = ceil_div(out * bits, 32);
            std::vector<uint8_t> words(static_cast<size_t>(zw * 4)), col(static_cast<size_t>(out));
            for (int64_t j = 0; j < per_row; ++j) {
                for (int64_t k = 0; k < zw; ++k) std::memcpy(words.data() + k * 4, zp.bytes.data() + (k * per_row + j) * 4, 4);
                unpack_bits_row(words.data(), out, bits, col.data());
                for (int64_t r = 0; r < out; ++r) zps[static_cast<size_t>(r * per_row + j)] = col[static_cast<size_t>(r)];
            }
        }
        std::vector<uint8_t> row(static_cast<size_t>(in));
        for (int64_t r = 0; r < out; ++r) {
            unpack_bits_row(packed.bytes.data() + r * wpr * 4, in, bits, row.data());
            for (int64_t c = 0; c < in; ++c) {
                const int64_t k = r * per_row + c / group;
                // (q - zp) * scale with q, zp both offset by 2^(B-1) (the offsets cancel), in float32
                // as compressed-tensors' _dequantize computes it.
                y[static_cast<size_t>(r * in + c)] = (static_cast<float>(row[static_cast<size_t>(c)]) - zps[static_cast<size_t>(k)]) * f32_at(scale, k);
            }
        }
    } else if (s.format == kInt) {
        const ExportTensor& wt = find(tensors, p + "weight");
        const ExportTensor& scale = find(tensors, p + "weight_scale");
        for (int64_t i = 0; i < out * in; ++i)
            y[static_cast<size_t>(i)] = static_cast<float>(static_cast<int8_t>(wt.bytes[static_cast<size_t>(i)])) * f32_at(scale, i / in);
    } else if (s.format == kFloat || s.format == kNaive) {
        const ExportTensor& wt = find(tensors, p + "weight");
        const ExportTensor& scale = find(tensors, p + "weight_scale");
        const bool tensor = w.strategy == "tensor";
        for (int64_t i = 0; i < out * in; ++i)
            y[static_cast<size_t>(i)] = kernels::fp8_decode_element<kernels::E4M3>(wt.bytes[static_cast<size_t>(i)], f32_at(scale, tensor ? 0 : i / in));
    } else if (s.format == kNvfp4 || s.format == kMxfp4) {
        const ExportTensor& packed = find(tensors, p + "weight_packed");
        const ExportTensor& scale = find(tensors, p + "weight_scale");
        std::vector<uint8_t> codes(static_cast<size_t>(out * in));
        kernels::unpack_nibbles(packed.bytes.data(), out, in, kernels::NibbleOrder::LowFirst, codes.data());
        if (s.format == kMxfp4) {
            for (int64_t i = 0; i < out * in; ++i) {
                const uint8_t e = scale.bytes[static_cast<size_t>((i / in) * per_row + (i % in) / 32)];
                y[static_cast<size_t>(i)] = kernels::mx_decode_element<kernels::MxFloatElement<kernels::E2M1>>(
                    codes[static_cast<size_t>(i)], kernels::mx_block_scale(e).scale);
            }
        } else {
            const float G = f32_at(find(tensors, p + "weight_global_scale"), 0);
            const float g = std::isnan(nvfp4_g) ? 1.0f / G : nvfp4_g;
            for (int64_t i = 0; i < out * in; ++i) {
                const uint8_t s8 = scale.bytes[static_cast<size_t>((i / in) * per_row + (i % in) / 16)];
                const float e2m1 = kernels::decode_element<kernels::E2M1>(codes[static_cast<size_t>(i)]);
                const float s = kernels::decode_element<kernels::E4M3>(s8);
                // QuantLab: e2m1 x (s8 x g) (kernels/nvfp4_block.h); compressed-tensors' _dequantize:
                // scale / global_scale, then x_q x that (forward_helpers.py), in float32.
                y[static_cast<size_t>(i)] = arithmetic == CtArithmetic::QuantLab ? e2m1 * (s * g) : e2m1 * (s / G);
            }
        }
    }
    return y;
}

}  // namespace ql
