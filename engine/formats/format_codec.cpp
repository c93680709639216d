// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/formats/format_codec.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "engine/core/errors.h"
#include "kernels/channel_reduce.h"
#include "kernels/gguf_blocks.h"
#include "kernels/half_rounding.h"
#include "kernels/integer_quant.h"
#include "kernels/llm_int8.h"
#include "kernels/microscaling.h"
#include "kernels/minifloat.h"
#include "kernels/mx.h"
#include "kernels/nf4.h"
#include "kernels/nvfp4.h"
#include "kernels/nvfp4_e5m3.h"
#include "kernels/packing.h"
#include "kernels/scaled_fp8.h"
#if defined(QUANTLAB_HAVE_CUDA)
#include "kernels/cuda_kernels.h"
#endif

namespace ql {
namespace {

using namespace ql::kernels;

int64_t numel_of(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

int64_t last_dim(const std::vector<int64_t>& shape) { return shape.empty() ? 1 : shape.back(); }

RowBlocks row_blocks(const std::vector<int64_t>& shape, int64_t block) {
    const int64_t cols = last_dim(shape);
    return RowBlocks{cols == 0 ? 0 : numel_of(shape) / cols, cols, block};
}

ChannelLayout channel_layout(const std::vector<int64_t>& shape, const QuantSpec& s) {
    if (s.granularity != Granularity::Channel || shape.empty()) return ChannelLayout{1, 1, numel_of(shape)};
    ChannelLayout L;
    for (int i = 0; i < s.axis; ++i) L.outer *= shape[i];
    L.channels = shape[s.axis];
    for (size_t i = s.axis + 1; i < shape.size(); ++i) L.inner *= shape[i];
    return L;
}

std::vector<int64_t> with_last(std::vector<int64_t> shape, int64_t last) {
    if (shape.empty()) shape.push_back(1);
    shape.back() = last;
    return shape;
}


GgufType gguf_type_of(const std::string& name) { return gguf_format_kernel_type(name); }

// The importance weights the GGUF kernels read (nullptr when none is set).
const float* importance_of(const QuantSpec& s) { return s.importance.empty() ? nullptr : s.importance.data(); }

// The importance a GGUF kernel gets; UserError for the types ggml will not quantize without one
// (ggml_quantize_requires_imatrix: IQ2_XXS, IQ2_XS, IQ1_S).
const float* gguf_importance(const QuantSpec& s, GgufType t) {
    if (s.importance.empty() && gguf_requires_importance(t))
        throw UserError(s.info->name + " needs importance weights (one per input column: --importance F.npy, or an "
                        "imatrix): llama.cpp quantizes " + s.info->title.substr(5) +
                        " only with an importance matrix (ggml_quantize_requires_imatrix)");
    return importance_of(s);
}

IntFormat int_format(const QuantSpec& s) { return IntFormat{s.info->element_bits, s.asymmetric}; }

const std::string& family(const QuantSpec& s) { return s.info->family; }

float nvfp4_g(const float* x, int64_t n, const QuantSpec& s) {
    const float amax = std::isnan(s.fixed_amax) ? finite_absmax(x, n) : s.fixed_amax;
    return nvfp4_global_scale(amax);
}

}  // namespace

float nvfp4_tensor_global_scale(const float* x, int64_t n, const QuantSpec& s) { return nvfp4_g(x, n, s); }

namespace {
constexpr std::pair<const char*, GgufType> kGgufFormats[] = {
    {"gguf_q8_0", GgufType::Q8_0},     {"gguf_q4_0", GgufType::Q4_0},     {"gguf_q4_1", GgufType::Q4_1},
    {"gguf_q5_0", GgufType::Q5_0},     {"gguf_mxfp4", GgufType::MXFP4},   {"gguf_q2_k", GgufType::Q2_K},
    {"gguf_q3_k", GgufType::Q3_K},     {"gguf_q4_k", GgufType::Q4_K},     {"gguf_q5_k", GgufType::Q5_K},
    {"gguf_q6_k", GgufType::Q6_K},     {"gguf_iq4_nl", GgufType::IQ4_NL}, {"gguf_iq4_xs", GgufType::IQ4_XS},
    {"gguf_iq2_xxs", GgufType::IQ2_XXS}, {"gguf_iq2_xs", GgufType::IQ2_XS}, {"gguf_iq2_s", GgufType::IQ2_S},
    {"gguf_iq3_xxs", GgufType::IQ3_XXS}, {"gguf_iq3_s", GgufType::IQ3_S},   {"gguf_iq1_s", GgufType::IQ1_S},
    {"gguf_iq1_m", GgufType::IQ1_M},   {"gguf_tq1_0", GgufType::TQ1_0},   {"gguf_tq2_0", GgufType::TQ2_0}};
}  // namespace

GgufType gguf_format_kernel_type(const std::string& format) {
    for (const auto& [name, t] : kGgufFormats)
        if (format == name) return t;
    throw std::logic_error("not a GGUF format: " + format);
}

bool gguf_is_super_block_format(const std::string& format) {
    for (const auto& [name, t] : kGgufFormats)
        if (format == name) return t >= GgufType::Q2_K && !gguf_is_iquant(t);
    return false;
}

MxElement mx_element(const std::string& name) {
    if (name == "mxfp8_e4m3") return MxElement::E4M3;
    if (name == "mxfp8_e5m2") return MxElement::E5M2;
    if (name == "mxfp6_e3m2") return MxElement::E3M2;
    if (name == "mxfp6_e2m3") return MxElement::E2M3;
    if (name == "mxfp4") return MxElement::E2M1;
    return MxElement::Int8;
}

Fp8Kind fp8_kind(const std::string& name) { return name == "fp8_e4m3" ? Fp8Kind::E4M3 : Fp8Kind::E5M2; }

float llm_int8_threshold(const std::string& name) { return name == "llm_int8" ? kLlmInt8Threshold : 0.0f; }

// Per-tensor / per-channel scales for FP8 and INT (the group and block formats compute theirs
// inside the kernels).
static std::vector<float> channel_amax(const float* x, const std::vector<int64_t>& shape, const QuantSpec& s) {
    const ChannelLayout L = channel_layout(shape, s);
    std::vector<float> amax(static_cast<size_t>(L.channels));
    if (!std::isnan(s.fixed_amax) && L.channels == 1) {
        amax[0] = s.fixed_amax;
        return amax;
    }
    channel_finite_absmax(x, L, amax.data());
    return amax;
}

std::vector<float> fp8_scales(const float* x, const std::vector<int64_t>& shape, const QuantSpec& s) {
    std::vector<float> scales = channel_amax(x, shape, s);
    for (float& v : scales) v = fp8_scale_for_amax(v, fp8_kind(s.info->name));
    return scales;
}

std::vector<IntParams> int_channel_params(const float* x, const std::vector<int64_t>& shape, const QuantSpec& s) {
    const ChannelLayout L = channel_layout(shape, s);
    std::vector<float> lo(static_cast<size_t>(L.channels)), hi(static_cast<size_t>(L.channels));
    if (!std::isnan(s.fixed_amax) && L.channels == 1) {
        lo[0] = -s.fixed_amax;
        hi[0] = s.fixed_amax;
    } else if (s.asymmetric) {
        channel_finite_range(x, L, lo.data(), hi.data());
    } else {
        channel_finite_absmax(x, L, hi.data());
        for (size_t c = 0; c < lo.size(); ++c) lo[c] = -hi[c];
    }
    std::vector<IntParams> p(lo.size());
    for (size_t c = 0; c < lo.size(); ++c) p[c] = int_params_for_range(lo[c], hi[c], int_format(s));
    return p;
}

QuantSpec resolve_spec(const QuantOptions& o, const std::vector<int64_t>& shape) {
    QuantSpec s;
    s.info = &format_info(o.format);
    const FormatInfo& f = *s.info;
    const std::string& fam = f.family;
    const int rank = static_cast<int>(shape.size());
    for (int64_t d : shape)
        if (d < 0) throw UserError("shape " + shape_string(shape) + " has a negative dimension");

    if (!o.granularity.empty() && o.granularity != "tensor" && o.granularity != "channel" && o.granularity != "group")
        throw UserError("unknown granularity '" + o.granularity + "' (tensor, channel or group)");
    const bool has_granularity = !f.granularities.empty();
    if (!has_granularity && !o.granularity.empty() && o.granularity != "tensor")
        throw UserError(f.name + " has fixed blocks of " + std::to_string(f.block_size) +
                        " elements; --granularity does not apply");
    if (has_granularity && !o.granularity.empty() &&
        std::find(f.granularities.begin(), f.granularities.end(), o.granularity) == f.granularities.end())
        throw UserError(f.name + " does not support granularity '" + o.granularity + "'");
    if (o.asymmetric && !f.supports_asymmetric) throw UserError("--asym applies to integer formats only, not " + f.name);
    if (o.double_quant && !f.supports_double_quant) throw UserError("--double-quant applies to nf4 only, not " + f.name);
    if (o.mx_scale != "floor" && o.mx_scale != "rceil") throw UserError("unknown MX scale rule '" + o.mx_scale + "' (floor or rceil)");
    if (o.mx_scale == "rceil" && !f.supports_scale_rule) throw UserError("--mx-scale applies to MX formats only, not " + f.name);
    if (o.group_size < 0) throw UserError("group size must be positive, got " + std::to_string(o.group_size));

    s.asymmetric = o.asymmetric;
    s.double_quant = o.double_quant;
    s.mx_round_up = o.mx_scale == "rceil";
    if (has_granularity) {
        const std::string g = o.granularity.empty() ? "tensor" : o.granularity;
        s.granularity = g == "tensor" ? Granularity::Tensor : (g == "channel" ? Granularity::Channel : Granularity::Group);
    }
    if (s.granularity == Granularity::Group) {
        s.block = o.group_size > 0 ? o.group_size : f.default_group_size;
        // A short last group is quantized with its own elements: Model Optimizer pads it with zeros
        // (TensorQuantizer._setup_for_blockquant) and a zero changes neither a group's amax nor its
        // range (which always holds 0), so both give the same values. A group longer than the
        // whole row is per-channel quantization under another name and most likely a mistake.
        const int64_t cols = last_dim(shape);
        if (cols > 0 && s.block > cols)
            throw UserError("group size " + std::to_string(s.block) + " is longer than the last dimension (" +
                            std::to_string(cols) + ") of shape " + shape_string(shape) +
                            ": use a smaller group or per-channel granularity");
    } else if (fam == "nf4") {
        s.block = o.group_size > 0 ? o.group_size : f.block_size;
    } else if (f.block_size > 0) {
        if (o.group_size > 0 && o.group_size != f.block_size)
            throw UserError(f.name + " uses blocks of " + std::to_string(f.block_size) + "; --group-size " +
                            std::to_string(o.group_size) + " does not apply");
        s.block = f.block_size;
    } else if (o.group_size > 0) {
        throw UserError("--group-size needs --granularity group");
    }
    if (s.granularity == Granularity::Channel) {
        if (rank == 0) throw UserError("per-channel quantization needs at least one dimension");
        const int axis = o.axis < 0 ? o.axis + rank : o.axis;
        if (axis < 0 || axis >= rank)
            throw UserError("axis " + std::to_string(o.axis) + " is out of range for shape " + shape_string(shape));
        s.axis = axis;
    } else if (o.axis != 0) {
        throw UserError("--axis needs --granularity channel");
    }
    return s;
}

void set_importance(QuantSpec& spec, std::vector<float> importance, const std::vector<int64_t>& shape,
                    const std::string& what) {
    if (!spec.info || spec.info->family != "gguf")
        throw UserError(what + ": importance weights apply to the GGUF formats only, not " +
                        (spec.info ? spec.info->name : std::string("?")));
    const int64_t cols = last_dim(shape);
    if (static_cast<int64_t>(importance.size()) != cols)
        throw UserError(what + ": " + std::to_string(importance.size()) + " importance values for a last dimension of " +
                        std::to_string(cols) + " (shape " + shape_string(shape) + "): one per column is needed");
    for (size_t i = 0; i < importance.size(); ++i)
        if (!std::isfinite(importance[i]) || importance[i] < 0.0f)
            throw UserError(what + ": importance value " + std::to_string(i) + " is " + std::to_string(importance[i]) +
                            " (must be finite and >= 0)");
    spec.importance = std::move(importance);
}

void fake_quantize_buffer(const float* x, float* y, const std::vector<int64_t>& shape, const QuantSpec& s) {
    const int64_t n = numel_of(shape);
    if (n == 0) return;
    const std::string& fam = family(s);
    const std::string& name = s.info->name;
    if (fam == "passthrough") {
        if (name == "fp32") {
            if (x != y) std::copy(x, x + n, y);
        } else {
            half_round_trip(x, y, n, name == "bf16" ? HalfKind::BF16 : HalfKind::FP16);
        }
    } else if (fam == "fp8") {
        const auto scales = fp8_scales(x, shape, s);
        fp8_fake_quant(x, y, channel_layout(shape, s), scales.data(), fp8_kind(name));
    } else if (fam == "nvfp4") {
        nvfp4_fake_quant(x, y, row_blocks(shape, kNvfp4Block), nvfp4_g(x, n, s));
    } else if (fam == "nvfp4_e5m3") {
        nvfp4_e5m3_fake_quant(x, y, row_blocks(shape, kNvfp4E5m3Block));
    } else if (fam == "llm_int8") {
        const RowBlocks L = row_blocks(shape, 1);
        llm_int8_fake_quant(x, y, L.rows, L.cols, llm_int8_threshold(name));
    } else if (fam == "mx") {
        mx_fake_quant(x, y, row_blocks(shape, s.block), mx_element(name),
                      s.mx_round_up ? MxScaleRule::RoundUp : MxScaleRule::Floor);
    } else if (fam == "int") {
        if (s.granularity == Granularity::Group) {
            int_fake_quant_groups(x, y, row_blocks(shape, s.block), int_format(s));
        } else {
            const auto p = int_channel_params(x, shape, s);
            int_fake_quant_channels(x, y, channel_layout(shape, s), p.data(), int_format(s));
        }
    } else if (fam == "nf4") {
        if (s.double_quant)
            nf4_fake_quant_double(x, y, n, s.block);
        else
            nf4_fake_quant(x, y, n, s.block);
    } else if (fam == "gguf") {
        const GgufType t = gguf_type_of(name);
        gguf_fake_quant(x, y, row_blocks(shape, gguf_block_elements(t)), t, gguf_importance(s, t));
    } else {
        throw std::logic_error("format family without a kernel: " + fam);
    }
}

#if defined(QUANTLAB_HAVE_CUDA)
void fake_quantize_device_buffer(const float* x, float* y, const std::vector<int64_t>& shape, const QuantSpec& s,
                                 void* stream) {
    namespace cu = kernels::cuda;
    const int64_t n = numel_of(shape);
    if (n == 0) return;
    const std::string& fam = family(s);
    const std::string& name = s.info->name;
    const bool fixed = !std::isnan(s.fixed_amax);
    if (fam == "passthrough") {
        if (name == "fp32")
            cu::copy_on_device(y, x, static_cast<size_t>(n) * sizeof(float), stream);
        else
            cu::half_round_trip(x, y, n, name == "bf16" ? HalfKind::BF16 : HalfKind::FP16, stream);
    } else if (fam == "fp8") {
        const ChannelLayout L = channel_layout(shape, s);
        const cu::DeviceArray<float> scales(L.channels, stream);
        if (fixed && L.channels == 1)
            cu::copy_to_device(scales.data(), &s.fixed_amax, sizeof(float), stream);
        else
            cu::channel_finite_absmax(x, L, scales.data(), stream);
        cu::fp8_scales_for_amax(scales.data(), L.channels, fp8_kind(name), scales.data(), stream);
        cu::fp8_fake_quant(x, y, L, scales.data(), fp8_kind(name), stream);
    } else if (fam == "nvfp4") {
        const float amax = fixed ? s.fixed_amax : cu::finite_absmax(x, n, stream);
        cu::nvfp4_fake_quant(x, y, row_blocks(shape, kNvfp4Block), nvfp4_global_scale(amax), stream);
    } else if (fam == "mx") {
        cu::mx_fake_quant(x, y, row_blocks(shape, s.block), mx_element(name),
                          s.mx_round_up ? MxScaleRule::RoundUp : MxScaleRule::Floor, stream);
    } else if (fam == "int" && s.granularity == Granularity::Group) {
        cu::int_fake_quant_groups(x, y, row_blocks(shape, s.block), int_format(s), stream);
    } else if (fam == "int") {
        const ChannelLayout L = channel_layout(shape, s);
        const cu::DeviceArray<float> lo(L.channels, stream), hi(L.channels, stream);
        const cu::DeviceArray<IntParams> p(L.channels, stream);
        const float* lo_or_minus_hi = lo.data();
        if (fixed && L.channels == 1) {
            const float range[2] = {-s.fixed_amax, s.fixed_amax};
            cu::copy_to_device(lo.data(), &range[0], sizeof(float), stream);
            cu::copy_to_device(hi.data(), &range[1], sizeof(float), stream);
        } else if (s.asymmetric) {
            cu::channel_finite_range(x, L, lo.data(), hi.data(), stream);
        } else {
            cu::channel_finite_absmax(x, L, hi.data(), stream);
            lo_or_minus_hi = nullptr;  // lo = -hi, as int_channel_params does
        }
        cu::int_params_for_range(lo_or_minus_hi, hi.data(), L.channels, int_format(s), p.data(), stream);
        cu::int_fake_quant_channels(x, y, L, p.data(), int_format(s), stream);
    } else if (fam == "nf4") {
        if (s.double_quant)
            cu::nf4_fake_quant_double(x, y, n, s.block, stream);
        else
            cu::nf4_fake_quant(x, y, n, s.block, stream);
    } else if (fam == "nvfp4_e5m3" || fam == "llm_int8" || (fam == "gguf" && gguf_is_iquant(gguf_type_of(name)))) {
        // No CUDA kernels for the lattice searches nor (yet) for NVFP4 with E5M3 scales and
        // LLM.int8(): a round trip through the CPU kernels.
        std::vector<float> host(static_cast<size_t>(n));
        cu::copy_to_host(host.data(), x, host.size() * sizeof(float), stream);
        fake_quantize_buffer(host.data(), host.data(), shape, s);
        cu::copy_to_device(y, host.data(), host.size() * sizeof(float), stream);
    } else if (fam == "gguf") {
        const GgufType t = gguf_type_of(name);
        if (s.importance.empty()) {
            cu::gguf_fake_quant(x, y, row_blocks(shape, gguf_block_elements(t)), t, nullptr, stream);
        } else {
            const cu::DeviceArray<float> importance(static_cast<int64_t>(s.importance.size()), stream);
            cu::copy_to_device(importance.data(), s.importance.data(), s.importance.size() * sizeof(float), stream);
            cu::gguf_fake_quant(x, y, row_blocks(shape, gguf_block_elements(t)), t, importance.data(), stream);
        }
    } else {
        throw std::logic_error("format family without a CUDA kernel: " + fam);
    }
}
#endif

EncodedTensor encode_buffer(const float* x, const std::vector<int64_t>& shape, const QuantSpec& s) {
    EncodedTensor e;
    const int64_t n = numel_of(shape);
    const std::string& fam = family(s);
    const std::string& name = s.info->name;
    const bool signed_codes = (fam == "int" && !s.asymmetric) || fam == "llm_int8" || name == "mxint8" || name == "gguf_q8_0";
    e.codes = NdArray::zeros(signed_codes ? DType::Int8 : DType::UInt8, shape);
    uint8_t* codes = e.codes.as<uint8_t>();
    if (fam == "passthrough") {
        if (name == "fp32") throw UserError("fp32 is not quantized: it has no codes or scales");
        e.codes = NdArray::zeros(DType::UInt16, shape);
        half_encode(x, n, name == "bf16" ? HalfKind::BF16 : HalfKind::FP16, e.codes.as<uint16_t>());
        e.scales = NdArray::from_floats({1.0f}, {1});
    } else if (fam == "fp8") {
        const auto scales = fp8_scales(x, shape, s);
        fp8_encode(x, channel_layout(shape, s), scales.data(), fp8_kind(name), codes);
        e.scales = NdArray::from_floats(scales, {static_cast<int64_t>(scales.size())});
    } else if (fam == "nvfp4") {
        const RowBlocks L = row_blocks(shape, kNvfp4Block);
        const float g = nvfp4_g(x, n, s);
        e.raw_scales.resize(static_cast<size_t>(L.block_count()));
        nvfp4_encode(x, L, g, codes, e.raw_scales.data());
        std::vector<float> sc(e.raw_scales.size());
        for (size_t i = 0; i < sc.size(); ++i) sc[i] = decode_element<E4M3>(e.raw_scales[i]);
        e.scales = NdArray::from_floats(sc, with_last(shape, L.blocks_per_row()));
        e.global_scale = g;
    } else if (fam == "llm_int8") {
        const RowBlocks L = row_blocks(shape, 1);
        std::vector<float> absmax(static_cast<size_t>(L.rows));
        std::vector<uint8_t> kept(static_cast<size_t>(L.cols));
        llm_int8_encode(x, L.rows, L.cols, llm_int8_threshold(name), e.codes.as<int8_t>(), absmax.data(), kept.data());
        for (int64_t j = 0; j < L.cols; ++j)
            if (kept[static_cast<size_t>(j)]) e.outlier_columns.push_back(j);
        for (int64_t i = 0; i < L.rows; ++i)
            for (int64_t j : e.outlier_columns) e.outlier_values.push_back(x[i * L.cols + j]);
        e.scales = NdArray::from_floats(absmax, {L.rows});
    } else if (fam == "nvfp4_e5m3") {
        const RowBlocks L = row_blocks(shape, kNvfp4E5m3Block);
        e.raw_scales.resize(static_cast<size_t>(L.block_count()));
        nvfp4_e5m3_encode(x, L, codes, e.raw_scales.data());
        std::vector<float> sc(e.raw_scales.size());
        for (size_t i = 0; i < sc.size(); ++i) sc[i] = ue5m3_decode(e.raw_scales[i]);
        e.scales = NdArray::from_floats(sc, with_last(shape, L.blocks_per_row()));
    } else if (fam == "mx") {
        const RowBlocks L = row_blocks(shape, s.block);
        e.raw_scales.resize(static_cast<size_t>(L.block_count()));
        mx_encode(x, L, mx_element(name), s.mx_round_up ? MxScaleRule::RoundUp : MxScaleRule::Floor, codes,
                  e.raw_scales.data());
        std::vector<float> sc(e.raw_scales.size());
        for (size_t i = 0; i < sc.size(); ++i) sc[i] = e8m0_to_float(e.raw_scales[i]);
        e.scales = NdArray::from_floats(sc, with_last(shape, L.blocks_per_row()));
    } else if (fam == "int") {
        std::vector<IntParams> p;
        std::vector<int64_t> scale_shape;
        if (s.granularity == Granularity::Group) {
            const RowBlocks L = row_blocks(shape, s.block);
            p.resize(static_cast<size_t>(L.block_count()));
            int_encode_groups(x, L, int_format(s), codes, p.data());
            scale_shape = with_last(shape, L.blocks_per_row());
        } else {
            p = int_channel_params(x, shape, s);
            int_encode_channels(x, channel_layout(shape, s), p.data(), int_format(s), codes);
            scale_shape = {static_cast<int64_t>(p.size())};
        }
        std::vector<float> sc(p.size());
        for (size_t i = 0; i < p.size(); ++i) {
            sc[i] = p[i].scale;
            if (s.asymmetric) e.zero_points.push_back(p[i].zero_point);
        }
        e.scales = NdArray::from_floats(sc, scale_shape);
    } else if (fam == "nf4") {
        const int64_t nb = (n + s.block - 1) / s.block;
        std::vector<float> absmax(static_cast<size_t>(nb));
        nf4_encode(x, n, s.block, codes, absmax.data());
        if (s.double_quant) {
            e.raw_scales.resize(static_cast<size_t>(nb));
            e.absmax2.resize(static_cast<size_t>((nb + kNf4DoubleQuantBlock - 1) / kNf4DoubleQuantBlock));
            float offset = 0;
            nf4_double_quant(absmax.data(), nb, e.raw_scales.data(), e.absmax2.data(), &offset);
            nf4_double_dequant(e.raw_scales.data(), e.absmax2.data(), offset, nb, absmax.data());
            e.offset = offset;
        }
        e.scales = NdArray::from_floats(absmax, {nb});
    } else if (fam == "gguf") {
        const GgufType t = gguf_type_of(name);
        const int64_t block = gguf_block_elements(t);
        const RowBlocks L = row_blocks(shape, block);
        if (!L.divisible())
            throw UserError(name + " needs the last dimension to be a multiple of " + std::to_string(block) + ", got shape " +
                            shape_string(shape));
        e.gguf_blocks.resize(static_cast<size_t>(L.block_count() * gguf_type_size(t)));
        gguf_quantize(x, L.rows, L.cols, t, e.gguf_blocks.data(), gguf_importance(s, t));
        const int per = gguf_scales_per_block(t);
        std::vector<float> sc(static_cast<size_t>(L.block_count() * per));
        gguf_unpack(e.gguf_blocks.data(), L.block_count(), t, codes, sc.data());
        // [..., cols / sub-block] scales, [..., cols / sub-block, 2] (scale, min) where there is a min.
        auto sshape = with_last(shape, L.cols / gguf_sub_block(t));
        if (gguf_has_min(t)) sshape.push_back(2);
        e.scales = NdArray::from_floats(sc, sshape);
    }
    return e;
}

NdArray pack_encoded(const EncodedTensor& e, const std::vector<int64_t>& shape, const QuantSpec& s) {
    const std::string& fam = family(s);
    const std::string& name = s.info->name;
    const int64_t n = numel_of(shape);
    const int64_t cols = last_dim(shape), rows = cols ? n / cols : 0;
    NdArray out;
    out.dtype = DType::UInt8;
    auto bytes_like_codes = [&]() {
        out.shape = e.codes.shape;
        out.bytes = e.codes.bytes;
        if (out.shape.empty()) out.shape = {1};
    };
    if (fam == "passthrough" || fam == "fp8" || fam == "llm_int8" || name == "mxfp8_e4m3" || name == "mxfp8_e5m2" ||
        name == "mxint8" || name == "int8") {
        bytes_like_codes();
        if (e.codes.dtype == DType::UInt16) out.shape.back() *= 2;
    } else if (name == "nvfp4" || name == "nvfp4_e5m3" || name == "mxfp4") {
        out.shape = with_last(shape, (cols + 1) / 2);
        out.bytes.resize(static_cast<size_t>(rows * ((cols + 1) / 2)));
        pack_nibbles(e.codes.as<uint8_t>(), rows, cols, NibbleOrder::LowFirst, out.bytes.data());
    } else if (name == "mxfp6_e3m2" || name == "mxfp6_e2m3") {
        if (cols % 4 != 0)
            throw UserError(name + " packing stores 4 elements in 3 bytes: the last dimension (" + std::to_string(cols) +
                            ") must be a multiple of 4");
        out.shape = with_last(shape, cols / 4 * 3);
        out.bytes.resize(static_cast<size_t>(n / 4 * 3));
        pack_fp6(e.codes.as<uint8_t>(), n, out.bytes.data());
    } else if (fam == "int") {
        const int bits = s.info->element_bits;
        const int64_t d0 = shape.empty() ? 1 : shape[0];
        const int64_t rest = d0 ? n / d0 : 0;
        const int64_t per = int_rows_per_group(bits);
        if (d0 % per != 0)
            throw UserError(name + " packs " + std::to_string(per) + " rows of the output dimension together: dimension 0 (" +
                            std::to_string(d0) + ") must be a multiple of " + std::to_string(per));
        out.shape = shape.empty() ? std::vector<int64_t>{1} : shape;
        out.shape[0] = int_packed_rows(d0, bits);
        out.bytes.resize(static_cast<size_t>(int_packed_rows(d0, bits) * rest));
        pack_int_rows(e.codes.as<uint8_t>(), d0, rest, bits, out.bytes.data());
    } else if (fam == "nf4") {
        out.shape = {(n + 1) / 2};
        out.bytes.resize(static_cast<size_t>((n + 1) / 2));
        pack_nibbles(e.codes.as<uint8_t>(), 1, n, NibbleOrder::HighFirst, out.bytes.data());
    } else if (fam == "gguf") {
        const GgufType t = gguf_type_of(name);
        if (cols % gguf_block_elements(t) != 0)
            throw UserError(name + " packs rows of whole blocks of " + std::to_string(gguf_block_elements(t)) +
                            ": the last dimension (" + std::to_string(cols) + ") is not a multiple");
        out.shape = with_last(shape, cols / gguf_block_elements(t) * gguf_type_size(t));
        out.bytes = e.gguf_blocks;
    }
    return out;
}

std::vector<float> decode_buffer(const EncodedTensor& e, const std::vector<int64_t>& shape, const QuantSpec& s) {
    const int64_t n = numel_of(shape);
    std::vector<float> y(static_cast<size_t>(n));
    const std::string& fam = family(s);
    const std::string& name = s.info->name;
    const uint8_t* codes = e.codes.as<uint8_t>();
    const float* scales = e.scales.as<float>();
    if (fam == "passthrough") {
        half_decode(e.codes.as<uint16_t>(), n, name == "bf16" ? HalfKind::BF16 : HalfKind::FP16, y.data());
    } else if (fam == "fp8") {
        fp8_decode(codes, channel_layout(shape, s), scales, fp8_kind(name), y.data());
    } else if (fam == "nvfp4") {
        nvfp4_decode(codes, e.raw_scales.data(), row_blocks(shape, kNvfp4Block), *e.global_scale, y.data());
    } else if (fam == "nvfp4_e5m3") {
        nvfp4_e5m3_decode(codes, e.raw_scales.data(), row_blocks(shape, kNvfp4E5m3Block), y.data());
    } else if (fam == "llm_int8") {
        const RowBlocks L = row_blocks(shape, 1);
        llm_int8_decode(e.codes.as<int8_t>(), scales, L.rows, L.cols, y.data());
        const size_t kept = e.outlier_columns.size();
        for (int64_t i = 0; i < L.rows; ++i)
            for (size_t k = 0; k < kept; ++k)
                y[static_cast<size_t>(i * L.cols + e.outlier_columns[k])] = e.outlier_values[static_cast<size_t>(i) * kept + k];
    } else if (fam == "mx") {
        mx_decode(codes, e.raw_scales.data(), row_blocks(shape, s.block), mx_element(name), y.data());
    } else if (fam == "int") {
        std::vector<IntParams> p(static_cast<size_t>(e.scales.numel()));
        for (size_t i = 0; i < p.size(); ++i) p[i] = IntParams{scales[i], s.asymmetric ? e.zero_points[i] : 0.0f};
        if (s.granularity == Granularity::Group)
            int_decode_groups(codes, p.data(), row_blocks(shape, s.block), int_format(s), y.data());
        else
            int_decode_channels(codes, channel_layout(shape, s), p.data(), int_format(s), y.data());
    } else if (fam == "nf4") {
        nf4_decode(codes, scales, n, s.block, y.data());
    } else if (fam == "gguf") {
        const GgufType t = gguf_type_of(name);
        const RowBlocks L = row_blocks(shape, gguf_block_elements(t));
        gguf_dequantize(e.gguf_blocks.data(), L.rows, L.cols, t, y.data());
    }
    return y;
}

}  // namespace ql
