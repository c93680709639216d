// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/safetensors_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <random>

#include "engine/core/errors.h"
#include "tests/engine/user_error_text.h"
#include "tests/temp_folder.h"

namespace ql {
namespace {

std::string u64_le(uint64_t v) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
    return s;
}

// A file from a header text and `data_bytes` data bytes (values 0, 1, 2 ...).
std::string file_with(const std::string& header, uint64_t data_bytes) {
    std::string out = u64_le(header.size()) + header;
    for (uint64_t i = 0; i < data_bytes; ++i) out += static_cast<char>(i & 0xFF);
    return out;
}

std::vector<uint8_t> pattern(size_t n, int seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 31 + seed * 7 + 1);
    return v;
}

constexpr SafetensorsDtype kAllDtypes[] = {
    SafetensorsDtype::BOOL,        SafetensorsDtype::F4,   SafetensorsDtype::F6_E2M3, SafetensorsDtype::F6_E3M2,
    SafetensorsDtype::U8,          SafetensorsDtype::I8,   SafetensorsDtype::F8_E5M2, SafetensorsDtype::F8_E4M3,
    SafetensorsDtype::F8_E8M0,     SafetensorsDtype::F8_E4M3FNUZ, SafetensorsDtype::F8_E5M2FNUZ,
    SafetensorsDtype::I16,         SafetensorsDtype::U16,  SafetensorsDtype::F16,     SafetensorsDtype::BF16,
    SafetensorsDtype::I32,         SafetensorsDtype::U32,  SafetensorsDtype::F32,     SafetensorsDtype::C64,
    SafetensorsDtype::F64,         SafetensorsDtype::I64,  SafetensorsDtype::U64,
};

TEST(SafetensorsFile, DtypeNamesAndSizesAreTheReferences) {
    EXPECT_EQ(std::size(kAllDtypes), 22u);
    for (SafetensorsDtype d : kAllDtypes) EXPECT_EQ(safetensors_dtype_from_name(safetensors_dtype_name(d)), d);
    EXPECT_EQ(safetensors_dtype_bits(SafetensorsDtype::F4), 4);
    EXPECT_EQ(safetensors_dtype_bits(SafetensorsDtype::F6_E3M2), 6);
    EXPECT_EQ(safetensors_dtype_bits(SafetensorsDtype::BOOL), 8);
    EXPECT_EQ(safetensors_dtype_bits(SafetensorsDtype::BF16), 16);
    EXPECT_EQ(safetensors_dtype_bits(SafetensorsDtype::C64), 64);
    EXPECT_FALSE(safetensors_dtype_from_name("f32"));
    EXPECT_EQ(safetensors_byte_size(SafetensorsDtype::F4, {3}), std::nullopt);  // 12 bits
    EXPECT_EQ(safetensors_byte_size(SafetensorsDtype::F6_E2M3, {4}), 3u);
    EXPECT_EQ(safetensors_byte_size(SafetensorsDtype::F32, {}), 4u);
    EXPECT_EQ(safetensors_byte_size(SafetensorsDtype::F32, {int64_t{1} << 62, 4}), std::nullopt);
}

TEST(SafetensorsFile, RoundTripsEveryDtypeWithMetadata) {
    const std::string dir = test::temp_dir("safetensors");
    std::vector<std::vector<uint8_t>> data;
    std::vector<SafetensorsWriteEntry> entries;
    int k = 0;
    for (SafetensorsDtype d : kAllDtypes) {
        const std::vector<int64_t> shape = {2, 4};  // 8 elements: whole bytes for F4 and F6 too
        data.push_back(pattern(*safetensors_byte_size(d, shape), k));
        if (d == SafetensorsDtype::BOOL) for (auto& b : data.back()) b &= 1;
        entries.push_back({std::string("t.") + safetensors_dtype_name(d), d, shape, data.back().data(), data.back().size()});
        ++k;
    }
    const std::map<std::string, std::string> meta = {{"format", "pt"}, {"quantlab", "ünïcode ✓"}, {"empty", ""}};
    write_safetensors(dir + "/all.safetensors", entries, meta);
    const SafetensorsFile f = SafetensorsFile::open(dir + "/all.safetensors");
    EXPECT_EQ(f.metadata(), meta);
    ASSERT_EQ(f.tensors().size(), entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
        const auto& info = f.info(entries[i].name);
        EXPECT_EQ(info.dtype, entries[i].dtype);
        EXPECT_EQ(info.shape, entries[i].shape);
        EXPECT_EQ(info.numel(), 8);
        const TensorBytes b = f.bytes(entries[i].name);
        ASSERT_EQ(b.size, data[i].size());
        EXPECT_EQ(std::memcmp(b.data, data[i].data(), b.size), 0) << entries[i].name;
        // Reference layout: every tensor aligned to its element size.
        const int bits = safetensors_dtype_bits(info.dtype);
        if (bits >= 8) EXPECT_EQ(info.offset % static_cast<uint64_t>(bits / 8), 0u) << entries[i].name;
    }
    EXPECT_EQ(f.data_offset() % 8, 0u);
    EXPECT_EQ(access((dir + "/all.safetensors.partial").c_str(), F_OK), -1);
}

TEST(SafetensorsFile, WritesTheReferenceLayout) {
    // Empty files as tensor.rs's own tests spell them: "{}" padded to 8, with and without metadata.
    EXPECT_EQ(serialize_safetensors({}), u64_le(8) + "{}      ");
    EXPECT_EQ(serialize_safetensors({}, {{"framework", "pt"}}), u64_le(40) + "{\"__metadata__\":{\"framework\":\"pt\"}}     ");
    // Sorted by dtype alignment (descending), then by name; compact JSON; data in that order.
    const float f[2] = {1.0f, 2.0f};
    const uint8_t u[3] = {7, 8, 9};
    const uint16_t h[1] = {0x3C00};
    const std::string s = serialize_safetensors({{"b", SafetensorsDtype::U8, {3}, u, 3},
                                                 {"z", SafetensorsDtype::F16, {}, h, 2},
                                                 {"a", SafetensorsDtype::F32, {2}, f, 8},
                                                 {"c", SafetensorsDtype::U8, {0}, nullptr, 0}});
    const std::string header =
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        "\"z\":{\"dtype\":\"F16\",\"shape\":[],\"data_offsets\":[8,10]},"
        "\"b\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[10,13]},"
        "\"c\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[13,13]}}";
    const std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
    ASSERT_EQ(s.substr(0, 8 + padded.size()), u64_le(padded.size()) + padded);
    EXPECT_EQ(s.size(), 8 + padded.size() + 13);
    const SafetensorsFile p = SafetensorsFile::parse(s, "mem");
    EXPECT_EQ(p.names(), (std::vector<std::string>{"a", "z", "b", "c"}));  // file order
}

TEST(SafetensorsFile, ScalarsEmptyTensorsAndEmptyFiles) {
    const float one = 1.5f;
    const SafetensorsFile f = SafetensorsFile::parse(
        serialize_safetensors({{"s", SafetensorsDtype::F32, {}, &one, 4},
                               {"e", SafetensorsDtype::F32, {0, 5}, nullptr, 0},
                               {"e2", SafetensorsDtype::BF16, {3, 0}, nullptr, 0}}),
        "mem");
    EXPECT_TRUE(f.info("s").shape.empty());
    EXPECT_EQ(f.info("s").numel(), 1);
    float back;
    std::memcpy(&back, f.bytes("s").data, 4);
    EXPECT_EQ(back, 1.5f);
    EXPECT_EQ(f.info("e").numel(), 0);
    EXPECT_EQ(f.bytes("e2").size, 0u);
    const SafetensorsFile empty = SafetensorsFile::parse(serialize_safetensors({}), "mem");
    EXPECT_TRUE(empty.tensors().empty());
    // Other writers' files: unsorted entries, unknown extra fields, null metadata, no padding.
    const SafetensorsFile other = SafetensorsFile::parse(
        file_with("{\"b\":{\"data_offsets\":[4,6],\"shape\":[1],\"dtype\":\"I16\",\"extra\":{\"x\":[1]}},"
                  "\"__metadata__\":null,\"a\":{\"dtype\":\"U8\",\"shape\":[2,2],\"data_offsets\":[0,4]}}",
                  6),
        "mem");
    EXPECT_EQ(other.names(), (std::vector<std::string>{"a", "b"}));
    EXPECT_TRUE(other.metadata().empty());
    EXPECT_EQ(other.info("b").offset, other.data_offset() + 4);
}

