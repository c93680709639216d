// SPDX-License-Identifier: GPL-3.0-or-later
// pack_hf_layer and dequantize_hf_layer (declared in hf_modelopt_layout.h): one layer's weight to
// Model Optimizer's stored bytes and back.
//
// Speed (docs/BENCHMARKS.md "Export"): the weight is streamed once to encode and pack and once
// more, together with the quantized weight, for the exactness check, in tiles of rows that stay
// in cache and run on the kernels' thread pool (kernels/parallel.h). The check decodes the bytes
// as written, through the same row decoder the reader uses (dequantize_hf_layer), and compares
// them with the quantized forward's weight: a tile whose floats are bitwise equal passes with
// one memcmp. Elements that differ (GPTQ's pinned result, where the forward's weight is not the
// rounding of the weight the quantizer reads) get codes re-derived from the forward's weight on
// the same scales; the tile is then decoded and compared once more, and any difference left is
// a UserError. NVFP4 is encoded tile by tile (no full-size code buffer); the other formats use
// the whole-tensor encoder (engine/formats/format_codec.h) and pack its codes.
#include <ATen/Functions.h>

#include <cmath>
#include <cstring>
#include <exception>
#include <mutex>

#include "engine/core/errors.h"
#include "engine/export/hf_modelopt_layout.h"
#include "engine/formats/format_codec.h"
#include "engine/quant/layer_quantizer.h"
#include "engine/quant/quant_plan.h"
#include "kernels/integer_quant.h"
#include "kernels/integer_step.h"
#include "kernels/mx.h"
#include "kernels/mx_element.h"
#include "kernels/nvfp4.h"
#include "kernels/nvfp4_block.h"
#include "kernels/packing.h"
#include "kernels/parallel.h"
#include "kernels/scaled_fp8.h"
#include "kernels/scaled_fp8_element.h"

namespace ql {
namespace {

using D = SafetensorsDtype;

enum class Layout { Nvfp4, Fp8, Int4Awq, Mxfp4 };

Layout layout_of(const HfLayerFormat& f, const std::string& layer) {
    const std::string& a = f.quant_algo;
    if (a == "NVFP4" || a == "NVFP4_AWQ" || a == "W4A16_NVFP4") return Layout::Nvfp4;
    if (a == "FP8") return Layout::Fp8;
    if (a == "W4A16_AWQ") return Layout::Int4Awq;
    if (a == "MXFP4") return Layout::Mxfp4;
    throw UserError("layer " + layer + ": unknown export format " + a);
}

// One layer's stored weight as the checkpoint holds it (the reader's view). Pointers into
// tensors owned by the caller; `weight` is written only by the exactness check's repairs.
struct StoredWeight {
    Layout layout = Layout::Nvfp4;
    int64_t out = 0, in = 0, group = 0;
    uint8_t* weight = nullptr;             // NVFP4 / MXFP4 [out, ceil(in/2)], FP8 [out, in], INT4 [out/2, in]
    const uint8_t* raw_scales = nullptr;   // NVFP4 E4M3 / MXFP4 E8M0 bytes, [out, blocks per row]
    const float* scales = nullptr;         // FP8: 1 value; INT4: [out, in / group]
    float global_scale = 0;                // NVFP4 weight_scale_2

