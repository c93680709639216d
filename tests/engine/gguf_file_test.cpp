// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF v3 writer and reader (engine/io/gguf_file.h): round trips of every metadata type and of
// tensors, the exact header bytes, byte layouts of each tensor type for known inputs, and files
// that lie (bad magic, truncation, offsets, types), plus the crash-safe writing rules.
#include "engine/io/gguf_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/core/errors.h"
#include "engine/export/gguf_encode.h"
#include "engine/io/whole_file.h"
#include "kernels/gguf_blocks.h"
#include "kernels/half_precision.h"
#include "tests/engine/user_error_text.h"
#include "tests/temp_folder.h"

namespace ql {
namespace {

namespace fs = std::filesystem;

GgufMetadata every_type() {
    GgufMetadata md;
    md.emplace_back("u8", GgufValue::u8(200));
    md.emplace_back("i8", GgufValue::i8(-100));
    md.emplace_back("u16", GgufValue::u16(60000));
    md.emplace_back("i16", GgufValue::i16(-30000));
    md.emplace_back("u32", GgufValue::u32(4000000000u));
    md.emplace_back("i32", GgufValue::i32(-2000000000));
    md.emplace_back("f32", GgufValue::f32(0.1f));
    md.emplace_back("bool", GgufValue::boolean(true));
    md.emplace_back("string", GgufValue::string("h\xC3\xA9llo"));
    md.emplace_back("u64", GgufValue::u64(UINT64_MAX));
    md.emplace_back("i64", GgufValue::i64(INT64_MIN));
    md.emplace_back("f64", GgufValue::f64(-1e300));
    md.emplace_back("strings", GgufValue::string_array({"a", "", "b c"}));
    md.emplace_back("i32s", GgufValue::i32_array({1, -2, 3}));
    md.emplace_back("f32s", GgufValue::f32_array({0.5f, -0.25f}));
    md.emplace_back("u16s", GgufValue::raw_array(GgufValueType::UINT16, 2, {1, 0, 0, 1}));
    md.emplace_back("nested", GgufValue::array_of_arrays({GgufValue::i32_array({7}), GgufValue::i32_array({8, 9})}));
    md.emplace_back("empty", GgufValue::string_array({}));
    return md;
}

std::vector<float> ramp(int64_t n, float scale = 0.01f) {
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = std::sin(static_cast<float>(i) * 0.7f) * scale * static_cast<float>(i % 13 + 1);
    return x;
}

TEST(GgufFile, RoundTripsEveryMetadataTypeAndEveryTensorType) {
    const std::string path = test::temp_dir("gguf") + "/m.gguf";
    const GgufMetadata md = every_type();
    const std::vector<GgmlType> types = {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0,
                                         GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::MXFP4};
    const std::vector<float> x = ramp(64 * 3);
    std::vector<std::vector<uint8_t>> encoded;
    {
        GgufWriter w(path, false);
        for (const auto& [k, v] : md) w.add_metadata(k, v);
        for (size_t i = 0; i < types.size(); ++i) w.add_tensor("t" + std::to_string(i), {64, 3}, types[i]);
        w.add_tensor("scalar", {1}, GgmlType::F32);
        for (GgmlType t : types) {
            encoded.emplace_back(*ggml_tensor_bytes(t, {64, 3}));
            encode_gguf_tensor(x.data(), 3, 64, t, encoded.back().data());
            // In two pieces: pieces of one tensor may be given separately.
            w.write_tensor_data(encoded.back().data(), 5);
            w.write_tensor_data(encoded.back().data() + 5, encoded.back().size() - 5);
        }
        const float one = 1.0f;
        w.write_tensor_data(&one, 4);
        w.commit();
    }
    EXPECT_FALSE(fs::exists(path + ".partial"));
    const GgufFile f = GgufFile::open(path);
    EXPECT_EQ(f.version(), 3u);
    ASSERT_EQ(f.metadata().size(), md.size());
    for (size_t i = 0; i < md.size(); ++i) {
        EXPECT_EQ(f.metadata()[i].first, md[i].first);
        EXPECT_TRUE(f.metadata()[i].second == md[i].second) << md[i].first;
    }
    EXPECT_EQ(f.get("u64").as_uint("u64"), UINT64_MAX);
    EXPECT_EQ(f.get("i64").as_int("i64"), INT64_MIN);
    EXPECT_EQ(f.get("f32").as_float("f32"), 0.1f);
    EXPECT_EQ(f.get("strings").as_strings("strings")[2], "b c");
    EXPECT_EQ(f.get("i32s").as_i32s("i32s"), (std::vector<int32_t>{1, -2, 3}));
    EXPECT_THROW(f.get("string").as_uint("string"), UserError);
    EXPECT_THROW(f.get("missing"), UserError);
    ASSERT_EQ(f.tensors().size(), types.size() + 1);
    for (size_t i = 0; i < types.size(); ++i) {
        const GgufTensorInfo& t = f.tensor("t" + std::to_string(i));
        EXPECT_EQ(t.type, types[i]);
        EXPECT_EQ(t.ne, (std::vector<int64_t>{64, 3}));
        EXPECT_EQ(t.offset % 32, 0u);
        EXPECT_EQ(std::memcmp(f.tensor_data(t), encoded[i].data(), encoded[i].size()), 0) << ggml_type_name(types[i]);
        // Dequantized values: exact for F32, close for the others.
        const std::vector<float> y = f.dequantize(t);
        for (size_t k = 0; k < x.size(); ++k) EXPECT_NEAR(y[k], x[k], types[i] == GgmlType::F32 ? 0.0 : 0.05) << k;
    }
    EXPECT_EQ(f.dequantize(f.tensor("scalar"))[0], 1.0f);
    fs::remove_all(fs::path(path).parent_path());
}

TEST(GgufFile, HeaderBytesAreTheGgufV3LayoutAndDataIsAligned) {
    const std::string path = test::temp_dir("gguf") + "/h.gguf";
    GgufWriter w(path, false);
    w.add_metadata("general.architecture", GgufValue::string("llama"));
    w.add_tensor("w", {2}, GgmlType::F32);
    const float v[2] = {1.0f, -2.0f};
    w.write_tensor_data(v, 8);
    w.commit();
    const std::string b = read_whole_file(path);
    std::string expect("GGUF", 4);
    auto u32 = [&](uint32_t x) { expect.append(reinterpret_cast<const char*>(&x), 4); };
    auto u64 = [&](uint64_t x) { expect.append(reinterpret_cast<const char*>(&x), 8); };
    u32(3);                                   // version
    u64(1);                                   // tensors
    u64(1);                                   // metadata
    u64(20); expect += "general.architecture";
    u32(8);                                   // STRING
    u64(5); expect += "llama";
    u64(1); expect += "w";                    // tensor name
    u32(1); u64(2);                           // n_dims, ne[0]
    u32(0);                                   // F32
    u64(0);                                   // offset
    ASSERT_EQ(expect.size(), 102u);
    expect.resize(128, '\0');                 // the header padded to the alignment of 32
    expect.append(reinterpret_cast<const char*>(v), 8);
    expect.resize(160, '\0');                 // the data section padded too (as gguf-py)
    EXPECT_EQ(b.size(), expect.size());
    EXPECT_EQ(b, expect);
}

TEST(GgufFile, CustomAlignmentPlacesEveryTensorOnIt) {
    const std::string path = test::temp_dir("gguf") + "/a.gguf";
    GgufWriter w(path, false);
    w.add_metadata("general.alignment", GgufValue::u32(64));
    w.add_tensor("a", {3}, GgmlType::F32);
    w.add_tensor("b", {5}, GgmlType::F16);
    const std::vector<uint8_t> bytes(12 + 10, 7);
    w.write_tensor_data(bytes.data(), bytes.size());
    w.commit();
    const GgufFile f = GgufFile::open(path);
    EXPECT_EQ(f.alignment(), 64u);
    EXPECT_EQ(f.data_offset() % 64, 0u);
    EXPECT_EQ(f.tensor("b").offset, 64u);
    EXPECT_THROW(GgufWriter(test::temp_dir("gguf") + "/x.gguf", false).add_metadata("general.alignment", GgufValue::u32(48)), UserError);
}

// Known inputs -> the bytes ggml writes (EXPORT.md section 2 / FORMATS.md "GGUF blocks"),
// computed here from the definitions.
TEST(GgufFile, TensorTypesHaveTheGgmlByteLayouts) {
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);  // signed max -16 (j = 0)
    // Q4_0: d = max / -8 = 2 (fp16 0x4000); q = trunc(x / d + 8.5) clamped to 15; element j in
    // the low nibble of byte j, element j + 16 in the high nibble.
    std::vector<uint8_t> q4(18);
    encode_gguf_tensor(x.data(), 1, 32, GgmlType::Q4_0, q4.data());
    EXPECT_EQ(q4[0], 0x00);
    EXPECT_EQ(q4[1], 0x40);
    for (int j = 0; j < 16; ++j) {
        const int lo = std::min(15, static_cast<int>(std::trunc(x[j] / 2.0f + 8.5f)));
        const int hi = std::min(15, static_cast<int>(std::trunc(x[j + 16] / 2.0f + 8.5f)));
        EXPECT_EQ(q4[2 + j], lo | (hi << 4)) << j;
    }
    // Q8_0: d = amax / 127 as fp16, q = round(x / d) as int8.
    std::vector<uint8_t> q8(34);
    encode_gguf_tensor(x.data(), 1, 32, GgmlType::Q8_0, q8.data());
    const float d8 = kernels::fp16_bits_to_fp32(kernels::fp32_to_fp16_bits(16.0f / 127.0f));
    EXPECT_EQ(q8[0] | (q8[1] << 8), kernels::fp32_to_fp16_bits(16.0f / 127.0f));
    for (int j = 0; j < 32; ++j) EXPECT_EQ(static_cast<int8_t>(q8[2 + j]), static_cast<int>(std::round(x[j] / (16.0f / 127.0f)))) << j;
    (void)d8;
    // Q4_1: d = (max - min) / 15 = 31/15, m = -16; q = trunc((x - m) * (1/d) + 0.5).
    std::vector<uint8_t> q41(20);
    encode_gguf_tensor(x.data(), 1, 32, GgmlType::Q4_1, q41.data());
    const float d41 = 31.0f / 15.0f, id41 = 1.0f / d41;
    EXPECT_EQ(q41[0] | (q41[1] << 8), kernels::fp32_to_fp16_bits(d41));
    EXPECT_EQ(q41[2] | (q41[3] << 8), kernels::fp32_to_fp16_bits(-16.0f));
    for (int j = 0; j < 16; ++j) {
        const int lo = static_cast<int>(std::trunc((x[j] + 16.0f) * id41 + 0.5f));
        const int hi = std::min(15, static_cast<int>(std::trunc((x[j + 16] + 16.0f) * id41 + 0.5f)));
        EXPECT_EQ(q41[4 + j], lo | (hi << 4)) << j;
    }
    // MXFP4: amax 16 -> e = floor(log2 16) - 2 + 127 = 129, d = 2^(e-128) = 2 for the E2M1 codes
    // {0, 1, 2, 3, 4, 6, 8, 12} x d (ties to the smaller magnitude): -16 = -8 d -> code 8|6 = 14.
    std::vector<uint8_t> mx(17);
    encode_gguf_tensor(x.data(), 1, 32, GgmlType::MXFP4, mx.data());
    EXPECT_EQ(mx[0], 129);
    EXPECT_EQ(mx[1] & 0x0F, 14);          // x0 = -16
    EXPECT_EQ(mx[1] >> 4, 0);             // x16 = 0
    EXPECT_EQ(mx[1 + 15] >> 4, 6);        // x31 = 15 -> nearest 16 = 8 d (code 6)
    // F16: round to nearest even.
    std::vector<float> h = {1.0f, 65504.0f, 1.0f + 1.0f / 4096.0f};
    std::vector<uint8_t> hb(6);
    encode_gguf_tensor(h.data(), 1, 3, GgmlType::F16, hb.data());
    EXPECT_EQ(hb[0] | (hb[1] << 8), 0x3C00);
    EXPECT_EQ(hb[2] | (hb[3] << 8), 0x7BFF);
    EXPECT_EQ(hb[4] | (hb[5] << 8), 0x3C00);  // tie to even
    // And the kernels agree for a larger random-ish tensor, every type.
    const std::vector<float> r = ramp(32 * 40, 0.3f);
    for (auto [g, k] : {std::pair{GgmlType::Q8_0, kernels::GgufType::Q8_0}, {GgmlType::Q4_0, kernels::GgufType::Q4_0},
                        {GgmlType::Q4_1, kernels::GgufType::Q4_1}, {GgmlType::MXFP4, kernels::GgufType::MXFP4}}) {
        std::vector<uint8_t> a(*ggml_tensor_bytes(g, {64, 20})), b(a.size());
        encode_gguf_tensor(r.data(), 20, 64, g, a.data());
        kernels::gguf_quantize(r.data(), 20, 64, k, b.data());
        EXPECT_EQ(a, b) << ggml_type_name(g);
    }
}

std::string small_file() {
    const std::string path = test::temp_dir("gguf") + "/s.gguf";
    GgufWriter w(path, false);
    w.add_metadata("k", GgufValue::string_array({"x", "y"}));
    w.add_metadata("n", GgufValue::u32(5));
    w.add_tensor("a", {32}, GgmlType::Q8_0);
    w.add_tensor("b", {4}, GgmlType::F32);
    const std::vector<uint8_t> bytes(34 + 16, 1);
    w.write_tensor_data(bytes.data(), bytes.size());
    w.commit();
    return read_whole_file(path);
}

std::string message_of(const std::string& bytes) {
    try {
        GgufFile::parse(bytes, "bad.gguf");
    } catch (const UserError& e) {
        return e.what();
    }
    return "";
}

void put_u64_at(std::string& b, size_t pos, uint64_t v) { std::memcpy(&b[pos], &v, 8); }
void put_u32_at(std::string& b, size_t pos, uint32_t v) { std::memcpy(&b[pos], &v, 4); }

TEST(GgufFile, BadFilesAreUserErrorsNamingTheFileAndField) {
    const std::string good = small_file();
    ASSERT_NO_THROW(GgufFile::parse(good, "good.gguf"));
    // Every truncation of the header and data is refused (never a crash or an overread).
    // (The last 16 bytes are padding after the last tensor: a file cut there is still whole.)
    for (size_t len = 0; len < good.size() - 16; len += (len < 200 ? 1 : 7))
        EXPECT_FALSE(message_of(good.substr(0, len)).empty()) << len;

    std::string b = good;
    b[0] = 'X';
    EXPECT_NE(message_of(b).find("bad.gguf: bad magic"), std::string::npos) << message_of(b);

    b = good;
    put_u32_at(b, 4, 7);
    EXPECT_NE(message_of(b).find("version 7"), std::string::npos);

    b = good;
    put_u64_at(b, 8, uint64_t{1} << 40);  // tensor count
    EXPECT_NE(message_of(b).find("tensor count"), std::string::npos) << message_of(b);

    // Layout: 24-byte header; KV "k": 8 + 1 + 4 (type) ...
    const size_t k_type = 24 + 8 + 1;
    b = good;
    put_u32_at(b, k_type, 99);
    EXPECT_NE(message_of(b).find("metadata 'k': unknown value type 99"), std::string::npos) << message_of(b);

    b = good;
    put_u64_at(b, k_type + 4 + 4, uint64_t{1} << 60);  // array count
    EXPECT_NE(message_of(b).find("metadata 'k': count"), std::string::npos) << message_of(b);

    // Tensor infos follow the KVs: find "a" by its name bytes.
    const size_t a_name = b.find(std::string("\x01\0\0\0\0\0\0\0a", 9));
    ASSERT_NE(a_name, std::string::npos);
    const size_t a_type = a_name + 9 + 4 + 8, a_offset = a_type + 4;
    b = good;
    put_u32_at(b, a_type, 15);  // Q8_K: not a type we read
    EXPECT_NE(message_of(b).find("tensor 'a': ggml type 15 (Q8_K) is not a type QuantLab reads"), std::string::npos)
        << message_of(b);
    b = good;
    put_u32_at(b, a_type, 12);  // Q4_K: read, but a's 3 elements are not a whole super-block of 256
    EXPECT_NE(message_of(b).find("tensor 'a': dimensions do not fit type Q4_K"), std::string::npos) << message_of(b);

    b = good;
    put_u64_at(b, a_offset, 4096);  // past the data section
    EXPECT_NE(message_of(b).find("tensor 'a': data at offset 4096"), std::string::npos) << message_of(b);

    b = good;
    put_u64_at(b, a_offset, 8);  // not aligned
    EXPECT_NE(message_of(b).find("not a multiple of the alignment"), std::string::npos) << message_of(b);

    b = good;
    const size_t b_name = b.find(std::string("\x01\0\0\0\0\0\0\0b", 9));
    put_u64_at(b, b_name + 9 + 4 + 8 + 4, 0);  // "b" onto "a"'s bytes
    EXPECT_NE(message_of(b).find("overlaps"), std::string::npos) << message_of(b);

    b = good;
    put_u64_at(b, a_name + 9 + 4, 33);  // ne[0] not a multiple of Q8_0's 32
    EXPECT_NE(message_of(b).find("tensor 'a': dimensions do not fit type Q8_0"), std::string::npos) << message_of(b);

    // A key given twice.
    b = good;
    const size_t n_key = b.find(std::string("\x01\0\0\0\0\0\0\0n", 9));
    b[n_key + 8] = 'k';
    EXPECT_NE(message_of(b).find("metadata key 'k' appears twice"), std::string::npos) << message_of(b);
}

TEST(GgufFile, WriterRefusesOverwriteWithoutForceAndBadDeclarations) {
    const std::string dir = test::temp_dir("gguf");
    const std::string path = dir + "/x.gguf";
    std::ofstream(path) << "keep";
    EXPECT_THROW(GgufWriter(path, false), UserError);
    EXPECT_EQ(read_whole_file(path), "keep");
    {
        GgufWriter w(path, true);
        EXPECT_THROW(w.add_tensor("q", {33, 2}, GgmlType::Q4_0), UserError);  // not a multiple of 32
        EXPECT_THROW(w.add_tensor("q", {1, 1, 1, 1, 1}, GgmlType::F32), UserError);
        w.add_tensor("q", {32}, GgmlType::F32);
        EXPECT_THROW(w.add_tensor("q", {32}, GgmlType::F32), UserError);
        EXPECT_THROW(w.add_metadata("m", GgufValue::u8(1)); w.add_metadata("m", GgufValue::u8(1)), UserError);
        EXPECT_THROW(w.commit(), UserError);  // "q" declared, no data
    }
    // Abandoned: the old file is untouched and no partial file is left.
    EXPECT_EQ(read_whole_file(path), "keep");
    EXPECT_FALSE(fs::exists(path + ".partial"));
    fs::remove_all(dir);
}

TEST(GgufFile, UnwritableFolderIsAUserErrorNamingThePath) {
    const std::string dir = test::temp_dir("gguf");
    chmod(dir.c_str(), 0555);
    // Root ignores folder permissions: try as an unprivileged user in a child process.
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(3);
        try {
            GgufWriter w(dir + "/m.gguf", false);
            _exit(1);
        } catch (const UserError& e) {
            const std::string msg = e.what();
            _exit(msg.find(dir + "/m.gguf: cannot write: Permission denied") != std::string::npos ? 0 : 2);
        }
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_FALSE(fs::exists(dir + "/m.gguf"));
    EXPECT_FALSE(fs::exists(dir + "/m.gguf.partial"));
    chmod(dir.c_str(), 0700);
    fs::remove_all(dir);
}

TEST(GgufFile, ScalarSizesAreTheGgufSpecsAndZeroForStringsAndArrays) {
    // gguf.md: value types 0..12; STRING and ARRAY have no fixed size.
    const std::pair<GgufValueType, int> sizes[] = {
        {GgufValueType::UINT8, 1},   {GgufValueType::INT8, 1},    {GgufValueType::BOOL, 1},
        {GgufValueType::UINT16, 2},  {GgufValueType::INT16, 2},   {GgufValueType::UINT32, 4},
        {GgufValueType::INT32, 4},   {GgufValueType::FLOAT32, 4}, {GgufValueType::UINT64, 8},
        {GgufValueType::INT64, 8},   {GgufValueType::FLOAT64, 8}, {GgufValueType::STRING, 0},
        {GgufValueType::ARRAY, 0}};
    for (const auto& [type, bytes] : sizes) EXPECT_EQ(gguf_scalar_size(type), bytes) << gguf_value_type_name(type);
    EXPECT_EQ(gguf_scalar_size(static_cast<GgufValueType>(13)), 0);
}

TEST(GgufFile, OpeningAFolderOrAMissingFileNamesThePath) {
    const std::string dir = test::temp_dir("gguf");
    EXPECT_EQ(test::user_error_text([&] { GgufFile::open(dir); }), dir + ": not a regular file");
    EXPECT_EQ(test::user_error_text([&] { GgufFile::open(dir + "/none.gguf"); }),
              dir + "/none.gguf: cannot open: No such file or directory");
    fs::remove_all(dir);
}

TEST(GgufFile, FullDiskErrorNamesThePathAndLeavesNoFile) {
    // A file-size limit makes write() fail with EFBIG, as a full disk fails with ENOSPC.
    const std::string dir = test::temp_dir("gguf");
    const std::vector<uint8_t> big(1 << 20, 1);
    const std::string msg = test::user_error_text_with_file_size_limit(64 * 1024, [&] {
        GgufWriter w(dir + "/big.gguf", false);
        w.add_tensor("w", {1 << 18}, GgmlType::F32);
        w.write_tensor_data(big.data(), big.size());
        w.commit();
    });
    EXPECT_NE(msg.find(dir + "/big.gguf: write failed: File too large"), std::string::npos) << msg;
    EXPECT_FALSE(fs::exists(dir + "/big.gguf"));
    EXPECT_FALSE(fs::exists(dir + "/big.gguf.partial"));
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql
