// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <ATen/ops/randn.h>
#include <ATen/ops/zeros.h>

#include <cmath>
#include <random>

#include "engine/core/errors.h"
#include "engine/api/fake_quant_api.h"
#include "engine/core/format_catalog.h"
#include "engine/formats/format_codec.h"
#include "engine/formats/tensor_quantize.h"

namespace ql {
namespace {

std::vector<float> random_values(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = d(rng);
    return v;
}

QuantOptions opts(const std::string& format) {
    QuantOptions o;
    o.format = format;
    return o;
}

TEST(FormatCatalog, NamesAreTheCliContract) {
    std::vector<std::string> names;
    for (const auto& f : all_formats()) names.push_back(f.name);
    const std::vector<std::string> contract = {"fp8_e4m3", "fp8_e5m2", "nvfp4", "nvfp4_e5m3", "mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2",
                                               "mxfp6_e2m3", "mxfp4", "mxint8", "int8", "int4", "int3", "int2", "nf4",
                                               "gguf_q8_0", "gguf_q4_0", "gguf_q4_1", "gguf_q5_0", "gguf_mxfp4"};
    for (const auto& c : contract) EXPECT_NE(std::find(names.begin(), names.end(), c), names.end()) << c;
    EXPECT_THROW(format_info("nvfp5"), UserError);
}

TEST(FormatCatalog, ElementValuesAreTheRepresentableGrid) {
    EXPECT_EQ(format_info("fp8_e4m3").element_values.size(), 253u);  // 256 codes - 2 NaN - duplicate zero
    EXPECT_EQ(format_info("fp8_e5m2").element_values.size(), 247u);  // 256 - 6 NaN - 2 Inf - duplicate zero
    EXPECT_EQ(format_info("nvfp4").element_values.size(), 15u);
    EXPECT_EQ(format_info("mxfp6_e3m2").element_values.size(), 63u);
    EXPECT_EQ(format_info("nf4").element_values.size(), 16u);
    EXPECT_EQ(format_info("int4").element_values.front(), -7.0f);
    EXPECT_EQ(format_info("nvfp4").element_values.back(), 6.0f);
    EXPECT_EQ(format_info("fp8_e4m3").element_values.back(), 448.0f);
    EXPECT_EQ(format_info("nvfp4").element.exponent_bits, 2);
    EXPECT_EQ(format_info("mxfp6_e2m3").element.mantissa_bits, 3);
}

TEST(FormatCodec, OptionsThatDoNotApplyAreRejectedWithTheOptionNamed) {
    auto expect_error = [](QuantOptions o, std::vector<int64_t> shape, const std::string& part) {
        try {
            resolve_spec(o, shape);
            ADD_FAILURE() << "accepted: " << part;
        } catch (const UserError& e) {
            EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
        }
    };
    QuantOptions o = opts("int4");
    o.granularity = "group";
    o.group_size = 48;
    expect_error(o, {4, 32}, "group size 48 is longer than the last dimension (32)");
    o = opts("nvfp4");
    o.granularity = "channel";
    expect_error(o, {4, 64}, "--granularity does not apply");
    o = opts("nvfp4");
    o.group_size = 32;
    expect_error(o, {4, 64}, "--group-size 32 does not apply");
    o = opts("mxfp4");
    o.asymmetric = true;
    expect_error(o, {4, 64}, "--asym");
    o = opts("int8");
    o.double_quant = true;
    expect_error(o, {4, 64}, "--double-quant");
    o = opts("int8");
    o.granularity = "channel";
    o.axis = 2;
    expect_error(o, {4, 64}, "axis 2 is out of range");
    o = opts("int8");
    o.granularity = "diagonal";
    expect_error(o, {4, 64}, "unknown granularity");
    o = opts("int8");
    o.mx_scale = "rceil";
    expect_error(o, {4, 64}, "--mx-scale");
    o = opts("int8");
    o.group_size = 32;
    expect_error(o, {4, 64}, "--group-size needs --granularity group");
}

// For every format: decode(encode(x)) == fake_quantize(x), packing has the documented shape,
// and the tensor API gives the same values for non-contiguous inputs.
TEST(FormatCodec, DecodeOfEncodeEqualsFakeQuantForEveryFormat) {
    for (const auto& f : all_formats()) {
        if (f.name == "fp32") continue;
        const int64_t cols = f.block_size == 256 ? 256 : 128;  // the K-quants' super-blocks
        const std::vector<int64_t> shape = {8, cols};
        const auto x = random_values(static_cast<size_t>(8 * cols), 3);
        for (int variant = 0; variant < 3; ++variant) {
            QuantOptions o = opts(f.name);
            if (variant == 1 && f.family == "int") o.asymmetric = true;
            if (variant == 2 && f.family == "int") o.granularity = "group";
            if (variant == 1 && f.family == "fp8") o.granularity = "channel";
            if (variant == 1 && f.family == "nf4") o.double_quant = true;
            if (variant == 1 && f.family == "mx") o.mx_scale = "rceil";
            SCOPED_TRACE(f.name + " variant " + std::to_string(variant));
            QuantSpec s = resolve_spec(o, shape);
            if (f.requires_importance) set_importance(s, std::vector<float>(static_cast<size_t>(cols), 1.0f), shape, "uniform");
            std::vector<float> y(x.size());
            fake_quantize_buffer(x.data(), y.data(), shape, s);
            const EncodedTensor e = encode_buffer(x.data(), shape, s);
            const std::vector<float> d = decode_buffer(e, shape, s);
            ASSERT_EQ(d, y);
            EXPECT_EQ(e.codes.shape, shape);
            const NdArray p = pack_encoded(e, shape, s);
            EXPECT_GT(p.numel(), 0);
            EXPECT_LE(static_cast<double>(p.numel()), 8 * cols * f.element_bits / 8.0 + 1e-9 + (f.family == "gguf" ? 8 * cols : 0));
        }
    }
}

TEST(FormatCodec, PackedLayoutsHaveTheExportShapes) {
    const std::vector<int64_t> shape = {8, 64};
    const auto x = random_values(512, 4);
    auto packed_shape = [&](const std::string& fmt) {
        const QuantSpec s = resolve_spec(opts(fmt), shape);
        return pack_encoded(encode_buffer(x.data(), shape, s), shape, s).shape;
    };
    EXPECT_EQ(packed_shape("nvfp4"), (std::vector<int64_t>{8, 32}));
    EXPECT_EQ(packed_shape("mxfp4"), (std::vector<int64_t>{8, 32}));
    EXPECT_EQ(packed_shape("mxfp6_e2m3"), (std::vector<int64_t>{8, 48}));
    EXPECT_EQ(packed_shape("int4"), (std::vector<int64_t>{4, 64}));  // AWQ: along the output dimension
    EXPECT_EQ(packed_shape("int2"), (std::vector<int64_t>{2, 64}));
    EXPECT_EQ(packed_shape("int3"), (std::vector<int64_t>{3, 64}));
    EXPECT_EQ(packed_shape("nf4"), (std::vector<int64_t>{256}));
    EXPECT_EQ(packed_shape("gguf_q4_0"), (std::vector<int64_t>{8, 36}));
    EXPECT_EQ(packed_shape("gguf_q8_0"), (std::vector<int64_t>{8, 68}));
    EXPECT_EQ(packed_shape("fp8_e4m3"), (std::vector<int64_t>{8, 64}));
    // Export layouts that need divisibility say so.
    const std::vector<int64_t> odd = {3, 40};
    const auto y = random_values(120, 5);
    QuantSpec s = resolve_spec(opts("gguf_q4_0"), odd);
    EXPECT_THROW(encode_buffer(y.data(), odd, s), UserError);
    s = resolve_spec(opts("int4"), odd);
    EXPECT_THROW(pack_encoded(encode_buffer(y.data(), odd, s), odd, s), UserError);
}

TEST(TensorQuantize, NonContiguousAndOtherDtypesMatchContiguousFloat) {
    const at::Tensor base = at::randn({64, 48});
    const at::Tensor t = base.t();  // [48, 64], non-contiguous
    ASSERT_FALSE(t.is_contiguous());
    for (const char* fmt : {"nvfp4", "mxfp4", "int4", "nf4", "fp8_e4m3", "gguf_q4_0"}) {
        const at::Tensor a = fake_quantize(t, opts(fmt));
        const at::Tensor b = fake_quantize(t.contiguous(), opts(fmt));
        EXPECT_TRUE(a.equal(b)) << fmt;
        EXPECT_EQ(a.sizes(), t.sizes());
        const at::Tensor h = fake_quantize(t.to(at::kDouble), opts(fmt));
        EXPECT_TRUE(h.equal(b)) << fmt;
    }
}

TEST(TensorQuantize, EmptyTensorsPassThroughAndReusedOutputIsUsed) {
    const at::Tensor e = at::zeros({0, 16});
    EXPECT_EQ(fake_quantize(e, opts("nvfp4")).numel(), 0);
    const at::Tensor x = at::randn({4, 32});
    const QuantSpec s = resolve_spec(opts("mxfp4"), shape_of(x));
    at::Tensor out = at::zeros({4, 32});
    const void* before = out.data_ptr();
    fake_quantize_into(x, out, s);
    EXPECT_EQ(out.data_ptr(), before);
    EXPECT_TRUE(out.equal(fake_quantize(x, s)));
}

TEST(FakeQuantApi, ReportsErrorAndNonFiniteInputs) {
    FakeQuantRequest r;
    r.input = NdArray::from_floats({1, 2, 3, std::nanf(""), INFINITY, 0.5f, -2, 8}, {8});
    r.options.format = "int8";
    const auto out = run_fake_quant(r);
    EXPECT_EQ(out.nonfinite_inputs, 2);
    EXPECT_GT(out.sqnr_db, 30.0);
    EXPECT_TRUE(std::isnan(out.values.as<float>()[3]));
    r.options.format = "fp32";
    EXPECT_TRUE(std::isinf(run_fake_quant(r).sqnr_db));
    r.input = NdArray::zeros(DType::Int32, {3});
    EXPECT_THROW(run_fake_quant(r), UserError);
}

}  // namespace
}  // namespace ql