TEST(SafetensorsFile, ViewsOutliveTheFileObject) {
    const std::string dir = test::temp_dir("safetensors");
    const auto data = pattern(4096, 3);
    write_safetensors(dir + "/v.safetensors", {{"w", SafetensorsDtype::U8, {4096}, data.data(), data.size()}});
    TensorBytes b;
    {
        const SafetensorsFile f = SafetensorsFile::open(dir + "/v.safetensors");
        b = f.bytes("w");
    }
    unlink((dir + "/v.safetensors").c_str());
    ASSERT_EQ(b.size, 4096u);
    EXPECT_EQ(std::memcmp(b.data, data.data(), 4096), 0);
}

TEST(SafetensorsFile, MissingTensorsAndFilesNameThePath) {
    const SafetensorsFile f = SafetensorsFile::parse(serialize_safetensors({}), "some/file.safetensors");
    try {
        f.info("nope");
        FAIL();
    } catch (const UserError& e) {
        EXPECT_STREQ(e.what(), "some/file.safetensors: no tensor \"nope\"");
    }
    EXPECT_EQ(f.find("nope"), nullptr);
    const std::string dir = test::temp_dir("safetensors");
    EXPECT_THROW(SafetensorsFile::open(dir + "/missing.safetensors"), UserError);
    EXPECT_THROW(SafetensorsFile::open(dir), UserError);  // a directory
}

// Every validation rule, as an enum of corrupt files (llama.cpp tests/test-gguf.cpp habit).
enum class Bad {
    Empty, ShortLength, HeaderTooLarge, HeaderPastEnd, HeaderLengthWraps, NotUtf8, Overlong, NulInHeader,
    NotJson, TrailingGarbage, NotObject, DuplicateTensor, DuplicateField, TooDeep, MetadataNotObject,
    MetadataValueNotString, EntryNotObject, MissingDtype, MissingShape, MissingOffsets, DtypeNotString,
    UnknownDtype, LowercaseDtype, ShapeNotArray, NegativeDim, FractionalDim, DimTooLarge, OffsetsNotPair,
    OffsetsNotIntegers, EndBeforeBegin, SizeMismatch, ShapeOverflow, FractionOfAByte, GapAtStart, Gap,
    Overlap, DuplicateOffsets, Truncated, TrailingBytes, DataWithoutTensors, OffsetNearU64Max, Count
};

struct BadFile {
    std::string bytes;
    std::string expect;  // part of the message
    std::string tensor;  // the tensor the message must name ("" if none)
};

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape, const std::string& offsets) {
    return "\"" + name + "\":{\"dtype\":" + dtype + ",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
}

