// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/safetensors_tensors.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>

#include "engine/core/errors.h"
#include "tests/temp_folder.h"

namespace ql {
namespace {

TEST(SafetensorsTensors, RoundTripsEveryLibTorchDtypeZeroCopy) {
    const std::string dir = test::temp_dir("st-tensors");
    at::manual_seed(1);
    const std::vector<std::pair<std::string, at::Tensor>> tensors = {
        {"f32", at::randn({3, 5})},
        {"f16", at::randn({4, 2}).to(at::kHalf)},
        {"bf16", at::randn({7}).to(at::kBFloat16)},
        {"f64", at::randn({2, 2}, at::kDouble)},
        {"i8", at::randint(-128, 127, {6}, at::kChar)},
        {"u8", at::randint(0, 255, {2, 3}, at::kByte)},
        {"i16", at::randint(-1000, 1000, {3}, at::kShort)},
        {"i32", at::randint(-100000, 100000, {3, 1}, at::kInt)},
        {"i64", at::randint(-100000, 100000, {5}, at::kLong)},
        {"bool", at::randint(0, 2, {4}, at::kLong).to(at::kBool)},
        {"c64", at::randn({3}, at::kComplexFloat)},
        {"scalar", at::scalar_tensor(3.25)},
        {"empty", at::empty({0, 4})},
        {"strided", at::randn({4, 6}).t()},  // non-contiguous: written contiguous
    };
    write_safetensors(dir + "/t.safetensors", tensors, {{"format", "pt"}});
    const SafetensorsFile f = SafetensorsFile::open(dir + "/t.safetensors");
    for (const auto& [name, t] : tensors) {
        const at::Tensor back = safetensors_tensor(f, name);
        EXPECT_EQ(back.scalar_type(), t.scalar_type()) << name;
        EXPECT_EQ(back.sizes(), t.sizes()) << name;
        EXPECT_TRUE(at::equal(back, t)) << name;
        if (t.numel() > 0) EXPECT_EQ(back.data_ptr(), static_cast<const void*>(f.bytes(name).data)) << name << " was copied";
        const at::Tensor owned = load_tensor(f, name);
        EXPECT_TRUE(at::equal(owned, t)) << name;
        EXPECT_EQ(owned.scalar_type(), t.scalar_type()) << name;
        if (t.numel() > 0) EXPECT_NE(owned.data_ptr(), back.data_ptr()) << name;
    }
}

TEST(SafetensorsTensors, TensorsKeepTheMappingAlive) {
    const std::string dir = test::temp_dir("st-tensors");
    const at::Tensor w = at::arange(1000, at::kFloat);
    write_safetensors(dir + "/w.safetensors", {{"w", w}});
    at::Tensor view;
    {
        const SafetensorsCheckpoint c = SafetensorsCheckpoint::open(dir + "/w.safetensors");
        view = safetensors_tensor(c, "w");
    }
    unlink((dir + "/w.safetensors").c_str());
    EXPECT_TRUE(at::equal(view, w));
    // The documented way to modify: clone first.
    at::Tensor mine = view.clone();
    mine.add_(1);
    EXPECT_EQ(view[0].item<float>(), 0.0f);
}

TEST(SafetensorsTensors, LoadFloat32ConvertsEveryFloatType) {
    const at::Tensor x = at::randn({64});
    const at::Tensor half = x.to(at::kHalf), bf = x.to(at::kBFloat16), dbl = x.to(at::kDouble);
    std::vector<uint8_t> e4m3 = {0x00, 0x38, 0xB8, 0x7E, 0x7F, 0x01}, e5m2 = {0x3C, 0x7B, 0x7C, 0xFC, 0x7D, 0x01},
                         e8m0 = {127, 128, 0, 254, 255, 100};
    const std::string s = serialize_safetensors({safetensors_entry("h", half), safetensors_entry("b", bf),
                                                 safetensors_entry("d", dbl), safetensors_entry("f", x),
                                                 {"e4m3", SafetensorsDtype::F8_E4M3, {2, 3}, e4m3.data(), 6},
                                                 {"e5m2", SafetensorsDtype::F8_E5M2, {6}, e5m2.data(), 6},
                                                 {"e8m0", SafetensorsDtype::F8_E8M0, {6}, e8m0.data(), 6},
                                                 {"i", SafetensorsDtype::U8, {6}, e8m0.data(), 6}});
    const SafetensorsFile f = SafetensorsFile::parse(s, "mem");
    EXPECT_TRUE(at::equal(load_float32(f, "h"), half.to(at::kFloat)));
    EXPECT_TRUE(at::equal(load_float32(f, "b"), bf.to(at::kFloat)));
    EXPECT_TRUE(at::equal(load_float32(f, "d"), dbl.to(at::kFloat)));
    const at::Tensor own = load_float32(f, "f");
    EXPECT_TRUE(at::equal(own, x));
    EXPECT_NE(own.data_ptr(), static_cast<const void*>(f.bytes("f").data));  // a copy, safe to modify

    const at::Tensor a = load_float32(f, "e4m3");
    EXPECT_EQ(a.sizes(), at::IntArrayRef({2, 3}));
    const float* p = a.data_ptr<float>();
    EXPECT_EQ(p[0], 0.0f);
    EXPECT_EQ(p[1], 1.0f);
    EXPECT_EQ(p[2], -1.0f);
    EXPECT_EQ(p[3], 448.0f);
    EXPECT_TRUE(std::isnan(p[4]));
    EXPECT_EQ(p[5], std::ldexp(1.0f, -9));  // smallest subnormal
    const at::Tensor b = load_float32(f, "e5m2");
    const float* q = b.data_ptr<float>();
    EXPECT_EQ(q[0], 1.0f);
    EXPECT_EQ(q[1], 57344.0f);
    EXPECT_EQ(q[2], INFINITY);
    EXPECT_EQ(q[3], -INFINITY);
    EXPECT_TRUE(std::isnan(q[4]));
    EXPECT_EQ(q[5], std::ldexp(1.0f, -16));
    const at::Tensor c = load_float32(f, "e8m0");
    const float* r = c.data_ptr<float>();
    EXPECT_EQ(r[0], 1.0f);
    EXPECT_EQ(r[1], 2.0f);
    EXPECT_EQ(r[2], std::ldexp(1.0f, -127));
    EXPECT_EQ(r[3], std::ldexp(1.0f, 127));
    EXPECT_TRUE(std::isnan(r[4]));
    try {
        load_float32(f, "i");
        FAIL();
    } catch (const UserError& e) {
        EXPECT_STREQ(e.what(), "mem: tensor \"i\": dtype U8 cannot be loaded as float32");
    }
}

TEST(SafetensorsTensors, RequireFiniteNamesTheTensorAndElement) {
    at::Tensor x = at::zeros({10});
    x[7] = NAN;
    const SafetensorsFile f = SafetensorsFile::parse(serialize_safetensors({safetensors_entry("w", x)}), "m.safetensors");
    EXPECT_NO_THROW(load_float32(f, "w"));
    try {
        load_float32(f, "w", true);
        FAIL();
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("m.safetensors: tensor \"w\": element 7 is nan"), std::string::npos) << e.what();
    }
}

TEST(SafetensorsTensors, CodesWithoutATorchTypeAreReadRaw) {
    std::vector<uint8_t> codes = {1, 2, 3, 4, 5, 6};
    std::vector<uint8_t> f4 = {0x21, 0x43};
    const SafetensorsFile f = SafetensorsFile::parse(
        serialize_safetensors({{"s", SafetensorsDtype::F8_E4M3, {2, 3}, codes.data(), 6},
                               {"p", SafetensorsDtype::F4, {4}, f4.data(), 2},
                               {"u", SafetensorsDtype::U16, {3}, codes.data(), 6}}),
        "mem");
    EXPECT_THROW(safetensors_tensor(f, "s"), UserError);
    EXPECT_THROW(safetensors_tensor(f, "u"), UserError);
    const at::Tensor raw = safetensors_raw_tensor(f, "s");
    EXPECT_EQ(raw.scalar_type(), at::kByte);
    EXPECT_EQ(raw.sizes(), at::IntArrayRef({2, 3}));
    EXPECT_EQ(raw[1][2].item<int>(), 6);
    EXPECT_EQ(safetensors_raw_tensor(f, "p").sizes(), at::IntArrayRef({2}));
    EXPECT_EQ(safetensors_raw_tensor(f, "u").sizes(), at::IntArrayRef({6}));
    // Writing codes as their safetensors dtype.
    const at::Tensor c = at::tensor(std::vector<uint8_t>{0x38, 0x40}, at::kByte);
    const SafetensorsWriteEntry e = safetensors_entry("scale", c, SafetensorsDtype::F8_E4M3);
    EXPECT_EQ(e.dtype, SafetensorsDtype::F8_E4M3);
    EXPECT_THROW(safetensors_entry("x", at::zeros({2}), SafetensorsDtype::F8_E4M3), UserError);  // 4-byte elements
}

TEST(SafetensorsTensors, UnalignedTensorsAreCopiedAndBadBoolsRejected) {
    // Another writer's layout: an F32 tensor at data offset 1.
    std::string header = "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                         "\"f\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[1,9]},"
                         "\"b\":{\"dtype\":\"BOOL\",\"shape\":[2],\"data_offsets\":[9,11]}}";
    header.append((8 - header.size() % 8) % 8, ' ');
    std::string file(8, '\0');
    file[0] = static_cast<char>(header.size());
    file += header;
    file += '\x05';
    const float v[2] = {1.5f, -2.0f};
    file.append(reinterpret_cast<const char*>(v), 8);
    file += std::string("\x01\x02", 2);
    const SafetensorsFile f = SafetensorsFile::parse(file, "odd");
    const at::Tensor t = safetensors_tensor(f, "f");
    EXPECT_EQ(t[0].item<float>(), 1.5f);
    EXPECT_EQ(t[1].item<float>(), -2.0f);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 4, 0u);
    try {
        safetensors_tensor(f, "b");
        FAIL();
    } catch (const UserError& e) {
        EXPECT_STREQ(e.what(), "odd: tensor \"b\": BOOL element 1 is byte 2, not 0 or 1");
    }
    EXPECT_THROW(load_tensor(f, "b"), UserError);
    // load_float32 reads unaligned data too.
    EXPECT_TRUE(at::equal(load_float32(f, "f"), t));
}

}  // namespace
}  // namespace ql