    int64_t packed_cols() const { return (in + 1) / 2; }
    int64_t blocks_per_row() const { return (in + group - 1) / group; }
    // Rows a tile must be a multiple of (INT4 packs two rows per byte).
    int64_t row_align() const { return layout == Layout::Int4Awq ? 2 : 1; }
};

// Per-thread buffers for one tile of rows.
struct TileScratch {
    std::vector<uint8_t> codes;
    std::vector<kernels::IntParams> params;
    std::vector<float> values;
};

// Rows [r0, r1) of the dequantized weight into y[(r1 - r0) * in].
void decode_rows(const StoredWeight& s, int64_t r0, int64_t r1, TileScratch& scratch, float* y) {
    const int64_t rows = r1 - r0, n = rows * s.in;
    scratch.codes.resize(static_cast<size_t>(n));
    uint8_t* codes = scratch.codes.data();
    const kernels::RowBlocks L{rows, s.in, s.group};
    switch (s.layout) {
    case Layout::Nvfp4:
        kernels::unpack_nibbles(s.weight + r0 * s.packed_cols(), rows, s.in, kernels::NibbleOrder::LowFirst, codes);
        kernels::nvfp4_decode(codes, s.raw_scales + r0 * s.blocks_per_row(), L, s.global_scale, y);
        break;
    case Layout::Mxfp4:
        kernels::unpack_nibbles(s.weight + r0 * s.packed_cols(), rows, s.in, kernels::NibbleOrder::LowFirst, codes);
        kernels::mx_decode(codes, s.raw_scales + r0 * s.blocks_per_row(), L, kernels::MxElement::E2M1, y);
        break;
    case Layout::Fp8:
        kernels::fp8_decode(s.weight + r0 * s.in, kernels::ChannelLayout{1, 1, n}, s.scales, kernels::Fp8Kind::E4M3, y);
        break;
    case Layout::Int4Awq: {
        kernels::unpack_int_rows(s.weight + (r0 / 2) * s.in, rows, s.in, 4, /*sign_extend=*/true, codes);
        const int64_t gpr = s.blocks_per_row();
        scratch.params.resize(static_cast<size_t>(rows * gpr));
        for (int64_t i = 0; i < rows * gpr; ++i) scratch.params[static_cast<size_t>(i)] = {s.scales[r0 * gpr + i], 0.0f};
        kernels::int_decode_groups(codes, scratch.params.data(), L, kernels::IntFormat{4, false}, y);
        break;
    }
    }
}

// The code of value v for element (r, c) on the stored scales, written into the stored bytes.
void store_code_of(StoredWeight& s, int64_t r, int64_t c, float v) {
    auto set_nibble = [](uint8_t& byte, int shift, unsigned code) {
        byte = static_cast<uint8_t>((byte & ~(0xFu << shift)) | ((code & 0xFu) << shift));
    };
    switch (s.layout) {
    case Layout::Nvfp4: {
        const float d = kernels::nvfp4_denominator_of_code(s.raw_scales[r * s.blocks_per_row() + c / s.group], s.global_scale);
        set_nibble(s.weight[r * s.packed_cols() + c / 2], c % 2 ? 4 : 0, kernels::nvfp4_code_element(v, d));
        break;
    }
    case Layout::Mxfp4: {
        const kernels::MxBlockScale k = kernels::mx_block_scale(s.raw_scales[r * s.blocks_per_row() + c / s.group]);
        set_nibble(s.weight[r * s.packed_cols() + c / 2], c % 2 ? 4 : 0,
                   kernels::mx_code_element<kernels::MxFloatElement<kernels::E2M1>>(v, k));
        break;
    }
    case Layout::Fp8:
        s.weight[r * s.in + c] = static_cast<uint8_t>(kernels::fp8_encode_element<kernels::E4M3>(v, s.scales[0]));
        break;
    case Layout::Int4Awq: {
        const float scale = s.scales[r * s.blocks_per_row() + c / s.group];
        const uint8_t code = kernels::IntStep::make(kernels::IntParams{scale, 0.0f}, kernels::IntFormat{4, false}).encode(v);
        set_nibble(s.weight[(r / 2) * s.in + c], r % 2 ? 4 : 0, code);
        break;
    }
    }
}

// Rows per tile: about 32 Ki elements (128 KiB of floats, cache-resident), a multiple of align.
int64_t tile_rows(int64_t in, int64_t align) {
    const int64_t rows = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(in, 1));
    return (rows + align - 1) / align * align;
}

// body(r0, r1, scratch) over tiles of rows covering [0, out), in parallel. An exception thrown by
// a body (allocation) is rethrown here, after the parallel region.
template <class Body>
void for_each_tile(int64_t out, int64_t rows_per_tile, const Body& body) {
    const int64_t tiles = (out + rows_per_tile - 1) / rows_per_tile;
    std::exception_ptr error;
    std::mutex m;
    kernels::parallel_ranges(tiles, 1, 1, [&](int64_t t0, int64_t t1) {
        try {
            TileScratch scratch;
            for (int64_t t = t0; t < t1; ++t)
                body(t * rows_per_tile, std::min(out, (t + 1) * rows_per_tile), scratch);
        } catch (...) {
            std::lock_guard<std::mutex> lock(m);
            if (!error) error = std::current_exception();
        }
    });
    if (error) std::rethrow_exception(error);
}

// Equal as the forward sees them: 0 == -0, and NaN matches NaN.
inline bool same_value(float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// Makes the stored bytes decode to `want` [out, in] exactly (see the file comment); UserError
// naming the first element that cannot be made to.
void verify_and_repair(StoredWeight& s, const float* want, const std::string& layer, const std::string& algo) {
    std::mutex m;
    int64_t bad = -1;
    float bad_want = 0, bad_got = 0;
    for_each_tile(s.out, tile_rows(s.in, s.row_align()), [&](int64_t r0, int64_t r1, TileScratch& scratch) {
        const int64_t n = (r1 - r0) * s.in;
        scratch.values.resize(static_cast<size_t>(n));
        float* y = scratch.values.data();
        const float* w = want + r0 * s.in;
        decode_rows(s, r0, r1, scratch, y);
        if (std::memcmp(y, w, static_cast<size_t>(n) * sizeof(float)) == 0) return;
        bool repaired = false;
        for (int64_t i = 0; i < n; ++i) {
            if (same_value(y[i], w[i])) continue;
            store_code_of(s, r0 + i / s.in, i % s.in, w[i]);
            repaired = true;
        }
        if (!repaired) return;
        decode_rows(s, r0, r1, scratch, y);
        for (int64_t i = 0; i < n; ++i) {
            if (same_value(y[i], w[i])) continue;
            std::lock_guard<std::mutex> lock(m);
            if (bad < 0 || r0 * s.in + i < bad) {
                bad = r0 * s.in + i;
                bad_want = w[i];
                bad_got = y[i];
            }
            break;
        }
    });
    if (bad >= 0)
        throw UserError("layer " + layer + ": the " + algo + " codes do not reproduce the quantized weight at element " +
                        std::to_string(bad) + " (" + std::to_string(bad_want) + " vs " + std::to_string(bad_got) + ")");
}

std::vector<uint8_t> float_bytes(const float* v, size_t n) {
    std::vector<uint8_t> b(n * sizeof(float));
    if (n) std::memcpy(b.data(), v, b.size());
    return b;
}

const ExportTensor& find_tensor(const std::vector<ExportTensor>& ts, const std::string& name) {
    for (const ExportTensor& t : ts)
        if (t.name == name) return t;
    throw UserError("missing tensor '" + name + "'");
}

const float* floats(const ExportTensor& t) { return reinterpret_cast<const float*>(t.bytes.data()); }

}  // namespace

std::vector<ExportTensor> pack_hf_layer(LayerQuantizer& l, const HfLayerFormat& f) {
    const std::string p = l.name() + ".";
    const std::vector<int64_t> shape = weight_matrix_shape(l.layer());
    const int64_t out = shape[0], in = shape[1];
    const std::string& a = f.quant_algo;
    StoredWeight s;
    s.layout = layout_of(f, l.name());
    s.out = out;
    s.in = in;
    ExportTensor weight{p + "weight", D::U8, {}, {}}, scale{p + "weight_scale", D::F32, {}, {}};
    std::vector<ExportTensor> t;
    if (s.layout == Layout::Nvfp4) {
        // Codes and scales from the weight the quantizer reads (as LayerQuantizer::encode_weight),
        // encoded and packed tile by tile.
        const at::Tensor w = l.layer().weight.detach().reshape(shape).to(at::kCPU, at::kFloat).contiguous();
        const float* wv = w.data_ptr<float>();
        s.group = kernels::kNvfp4Block;
        s.global_scale = nvfp4_tensor_global_scale(wv, out * in, l.weight_spec());
        weight.shape = {out, s.packed_cols()};
        weight.bytes.resize(static_cast<size_t>(out * s.packed_cols()));
        scale = {p + "weight_scale", D::F8_E4M3, {out, in / 16}, std::vector<uint8_t>(static_cast<size_t>(out * s.blocks_per_row()))};
        s.weight = weight.bytes.data();
        s.raw_scales = scale.bytes.data();
        uint8_t* block_scales = scale.bytes.data();
        for_each_tile(out, tile_rows(in, 1), [&](int64_t r0, int64_t r1, TileScratch& scratch) {
            const int64_t rows = r1 - r0;
            scratch.codes.resize(static_cast<size_t>(rows * in));
            kernels::nvfp4_encode(wv + r0 * in, kernels::RowBlocks{rows, in, s.group}, s.global_scale, scratch.codes.data(),
                                  block_scales + r0 * s.blocks_per_row());
            kernels::pack_nibbles(scratch.codes.data(), rows, in, kernels::NibbleOrder::LowFirst,
                                  weight.bytes.data() + r0 * s.packed_cols());
        });
    } else {
        // Whole-tensor encoding from the weight the quantizer reads (GPTQ's pinned result keeps
        // those scales).
        EncodedTensor e = l.encode_weight();
        const QuantSpec& spec = l.weight_spec();
        if (s.layout == Layout::Fp8) {
            s.group = 1;
            weight = {p + "weight", D::F8_E4M3, {out, in}, std::move(e.codes.bytes)};
            scale = {p + "weight_scale", D::F32, {}, std::move(e.scales.bytes)};
        } else {
            NdArray packed = pack_encoded(e, shape, spec);
            weight = {p + "weight", D::U8, packed.shape, std::move(packed.bytes)};
            if (s.layout == Layout::Int4Awq) {
                s.group = f.group_size;
                scale = {p + "weight_scale", D::F32, e.scales.shape, std::move(e.scales.bytes)};
            } else {
                s.group = 32;
                scale = {p + "weight_scale", D::U8, {out, in / 32}, std::move(e.raw_scales)};
            }
        }
        s.weight = weight.bytes.data();
        s.raw_scales = scale.bytes.data();
        s.scales = floats(scale);
    }
    // The export must reproduce the quantized forward's weight exactly (0 == -0 counts as equal).
    const at::Tensor q = l.quantized_weight().reshape(shape).to(at::kCPU, at::kFloat).contiguous();
    verify_and_repair(s, q.data_ptr<float>(), l.name(), a);
    t.push_back(std::move(weight));
    t.push_back(std::move(scale));
    if (s.layout == Layout::Nvfp4) t.push_back({p + "weight_scale_2", D::F32, {}, float_bytes(&s.global_scale, 1)});
    if (f.input_quantized && !f.input_dynamic) {
        if (std::isnan(l.input_amax()))
            throw UserError("layer " + l.name() + ": the static input quantizer is not calibrated (no input amax to export)");
        const float is = input_scale_for_amax(f, l.input_amax());
        t.push_back({p + "input_scale", D::F32, {}, float_bytes(&is, 1)});
    }
    if (l.pre_quant_scale().defined()) {
        const at::Tensor pqs = l.pre_quant_scale().to(at::kCPU, at::kFloat).contiguous();
        t.push_back({p + "pre_quant_scale", D::F32, {in}, float_bytes(pqs.data_ptr<float>(), static_cast<size_t>(in))});
    }
    return t;
}

std::vector<float> dequantize_hf_layer(const std::string& layer, const HfLayerFormat& f, int64_t out, int64_t in,
                                       const std::vector<ExportTensor>& tensors) {
    const std::string p = layer + ".";
    const ExportTensor& w = find_tensor(tensors, p + "weight");
    const ExportTensor& ws = find_tensor(tensors, p + "weight_scale");
    resolve_spec(f.weight, {out, in});  // the layer's shape must suit the format (UserError otherwise)
    StoredWeight s;
    s.layout = layout_of(f, layer);
    s.out = out;
    s.in = in;
    // Decoding only reads the weight bytes.
    s.weight = const_cast<uint8_t*>(w.bytes.data());
    s.raw_scales = ws.bytes.data();
    s.scales = floats(ws);
    switch (s.layout) {
    case Layout::Nvfp4:
        s.group = kernels::kNvfp4Block;
        s.global_scale = floats(find_tensor(tensors, p + "weight_scale_2"))[0];
        break;
    case Layout::Mxfp4: s.group = 32; break;
    case Layout::Fp8: s.group = 1; break;
    case Layout::Int4Awq: s.group = f.group_size; break;
    }
    std::vector<float> y(static_cast<size_t>(out * in));
    for_each_tile(out, tile_rows(in, s.row_align()),
                  [&](int64_t r0, int64_t r1, TileScratch& scratch) { decode_rows(s, r0, r1, scratch, y.data() + r0 * in); });
    return y;
}

}  // namespace ql
