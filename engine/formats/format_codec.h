// SPDX-License-Identifier: GPL-3.0-or-later
// One tensor in one format: validated settings (QuantSpec) and the operations on a contiguous
// float32 buffer of a given shape -- fake quantization, encoding to codes / scales / packed
// bytes, decoding. Dispatches to the kernels; plain C++ (the LibTorch wrappers are in
// tensor_quantize.h). Shapes: blocks and groups run along the last dimension.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/format_catalog.h"
#include "engine/core/nd_array.h"
#include "engine/core/quant_options.h"
#include "kernels/gguf_blocks.h"
#include "kernels/integer_quant.h"
#include "kernels/mx.h"
#include "kernels/scaled_fp8.h"

namespace ql {

enum class Granularity { Tensor, Channel, Group, Block };

struct QuantSpec {
    const FormatInfo* info = nullptr;
    Granularity granularity = Granularity::Block;
    int64_t block = 0;        // group size / block size along the last dimension (0: none)
    int axis = 0;             // channel axis, normalised to [0, rank)
    bool asymmetric = false;
    bool double_quant = false;
    bool mx_round_up = false;  // MX "rceil" scale rule
    // A calibrated amax to use instead of the tensor's own (activations: NVFP4 input_scale,
    // FP8 / INT per-tensor static scales). NaN: use the tensor's amax.
    float fixed_amax = std::nanf("");
    // Per-column importance for the GGUF formats (ggml's imatrix: the mean square activation of
    // each input column, one value per element of the last dimension, shared by all rows; empty:
    // the plain reference search). Set through set_importance, which validates it.
    std::vector<float> importance;
};

// Sets spec.importance for a tensor of `shape`; throws UserError when the format does not use
// importance (only the GGUF formats do; Q8_0 and MXFP4 ignore it as ggml does, and accept it),
// when its length is not the last dimension, or when a value is negative or not finite
// (`what` names the source in the message, e.g. the file).
void set_importance(QuantSpec& spec, std::vector<float> importance, const std::vector<int64_t>& shape,
                    const std::string& what);

// Checks `options` against a tensor of `shape`; throws UserError naming the option on any
// problem (unknown format, option that does not apply, a group longer than the last dimension,
// axis out of range). A group size that leaves a short last group is accepted: that group is
// quantized with its own elements, as Model Optimizer's zero padding of it does.
QuantSpec resolve_spec(const QuantOptions& options, const std::vector<int64_t>& shape);

// The GGUF kernel type of a gguf_* format name ("gguf_q4_k" -> Q4_K); std::logic_error for
// another name. gguf_is_super_block_format: the K-quants and IQ4 (searched scales; IQ4_NL too).
kernels::GgufType gguf_format_kernel_type(const std::string& format);
bool gguf_is_super_block_format(const std::string& format);

// The kernels' element types for the MX and FP8 format names (mxfp8_e4m3 ..., fp8_e4m3 / e5m2).
kernels::MxElement mx_element(const std::string& name);
kernels::Fp8Kind fp8_kind(const std::string& name);

// LLM.int8()'s outlier threshold for a llm_int8-family format: 6 for llm_int8, 0 (no
// decomposition) for int8_vectorwise.
float llm_int8_threshold(const std::string& name);

// The per-tensor / per-channel scales fake quantization computes for FP8 (amax / max element)
// and INT (scale, zero point), honouring fixed_amax; for code that quantizes with fixed scales
// (engine/ptq/weight_grid.h). Group and block formats compute theirs inside the kernels.
std::vector<float> fp8_scales(const float* x, const std::vector<int64_t>& shape, const QuantSpec& s);
std::vector<kernels::IntParams> int_channel_params(const float* x, const std::vector<int64_t>& shape, const QuantSpec& s);

// NVFP4's global scale g = amax / (6 * 448) for a tensor of n floats, from fixed_amax when set,
// else from the tensor's finite absmax: the g that encode_buffer and fake_quantize_buffer use.
// For code that encodes a tensor in pieces (engine/export/hf_modelopt_pack.cpp).
float nvfp4_tensor_global_scale(const float* x, int64_t n, const QuantSpec& s);

// y = fake_quantize(x). x and y hold numel(shape) floats; y may equal x.
void fake_quantize_buffer(const float* x, float* y, const std::vector<int64_t>& shape, const QuantSpec& spec);

#if defined(QUANTLAB_HAVE_CUDA)
// y = fake_quantize(x) for DEVICE buffers of the current CUDA device (bit-identical to
// fake_quantize_buffer); stream is a cudaStream_t as void*, enqueued asynchronously except where
// a per-tensor amax is needed on the host (NVFP4) and NF4 double quantization.
void fake_quantize_device_buffer(const float* x, float* y, const std::vector<int64_t>& shape,
                                 const QuantSpec& spec, void* stream);
#endif

struct EncodedTensor {
    NdArray codes;                      // unpacked element codes
    NdArray scales;                     // decoded scales, float32
    std::optional<float> global_scale;  // NVFP4
    std::vector<float> zero_points;     // asymmetric integer formats, one per scale
    std::optional<float> offset;        // NF4 double quantization
    // What packing and decoding need besides the codes.
    std::vector<uint8_t> raw_scales;    // E4M3 / E8M0 bytes (NVFP4, MX), 8-bit absmax codes (NF4 dq)
    std::vector<float> absmax2;         // NF4 double quantization, per 256 blocks
    std::vector<uint8_t> gguf_blocks;   // GGUF: the block bytes themselves
    // LLM.int8(): the columns kept in full precision (ascending) and their values, [rows, count]
    // row-major; codes are 0 there.
    std::vector<int64_t> outlier_columns;
    std::vector<float> outlier_values;
};

EncodedTensor encode_buffer(const float* x, const std::vector<int64_t>& shape, const QuantSpec& spec);

// The bytes an export format stores (FORMATS.md CLI contract, EXPORT.md). Throws UserError when
// the shape does not fit the layout (e.g. GGUF rows not a multiple of 32).
NdArray pack_encoded(const EncodedTensor& e, const std::vector<int64_t>& shape, const QuantSpec& spec);

// Values from codes and scales (equals fake quantization except that NaN inputs decode to the
// NaN code's value).
std::vector<float> decode_buffer(const EncodedTensor& e, const std::vector<int64_t>& shape, const QuantSpec& spec);

}  // namespace ql