BadFile make_bad(Bad c) {
    const std::string ok = entry("w", "\"F32\"", "[2]", "[0,8]");
    switch (c) {
        case Bad::Empty: return {"", "too few for the 8-byte header length", ""};
        case Bad::ShortLength: return {"\x02\x00\x00", "too few for the 8-byte header length", ""};
        case Bad::HeaderTooLarge: return {u64_le(100'000'001) + "{}", "exceeds the limit of 100000000 bytes", ""};
        case Bad::HeaderPastEnd: return {u64_le(64) + "{}", "runs past the end of the file", ""};
        case Bad::HeaderLengthWraps: return {u64_le(~uint64_t{0} - 3) + "{}", "exceeds the limit", ""};
        case Bad::NotUtf8: return {file_with("{\"\xff\":{}}", 0), "not valid UTF-8 (byte 2", ""};
        case Bad::Overlong: return {file_with("{\"\xc0\xaf\":{}}", 0), "not valid UTF-8", ""};
        case Bad::NulInHeader: return {file_with(std::string("{}\0garbage", 10), 0), "NUL byte at byte 2", ""};
        case Bad::NotJson: return {file_with("{\"w\":", 0), "not valid JSON", ""};
        case Bad::TrailingGarbage: return {file_with("{}x", 0), "not valid JSON", ""};
        case Bad::NotObject: return {file_with("[1,2]", 0), "not a JSON object", ""};
        case Bad::DuplicateTensor: return {file_with("{" + ok + "," + ok + "}", 8), "duplicate key", "w"};
        case Bad::DuplicateField:
            return {file_with("{\"w\":{\"dtype\":\"F32\",\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8), "duplicate key", "dtype"};
        case Bad::TooDeep: return {file_with("{\"w\":" + std::string(200, '[') + std::string(200, ']') + "}", 0), "nested deeper than 128", ""};
        case Bad::MetadataNotObject: return {file_with("{\"__metadata__\":[\"a\"]}", 0), "\"__metadata__\" is not an object", ""};
        case Bad::MetadataValueNotString: return {file_with("{\"__metadata__\":{\"n\":1}}", 0), "value for key \"n\" is not a string", ""};
        case Bad::EntryNotObject: return {file_with("{\"w\":[0,8]}", 8), "entry is not a JSON object", "w"};
        case Bad::MissingDtype: return {file_with("{\"w\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8), "missing \"dtype\"", "w"};
        case Bad::MissingShape: return {file_with("{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8), "missing \"shape\"", "w"};
        case Bad::MissingOffsets: return {file_with("{\"w\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8), "missing \"data_offsets\"", "w"};
        case Bad::DtypeNotString: return {file_with("{" + entry("w", "4", "[2]", "[0,8]") + "}", 8), "\"dtype\" is not a string", "w"};
        case Bad::UnknownDtype: return {file_with("{" + entry("w", "\"F7\"", "[2]", "[0,8]") + "}", 8), "unknown dtype \"F7\" (known: BOOL", "w"};
        case Bad::LowercaseDtype: return {file_with("{" + entry("w", "\"f32\"", "[2]", "[0,8]") + "}", 8), "unknown dtype \"f32\"", "w"};
        case Bad::ShapeNotArray: return {file_with("{" + entry("w", "\"F32\"", "2", "[0,8]") + "}", 8), "\"shape\" is not an array", "w"};
        case Bad::NegativeDim: return {file_with("{" + entry("w", "\"F32\"", "[-2]", "[0,8]") + "}", 8), "non-negative integers, found -2", "w"};
        case Bad::FractionalDim: return {file_with("{" + entry("w", "\"F32\"", "[2.0]", "[0,8]") + "}", 8), "non-negative integers", "w"};
        case Bad::DimTooLarge:
            return {file_with("{" + entry("w", "\"F32\"", "[0,9223372036854775808]", "[0,0]") + "}", 0), "dimension 9223372036854775808 is too large", "w"};
        case Bad::OffsetsNotPair: return {file_with("{" + entry("w", "\"F32\"", "[2]", "[0,8,8]") + "}", 8), "must be [begin, end]", "w"};
        case Bad::OffsetsNotIntegers: return {file_with("{" + entry("w", "\"F32\"", "[2]", "[0,\"8\"]") + "}", 8), "must hold non-negative integers", "w"};
        case Bad::EndBeforeBegin: return {file_with("{" + entry("w", "\"F32\"", "[2]", "[8,0]") + "}", 8), "end before they begin", "w"};
        case Bad::SizeMismatch: return {file_with("{" + entry("w", "\"F32\"", "[3]", "[0,8]") + "}", 8), "needs 12 bytes but data_offsets [0, 8] hold 8", "w"};
        case Bad::ShapeOverflow:
            return {file_with("{" + entry("w", "\"F32\"", "[4294967296,4294967296]", "[0,8]") + "}", 8), "overflows", "w"};
        case Bad::FractionOfAByte: return {file_with("{" + entry("w", "\"F4\"", "[3]", "[0,1]") + "}", 1), "not a whole number of bytes", "w"};
        case Bad::GapAtStart: return {file_with("{" + entry("w", "\"F32\"", "[2]", "[4,12]") + "}", 12), "leave a gap", "w"};
        case Bad::Gap:
            return {file_with("{" + ok + "," + entry("v", "\"U8\"", "[2]", "[10,12]") + "}", 12), "leave a gap: the data before it ends at 8 (tensor \"w\")", "v"};
        case Bad::Overlap:
            return {file_with("{" + ok + "," + entry("v", "\"U8\"", "[4]", "[6,10]") + "}", 10), "overlap tensor \"w\"", "v"};
        case Bad::DuplicateOffsets:
            return {file_with("{" + ok + "," + entry("v", "\"F32\"", "[2]", "[0,8]") + "}", 8), "overlap tensor", ""};
        case Bad::Truncated: return {file_with("{" + ok + "}", 5), "run past the end of the file", "w"};
        case Bad::TrailingBytes: return {file_with("{" + ok + "}", 9), "1 bytes at the end of the data area belong to no tensor", "w"};
        case Bad::DataWithoutTensors: return {file_with("{}", 3), "3 bytes at the end of the data area belong to no tensor", ""};
        case Bad::OffsetNearU64Max:
            // 2^61 - 1 bytes (the largest size whose bit count fits in u64): offsets are compared
            // with the data size, never added to the header size, so nothing wraps around.
            return {file_with("{" + entry("v", "\"U8\"", "[2305843009213693951]", "[0,2305843009213693951]") + "}", 8),
                    "run past the end of the file", "v"};
        case Bad::Count: break;
    }
    return {};
}

TEST(SafetensorsFile, CorruptFilesGiveErrorsNamingTheFileAndTensor) {
    const std::string dir = test::temp_dir("safetensors");
    for (int i = 0; i < static_cast<int>(Bad::Count); ++i) {
        const BadFile bad = make_bad(static_cast<Bad>(i));
        ASSERT_FALSE(bad.expect.empty()) << "case " << i;
        const std::string path = dir + "/bad" + std::to_string(i) + ".safetensors";
        std::ofstream(path, std::ios::binary) << bad.bytes;
        try {
            SafetensorsFile::open(path);
            ADD_FAILURE() << "case " << i << " was accepted";
        } catch (const UserError& e) {
            const std::string msg = e.what();
            EXPECT_EQ(msg.rfind(path + ": not a valid safetensors file: ", 0), 0u) << "case " << i << ": " << msg;
            EXPECT_NE(msg.find(bad.expect), std::string::npos) << "case " << i << ": " << msg;
            if (!bad.tensor.empty()) EXPECT_NE(msg.find("\"" + bad.tensor + "\""), std::string::npos) << "case " << i << ": " << msg;
        }
    }
}

TEST(SafetensorsFile, HostileNamesAreEscapedInMessages) {
    const std::string name = "evil\n\x1b[31mname";
    try {
        SafetensorsFile::parse(file_with("{\"evil\\n\\u001b[31mname\":{\"dtype\":\"X\",\"shape\":[],\"data_offsets\":[0,0]}}", 0), "f");
        FAIL();
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("\"evil\\n\\u001b[31mname\""), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
}

// Accepted files must be self-consistent: the reader's invariants, checked on every mutant.
void expect_consistent(const SafetensorsFile& f, size_t file_size) {
    uint64_t at = f.data_offset();
    for (const auto& t : f.tensors()) {
        ASSERT_EQ(t.offset, at) << t.name;
        ASSERT_EQ(safetensors_byte_size(t.dtype, t.shape), t.size) << t.name;
        ASSERT_LE(t.offset + t.size, file_size);
        at += t.size;
        ASSERT_EQ(f.find(t.name), &t);
    }
    ASSERT_EQ(at, file_size);
}

std::string valid_file() {
    static const float f[6] = {1, 2, 3, 4, 5, 6};
    static const uint16_t b[4] = {0x3F80, 0x4000, 0xC040, 0};
    static const uint8_t u = 9;
    return serialize_safetensors({{"layer.weight", SafetensorsDtype::F32, {2, 3}, f, 24},
                                  {"layer.scale", SafetensorsDtype::BF16, {4}, b, 8},
                                  {"n", SafetensorsDtype::U8, {}, &u, 1},
                                  {"e", SafetensorsDtype::F4, {0}, nullptr, 0}},
                                 {{"format", "pt"}});
}

TEST(SafetensorsFile, EverySingleByteMutationParsesConsistentlyOrThrows) {
    const std::string s = valid_file();
    int accepted = 0, rejected = 0;
    for (size_t i = 0; i < s.size(); ++i)
        for (int v : std::initializer_list<int>{0x00, 0x01, 0x08, 0x20, '"', ',', '-', '0', '1', '9', ':', '[', ']', '{', '}', 'e', 0x7f, 0x80, 0xc3, 0xff}) {
            std::string m = s;
            if (m[i] == static_cast<char>(v)) continue;
            m[i] = static_cast<char>(v);
            try {
                expect_consistent(SafetensorsFile::parse(m, "mutant"), m.size());
                ++accepted;
            } catch (const UserError&) {
                ++rejected;
            }
        }
    EXPECT_GT(rejected, 1000);
    EXPECT_GT(accepted, 100);  // data bytes, padding, metadata text
}

TEST(SafetensorsFile, EveryTruncationAndExtensionThrows) {
    const std::string s = valid_file();
    for (size_t len = 0; len < s.size(); ++len) EXPECT_THROW(SafetensorsFile::parse(s.substr(0, len), "cut"), UserError) << len;
    EXPECT_THROW(SafetensorsFile::parse(s + '\0', "long"), UserError);
}

TEST(SafetensorsFile, RandomMultiByteMutationsParseConsistentlyOrThrow) {
    const std::string s = valid_file();
    std::mt19937 rng(12345);
    int accepted = 0;
    for (int iter = 0; iter < 20000; ++iter) {
        std::string m = s;
        const int edits = 1 + static_cast<int>(rng() % 6);
        for (int e = 0; e < edits; ++e) {
            const size_t at = rng() % m.size();
            switch (rng() % 4) {
                case 0: m[at] = static_cast<char>(rng()); break;                                 // overwrite
                case 1: m.erase(at, 1 + rng() % 4); break;                                        // delete
                case 2: m.insert(at, 1, "0123456789[]{},:\"-"[rng() % 18]); break;               // insert
                case 3: m.replace(0, 8, u64_le(m.size() - 8 - (rng() % 64))); break;             // lie about N
            }
            if (m.empty()) m = "x";
        }
        try {
            expect_consistent(SafetensorsFile::parse(m, "mutant"), m.size());
            ++accepted;
        } catch (const UserError&) {
        }
    }
    EXPECT_GT(accepted, 0);
}

TEST(SafetensorsFile, BadWriteEntriesNameThePathAndTensor) {
    const std::string dir = test::temp_dir("safetensors");
    const float f[2] = {1, 2};
    struct Case {
        std::vector<SafetensorsWriteEntry> entries;
        std::string expect;
    };
    const std::vector<Case> cases = {
        {{{"a", SafetensorsDtype::F32, {3}, f, 8}}, "tensor \"a\": shape [3] of F32 needs 12 bytes, given 8"},
        {{{"a", SafetensorsDtype::F32, {2}, f, 8}, {"a", SafetensorsDtype::F32, {2}, f, 8}}, "tensor \"a\": the name appears twice"},
        {{{"__metadata__", SafetensorsDtype::F32, {2}, f, 8}}, "reserved"},
        {{{"bad\xff", SafetensorsDtype::F32, {2}, f, 8}}, "not valid UTF-8"},
        {{{"n", SafetensorsDtype::F32, {-2}, f, 8}}, "tensor \"n\": shape [-2] of F32 is not a valid size"},
        {{{"p", SafetensorsDtype::F32, {2}, nullptr, 8}}, "tensor \"p\": no data"},
    };
    for (const Case& c : cases) {
        const std::string path = dir + "/w.safetensors";
        try {
            write_safetensors(path, c.entries);
            ADD_FAILURE() << c.expect;
        } catch (const UserError& e) {
            EXPECT_EQ(std::string(e.what()).rfind(path + ": cannot write", 0), 0u) << e.what();
            EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << e.what();
        }
        EXPECT_NE(access(path.c_str(), F_OK), 0);
    }
}

TEST(SafetensorsFile, FullDiskErrorNamesThePathAndLeavesNoFile) {
    // A file-size limit makes write() fail with EFBIG, as a full disk fails with ENOSPC.
    const std::string dir = test::temp_dir("safetensors");
    const std::vector<uint8_t> big(1 << 20, 1);
    const std::string msg = test::user_error_text_with_file_size_limit(64 * 1024, [&] {
        write_safetensors(dir + "/big.safetensors", {{"w", SafetensorsDtype::U8, {1 << 20}, big.data(), big.size()}});
    });
    EXPECT_NE(msg.find(dir + "/big.safetensors: write failed"), std::string::npos) << msg;
    EXPECT_NE(access((dir + "/big.safetensors").c_str(), F_OK), 0);
    EXPECT_NE(access((dir + "/big.safetensors.partial").c_str(), F_OK), 0);
}

}  // namespace
}  // namespace ql
