// SPDX-License-Identifier: GPL-3.0-or-later
// llama.cpp's i-quants and ternary types through the engine: the catalog, the codec (codes that
// rebuild the values, packed blocks, the importance rule of ggml_quantize_requires_imatrix), the
// GGUF tensor encoder / decoder and a GGUF file round trip, and the Format Explorer's walkthrough.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "engine/api/block_walkthrough.h"
#include "engine/core/errors.h"
#include "engine/core/format_catalog.h"
#include "engine/export/gguf_encode.h"
#include "engine/formats/format_codec.h"
#include "engine/io/gguf_decode.h"
#include "engine/io/gguf_file.h"
#include "engine/io/gguf_kernel_types.h"
#include "kernels/gguf_blocks.h"
#include "tests/engine/export_test_support.h"
#include "tests/engine/user_error_text.h"
#include "tests/engine/format_test_values.h"

namespace ql {
namespace {

struct IFormat {
    const char* name;
    GgmlType type;
    int bytes;
    size_t levels;
    bool needs_importance;
};
const IFormat kFormats[] = {
    {"gguf_iq2_xxs", GgmlType::IQ2_XXS, 66, 6, true}, {"gguf_iq2_xs", GgmlType::IQ2_XS, 74, 6, true},
    {"gguf_iq2_s", GgmlType::IQ2_S, 82, 6, false},    {"gguf_iq3_xxs", GgmlType::IQ3_XXS, 98, 16, false},
    {"gguf_iq3_s", GgmlType::IQ3_S, 110, 16, false},  {"gguf_iq1_s", GgmlType::IQ1_S, 50, 6, true},
    {"gguf_iq1_m", GgmlType::IQ1_M, 56, 6, false},    {"gguf_tq1_0", GgmlType::TQ1_0, 54, 3, false},
    {"gguf_tq2_0", GgmlType::TQ2_0, 66, 3, false}};

std::vector<float> ramp_importance(int64_t n) {
    std::vector<float> w(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) w[static_cast<size_t>(i)] = 0.25f + static_cast<float>(i % 13);
    return w;
}

using test::normal_values;
using test::spec_of;

TEST(GgufIQuantFormats, CatalogListsEveryTypeWithLlamaCppsSizes) {
    for (const IFormat& k : kFormats) {
        SCOPED_TRACE(k.name);
        const FormatInfo& f = format_info(k.name);
        EXPECT_EQ(f.family, "gguf");
        EXPECT_EQ(f.block_size, 256);
        EXPECT_EQ(f.bits_per_element, k.bytes * 8.0 / 256);
        EXPECT_EQ(ggml_type_size(k.type), k.bytes);
        EXPECT_EQ(ggml_block_size(k.type), 256);
        EXPECT_EQ(f.element_values.size(), k.levels);
        EXPECT_TRUE(f.element.is_codebook);
        EXPECT_GE(1 << f.element_bits, static_cast<int>(k.levels));
        EXPECT_EQ(gguf_format_name(k.type), k.name);
        EXPECT_EQ(*ggml_type_from_name(std::string(k.name).substr(5)), k.type);
        bool mentions = false;
        for (const auto& n : f.notes) mentions = mentions || n.find("ggml_quantize_requires_imatrix") != std::string::npos;
        EXPECT_EQ(mentions, k.needs_importance);
    }
    EXPECT_EQ(ggml_type_name(*ggml_type_from_id(29)), std::string("IQ1_M"));
    EXPECT_EQ(ggml_type_name(*ggml_type_from_id(35)), std::string("TQ2_0"));
}

TEST(GgufIQuantFormats, CodesAndScalesRebuildTheFakeQuantizedValues) {
    const std::vector<int64_t> shape = {3, 512};
    const auto x = normal_values(3 * 512, 11, 0.02f);
    for (const IFormat& k : kFormats) {
        SCOPED_TRACE(k.name);
        QuantSpec s = spec_of(k.name, shape);
        set_importance(s, ramp_importance(512), shape, "imp.npy");
        std::vector<float> y(x.size());
        fake_quantize_buffer(x.data(), y.data(), shape, s);
        const EncodedTensor e = encode_buffer(x.data(), shape, s);
        const int64_t sub = kernels::gguf_sub_block(*gguf_kernel_type(k.type));
        ASSERT_EQ(e.scales.shape, (std::vector<int64_t>{3, 512 / sub}));
        const float* sc = e.scales.as<float>();
        const uint8_t* codes = e.codes.as<uint8_t>();
        const FormatInfo& f = format_info(k.name);
        for (int64_t i = 0; i < 3 * 512; ++i) {
            ASSERT_LT(codes[i], f.element_values.size());
            ASSERT_EQ(sc[i / sub] * f.element_values[codes[i]], y[static_cast<size_t>(i)]) << i;
        }
        const NdArray packed = pack_encoded(e, shape, s);
        EXPECT_EQ(packed.shape, (std::vector<int64_t>{3, 2 * k.bytes}));
        std::vector<uint8_t> direct(static_cast<size_t>(6 * k.bytes));
        encode_gguf_tensor(x.data(), 3, 512, k.type, direct.data(), s.importance.data());
        EXPECT_EQ(packed.bytes, direct);
        std::vector<float> dec(x.size());
        decode_gguf_tensor(direct.data(), 3, 512, k.type, dec.data(), "t");
        EXPECT_EQ(dec, y);
    }
}

TEST(GgufIQuantFormats, TypesGgmlQuantizesOnlyWithImportanceRefuseWithoutIt) {
    const std::vector<int64_t> shape = {2, 256};
    const auto x = normal_values(512, 12);
    std::vector<float> y(x.size());
    for (const IFormat& k : kFormats) {
        SCOPED_TRACE(k.name);
        const QuantSpec s = spec_of(k.name, shape);
        std::vector<uint8_t> bytes(static_cast<size_t>(2 * k.bytes));
        if (k.needs_importance) {
            const std::string title = std::string(k.name).substr(5);
            EXPECT_NE(test::user_error_text([&] { fake_quantize_buffer(x.data(), y.data(), shape, s); }).find("needs importance weights"),
                      std::string::npos);
            EXPECT_NE(test::user_error_text([&] { (void)encode_buffer(x.data(), shape, s); }).find("ggml_quantize_requires_imatrix"),
                      std::string::npos);
            EXPECT_NE(test::user_error_text([&] { encode_gguf_tensor(x.data(), 2, 256, k.type, bytes.data()); }).find("needs an importance matrix"),
                      std::string::npos);
        } else {
            fake_quantize_buffer(x.data(), y.data(), shape, s);
            encode_gguf_tensor(x.data(), 2, 256, k.type, bytes.data());
        }
    }
    // The ternary types ignore importance, as ggml does.
    std::vector<uint8_t> plain(2 * 54), weighted(2 * 54);
    encode_gguf_tensor(x.data(), 2, 256, GgmlType::TQ1_0, plain.data());
    encode_gguf_tensor(x.data(), 2, 256, GgmlType::TQ1_0, weighted.data(), ramp_importance(256).data());
    EXPECT_EQ(plain, weighted);
}

TEST(GgufIQuantFormats, GgufFileWithEveryTypeRoundTrips) {
    const std::string dir = test::temp_dir("gguf-iquants");
    const std::string path = dir + "/i.gguf";
    const auto x = normal_values(2 * 512, 13, 0.02f);
    const auto imp = ramp_importance(512);
    std::vector<std::vector<uint8_t>> encoded;
    {
        GgufWriter w(path, false);
        for (size_t i = 0; i < std::size(kFormats); ++i) w.add_tensor("t" + std::to_string(i), {512, 2}, kFormats[i].type);
        for (const IFormat& k : kFormats) {
            encoded.emplace_back(*ggml_tensor_bytes(k.type, {512, 2}));
            encode_gguf_tensor(x.data(), 2, 512, k.type, encoded.back().data(), imp.data());
            w.write_tensor_data(encoded.back().data(), encoded.back().size());
        }
        w.commit();
    }
    const GgufFile f = GgufFile::open(path);
    ASSERT_EQ(f.tensors().size(), std::size(kFormats));
    for (size_t i = 0; i < std::size(kFormats); ++i) {
        SCOPED_TRACE(kFormats[i].name);
        const GgufTensorInfo& t = f.tensor("t" + std::to_string(i));
        EXPECT_EQ(t.type, kFormats[i].type);
        EXPECT_TRUE(gguf_type_decodable(t.type));
        EXPECT_EQ(std::vector<uint8_t>(f.tensor_data(t), f.tensor_data(t) + t.size), encoded[i]);
        std::vector<float> dec(x.size());
        decode_gguf_tensor(encoded[i].data(), 2, 512, kFormats[i].type, dec.data(), "t");
        EXPECT_EQ(f.dequantize(t), dec);
        // The block scales the reader reports are the sub-block scales the decoder multiplies by.
        const auto scales = gguf_block_scales(encoded[i].data(), t.type, 1024);
        EXPECT_EQ(scales.size(), static_cast<size_t>(1024 / kernels::gguf_sub_block(*gguf_kernel_type(t.type))));
    }
    std::filesystem::remove_all(dir);
}

TEST(GgufIQuantFormats, WalkthroughExplainsOneSuperBlockWithTheKernelsNumbers) {
    const auto x = normal_values(256, 14, 0.05f);
    for (const IFormat& k : kFormats) {
        SCOPED_TRACE(k.name);
        QuantOptions o;
        o.format = k.name;
        const BlockWalkthrough w = explain_block(x, o, std::nanf(""), 3);
        ASSERT_TRUE(w.super_block.present);
        const int64_t sub = kernels::gguf_sub_block(*gguf_kernel_type(k.type));
        EXPECT_EQ(w.super_block.sub_blocks.size(), static_cast<size_t>(256 / sub));
        EXPECT_TRUE(w.super_block.search.empty());
        // What fake quantization gives (with uniform importance for the types that need one).
        QuantSpec s = spec_of(k.name, {256});
        if (k.needs_importance) set_importance(s, std::vector<float>(256, 1.0f), {256}, "uniform");
        std::vector<float> y(256);
        fake_quantize_buffer(x.data(), y.data(), {256}, s);
        EXPECT_EQ(w.output, y);
        bool says = false;
        for (const auto& st : w.steps) says = says || st.label == "Importance";
        EXPECT_EQ(says, k.needs_importance);
        const WalkthroughSubBlock& sel = w.super_block.sub_blocks[static_cast<size_t>(w.super_block.search_sub_block)];
        EXPECT_EQ(w.grid.size(), format_info(k.name).element_values.size());
        EXPECT_EQ(w.grid.back(), static_cast<float>(sel.scale * format_info(k.name).element_values.back()));
    }
}

}  // namespace
}  // namespace ql
