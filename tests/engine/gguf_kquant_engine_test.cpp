// SPDX-License-Identifier: GPL-3.0-or-later
// The GGUF K-quant and IQ4 formats through the engine: the catalog, the codec's shapes (codes,
// per-sub-block scales, packed super-blocks), importance (validation and effect), the GGUF tensor
// encoder and a GGUF file round trip, the straight-through estimator (QAT/QAD), a layer's weight
// importance and a PTQ run of the GGUF_Q4_K preset.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/from_blob.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "engine/core/errors.h"
#include "engine/core/format_catalog.h"
#include "engine/export/gguf_encode.h"
#include "engine/formats/format_codec.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/io/gguf_decode.h"
#include "engine/io/gguf_file.h"
#include "engine/io/gguf_kernel_types.h"
#include "engine/quant/quantized_model.h"
#include "engine/quant/recipe.h"
#include "engine/quant/straight_through.h"
#include "kernels/gguf_blocks.h"
#include "tests/engine/export_test_support.h"
#include "tests/engine/user_error_text.h"
#include "tests/engine/format_test_values.h"

namespace ql {
namespace {

// The UserError `expr` throws contains `part`.
#define EXPECT_USER_ERROR_CONTAINS(expr, part)                                          \
    do {                                                                                \
        const std::string message_ = test::user_error_text([&] { (void)(expr); });     \
        EXPECT_NE(message_.find(part), std::string::npos) << message_;                  \
    } while (false)

const char* const kKFormats[] = {"gguf_q2_k", "gguf_q3_k", "gguf_q4_k", "gguf_q5_k", "gguf_q6_k", "gguf_iq4_nl", "gguf_iq4_xs"};

using test::normal_values;
using test::spec_of;

TEST(GgufKQuantFormats, CatalogHasLlamaCppsLayouts) {
    struct Expect {
        const char* name;
        int64_t block;
        double bits;
        int element_bits;
        size_t grid;
    };
    for (const Expect& e : {Expect{"gguf_q2_k", 256, 2.625, 2, 4}, Expect{"gguf_q3_k", 256, 3.4375, 3, 8},
                            Expect{"gguf_q4_k", 256, 4.5, 4, 16}, Expect{"gguf_q5_k", 256, 5.5, 5, 32},
                            Expect{"gguf_q6_k", 256, 6.5625, 6, 64}, Expect{"gguf_iq4_nl", 32, 4.5, 4, 16},
                            Expect{"gguf_iq4_xs", 256, 4.25, 4, 16}}) {
        const FormatInfo& f = format_info(e.name);
        EXPECT_EQ(f.family, "gguf") << e.name;
        EXPECT_EQ(f.block_size, e.block) << e.name;
        EXPECT_DOUBLE_EQ(f.bits_per_element, e.bits) << e.name;
        EXPECT_EQ(f.element_bits, e.element_bits) << e.name;
        EXPECT_EQ(f.element_values.size(), e.grid) << e.name;
    }
    EXPECT_EQ(format_info("gguf_iq4_xs").element_values.front(), -127.0f);
    EXPECT_EQ(format_info("gguf_iq4_xs").element_values.back(), 113.0f);
    EXPECT_EQ(format_info("gguf_q6_k").element.code_offset, 32);
    EXPECT_EQ(format_info("gguf_q3_k").element.code_offset, 4);
}

TEST(GgufKQuantFormats, EncodeGivesCodesSubBlockScalesAndSuperBlockBytes) {
    const std::vector<int64_t> shape = {4, 512};
    const auto x = normal_values(4 * 512, 1);
    struct Expect {
        const char* name;
        std::vector<int64_t> scales, packed;
    };
    for (const Expect& e : {Expect{"gguf_q2_k", {4, 32, 2}, {4, 168}}, Expect{"gguf_q3_k", {4, 32}, {4, 220}},
                            Expect{"gguf_q4_k", {4, 16, 2}, {4, 288}}, Expect{"gguf_q5_k", {4, 16, 2}, {4, 352}},
                            Expect{"gguf_q6_k", {4, 32}, {4, 420}}, Expect{"gguf_iq4_nl", {4, 16}, {4, 288}},
                            Expect{"gguf_iq4_xs", {4, 16}, {4, 272}}}) {
        SCOPED_TRACE(e.name);
        const QuantSpec s = spec_of(e.name, shape);
        const EncodedTensor enc = encode_buffer(x.data(), shape, s);
        EXPECT_EQ(enc.codes.shape, shape);
        EXPECT_EQ(enc.codes.dtype, DType::UInt8);
        EXPECT_EQ(enc.scales.shape, e.scales);
        const NdArray p = pack_encoded(enc, shape, s);
        EXPECT_EQ(p.shape, e.packed);
        std::vector<float> y(x.size());
        fake_quantize_buffer(x.data(), y.data(), shape, s);
        EXPECT_EQ(decode_buffer(enc, shape, s), y);
        // The packed bytes are the GGUF tensor's bytes.
        const GgmlType t = *ggml_type_from_name(std::string(e.name).substr(5));
        std::vector<uint8_t> bytes(*ggml_tensor_bytes(t, {512, 4}));
        encode_gguf_tensor(x.data(), 4, 512, t, bytes.data());
        EXPECT_EQ(p.bytes, bytes);
    }
}

TEST(GgufKQuantFormats, RowsThatAreNotWholeSuperBlocksFakeQuantizeButDoNotEncode) {
    const std::vector<int64_t> shape = {3, 96};
    const auto x = normal_values(3 * 96, 2);
    const QuantSpec s = spec_of("gguf_q4_k", shape);
    std::vector<float> y(x.size());
    fake_quantize_buffer(x.data(), y.data(), shape, s);
    double err = 0;
    for (size_t i = 0; i < x.size(); ++i) err += (y[i] - x[i]) * (y[i] - x[i]);
    EXPECT_LT(err / x.size(), 0.05);  // 4.5-bit quantization of N(0, 1)
    EXPECT_GT(err, 0.0);
    EXPECT_USER_ERROR_CONTAINS(encode_buffer(x.data(), shape, s), "multiple of 256");
    EXPECT_THROW(encode_gguf_tensor(x.data(), 3, 96, GgmlType::Q4_K, nullptr), std::invalid_argument);
}

TEST(GgufKQuantFormats, ImportanceIsValidatedAndChangesTheSearch) {
    const std::vector<int64_t> shape = {8, 256};
    const auto x = normal_values(8 * 256, 3);
    std::vector<float> imp(256, 1.0f);
    for (int i = 0; i < 256; i += 3) imp[i] = 50.0f;
    for (const char* name : kKFormats) {
        SCOPED_TRACE(name);
        QuantSpec s = spec_of(name, shape);
        std::vector<float> plain(x.size()), weighted(x.size());
        fake_quantize_buffer(x.data(), plain.data(), shape, s);
        set_importance(s, imp, shape, "imatrix.dat");
        fake_quantize_buffer(x.data(), weighted.data(), shape, s);
        EXPECT_NE(plain, weighted);
        EXPECT_EQ(decode_buffer(encode_buffer(x.data(), shape, s), shape, s), weighted);
        // Heavier columns are reproduced at least as well on average.
        double heavy_plain = 0, heavy_weighted = 0;
        for (int64_t r = 0; r < 8; ++r)
            for (int64_t c = 0; c < 256; c += 3) {
                const size_t i = static_cast<size_t>(r * 256 + c);
                heavy_plain += (plain[i] - x[i]) * (plain[i] - x[i]);
                heavy_weighted += (weighted[i] - x[i]) * (weighted[i] - x[i]);
            }
        EXPECT_LT(heavy_weighted, heavy_plain);
    }
    QuantSpec s = spec_of("gguf_q4_k", shape);
    EXPECT_USER_ERROR_CONTAINS(set_importance(s, std::vector<float>(255, 1.0f), shape, "imatrix.dat"),
                           "imatrix.dat: 255 importance values for a last dimension of 256");
    std::vector<float> bad(256, 1.0f);
    bad[7] = std::nanf("");
    EXPECT_USER_ERROR_CONTAINS(set_importance(s, bad, shape, "imatrix.dat"), "importance value 7");
    bad[7] = -1.0f;
    EXPECT_USER_ERROR_CONTAINS(set_importance(s, bad, shape, "imatrix.dat"), "finite and >= 0");
    QuantSpec nv = spec_of("nvfp4", shape);
    EXPECT_USER_ERROR_CONTAINS(set_importance(nv, imp, shape, "imatrix.dat"), "GGUF formats only");
}

TEST(GgufKQuantFormats, GgufFileWithEveryKTypeRoundTrips) {
    const std::string dir = test::temp_dir("gguf-kquants");
    const std::string path = dir + "/k.gguf";
    const auto x = normal_values(3 * 512, 4, 0.02f);
    std::vector<float> imp(512);
    for (size_t i = 0; i < imp.size(); ++i) imp[i] = 0.5f + static_cast<float>(i % 7);
    const std::vector<GgmlType> types = {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                                         GgmlType::Q6_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS};
    std::vector<std::vector<uint8_t>> encoded;
    {
        GgufWriter w(path, false);
        for (size_t i = 0; i < types.size(); ++i) w.add_tensor("t" + std::to_string(i), {512, 3}, types[i]);
        for (size_t i = 0; i < types.size(); ++i) {
            encoded.emplace_back(*ggml_tensor_bytes(types[i], {512, 3}));
            encode_gguf_tensor(x.data(), 3, 512, types[i], encoded.back().data(), i % 2 ? imp.data() : nullptr);
            w.write_tensor_data(encoded.back().data(), encoded.back().size());
        }
        w.commit();
    }
    const GgufFile f = GgufFile::open(path);
    ASSERT_EQ(f.tensors().size(), types.size());
    for (size_t i = 0; i < types.size(); ++i) {
        SCOPED_TRACE(ggml_type_name(types[i]));
        const GgufTensorInfo& t = f.tensor("t" + std::to_string(i));
        EXPECT_EQ(t.type, types[i]);
        EXPECT_EQ(std::vector<uint8_t>(f.tensor_data(t), f.tensor_data(t) + t.size), encoded[i]);
        std::vector<float> dec(x.size());
        decode_gguf_tensor(encoded[i].data(), 3, 512, types[i], dec.data(), "t" + std::to_string(i));
        EXPECT_EQ(f.dequantize(t), dec);
        EXPECT_EQ(gguf_format_name(types[i]), "gguf_" + [&] {
            std::string n = ggml_type_name(types[i]);
            for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            return n;
        }());
    }
    std::filesystem::remove_all(dir);
}

TEST(GgufKQuantFormats, StraightThroughForwardIsTheFormatAndTheGradientTheIdentity) {
    for (const char* name : kKFormats) {
        SCOPED_TRACE(name);
        const auto v = normal_values(4 * 512, 5);
        const at::Tensor x = at::from_blob(const_cast<float*>(v.data()), {4, 512}, at::kFloat).clone().requires_grad_(true);
        const QuantSpec s = spec_of(name, {4, 512});
        const at::Tensor y = fake_quantize_ste(x, s);
        EXPECT_TRUE(at::equal(y.detach(), fake_quantize(x.detach(), s)));
        const at::Tensor w = at::randn({4, 512});
        (y * w).sum().backward();
        EXPECT_TRUE(at::equal(x.grad(), w));
        EXPECT_USER_ERROR_CONTAINS(fake_quantize_ste(x, s, SteOptions{true}), "clip_gradient is not available");
    }
}

TEST(GgufKQuantFormats, PresetQuantizesEveryLinearAndLayerImportanceRequantizes) {
    // The golden tiny Llama: rows of 64 and 96 (short super-blocks, padded as fake quantization pads).
    test::QuantizedTiny t = test::quantize_tiny(test::recipe("max", R"({"format": "gguf_q4_k"})"));
    LayerQuantizer& up = *t.q->find("model.layers.0.mlp.up_proj");  // weight [96, 64]
    const at::Tensor w = up.layer().weight.detach().contiguous();
    const at::Tensor plain = up.quantized_weight().clone();
    EXPECT_TRUE(at::equal(plain, fake_quantize(w, up.weight_spec())));
    EXPECT_GT((plain - w).abs().max().item<float>(), 0.0f);
    std::vector<float> imp(64, 1.0f);
    imp[3] = 1000.0f;
    up.set_weight_importance(imp);
    const at::Tensor weighted = up.quantized_weight();
    QuantSpec with = up.weight_spec();
    EXPECT_EQ(with.importance, imp);
    EXPECT_TRUE(at::equal(weighted, fake_quantize(w, with)));
    EXPECT_FALSE(at::equal(weighted, plain));
    // Column 3 is matched more closely than without importance.
    const float e_plain = (plain.select(1, 3) - w.select(1, 3)).abs().sum().item<float>();
    const float e_weighted = (weighted.select(1, 3) - w.select(1, 3)).abs().sum().item<float>();
    EXPECT_LT(e_weighted, e_plain);
    EXPECT_USER_ERROR_CONTAINS(up.set_weight_importance(std::vector<float>(63, 1.0f)), "63 importance values");
    up.set_weight_importance({});
    EXPECT_TRUE(at::equal(up.quantized_weight(), plain));
    // The presets load and name the format.
    EXPECT_EQ(settings_for(load_recipe("GGUF_Q4_K"), "a.weight_quantizer").options.format, "gguf_q4_k");
    EXPECT_EQ(settings_for(load_recipe("GGUF_Q6_K"), "a.weight_quantizer").options.format, "gguf_q6_k");
}

}  // namespace
}  // namespace ql
