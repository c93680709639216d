// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF value and tensor types (gguf_file.h): names, sizes, GgufValue constructors and accessors.
#include <cctype>
#include <cstring>

#include "engine/core/errors.h"
#include "engine/io/gguf_file.h"

namespace ql {

const char* gguf_value_type_name(GgufValueType t) {
    switch (t) {
        case GgufValueType::UINT8: return "UINT8";
        case GgufValueType::INT8: return "INT8";
        case GgufValueType::UINT16: return "UINT16";
        case GgufValueType::INT16: return "INT16";
        case GgufValueType::UINT32: return "UINT32";
        case GgufValueType::INT32: return "INT32";
        case GgufValueType::FLOAT32: return "FLOAT32";
        case GgufValueType::BOOL: return "BOOL";
        case GgufValueType::STRING: return "STRING";
        case GgufValueType::ARRAY: return "ARRAY";
        case GgufValueType::UINT64: return "UINT64";
        case GgufValueType::INT64: return "INT64";
        case GgufValueType::FLOAT64: return "FLOAT64";
    }
    return "?";
}

int gguf_scalar_size(GgufValueType t) {
    switch (t) {
        case GgufValueType::UINT8:
        case GgufValueType::INT8:
        case GgufValueType::BOOL: return 1;
        case GgufValueType::UINT16:
        case GgufValueType::INT16: return 2;
        case GgufValueType::UINT32:
        case GgufValueType::INT32:
        case GgufValueType::FLOAT32: return 4;
        case GgufValueType::UINT64:
        case GgufValueType::INT64:
        case GgufValueType::FLOAT64: return 8;
        default: return 0;
    }
}

namespace {

// Every type QuantLab reads: id order (ggml.c type_traits: type_name, blck_size, type_size).
struct GgmlTypeTraits {
    GgmlType type;
    const char* name;
    int64_t block, bytes;
};
constexpr GgmlTypeTraits kGgmlTypes[] = {
    {GgmlType::F32, "F32", 1, 4},       {GgmlType::F16, "F16", 1, 2},        {GgmlType::Q4_0, "Q4_0", 32, 18},
    {GgmlType::Q4_1, "Q4_1", 32, 20},   {GgmlType::Q5_0, "Q5_0", 32, 22},    {GgmlType::Q5_1, "Q5_1", 32, 24},
    {GgmlType::Q8_0, "Q8_0", 32, 34},   {GgmlType::Q2_K, "Q2_K", 256, 84},   {GgmlType::Q3_K, "Q3_K", 256, 110},
    {GgmlType::Q4_K, "Q4_K", 256, 144}, {GgmlType::Q5_K, "Q5_K", 256, 176},  {GgmlType::Q6_K, "Q6_K", 256, 210},
    {GgmlType::IQ2_XXS, "IQ2_XXS", 256, 66}, {GgmlType::IQ2_XS, "IQ2_XS", 256, 74}, {GgmlType::IQ3_XXS, "IQ3_XXS", 256, 98},
    {GgmlType::IQ1_S, "IQ1_S", 256, 50}, {GgmlType::IQ4_NL, "IQ4_NL", 32, 18},  {GgmlType::IQ3_S, "IQ3_S", 256, 110},
    {GgmlType::IQ2_S, "IQ2_S", 256, 82}, {GgmlType::IQ4_XS, "IQ4_XS", 256, 136}, {GgmlType::IQ1_M, "IQ1_M", 256, 56},
    {GgmlType::BF16, "BF16", 1, 2},     {GgmlType::TQ1_0, "TQ1_0", 256, 54},   {GgmlType::TQ2_0, "TQ2_0", 256, 66},
    {GgmlType::MXFP4, "MXFP4", 32, 17},
};

const GgmlTypeTraits* traits(GgmlType t) {
    for (const auto& e : kGgmlTypes)
        if (e.type == t) return &e;
    return nullptr;
}

}  // namespace

const char* ggml_type_name(GgmlType t) {
    const GgmlTypeTraits* e = traits(t);
    return e ? e->name : "?";
}

const std::vector<GgmlType>& ggml_known_types() {
    static const std::vector<GgmlType> types = [] {
        std::vector<GgmlType> v;
        for (const auto& e : kGgmlTypes) v.push_back(e.type);
        return v;
    }();
    return types;
}

std::optional<GgmlType> ggml_type_from_id(uint32_t id) {
    for (const auto& e : kGgmlTypes)
        if (static_cast<uint32_t>(e.type) == id) return e.type;
    return std::nullopt;
}

std::optional<GgmlType> ggml_type_from_name(const std::string& name) {
    for (const auto& e : kGgmlTypes) {
        std::string lower = e.name;
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (lower == name) return e.type;
    }
    return std::nullopt;
}

std::string ggml_type_id_name(uint32_t id) {
    // ggml.h enum ggml_type as of llama.cpp in llama-cpp-python 0.3.36 (ids 4, 5, 31..33, 36..38
    // were removed from GGUF files).
    static const char* const kNames[] = {
        "F32",   "F16",    "Q4_0",   "Q4_1",    "",       "",       "Q5_0",  "Q5_1",  "Q8_0",    "Q8_1",  "Q2_K",
        "Q3_K",  "Q4_K",   "Q5_K",   "Q6_K",    "Q8_K",   "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S",
        "IQ2_S", "IQ4_XS", "I8",     "I16",     "I32",    "I64",    "F64",   "IQ1_M", "BF16",    "",      "",
        "",      "TQ1_0",  "TQ2_0",  "",        "",       "",       "MXFP4", "NVFP4", "Q1_0",    "Q2_0"};
    if (id < sizeof(kNames) / sizeof(kNames[0]) && *kNames[id]) return kNames[id];
    return "type " + std::to_string(id);
}

int64_t ggml_block_size(GgmlType t) {
    const GgmlTypeTraits* e = traits(t);
    return e ? e->block : 1;
}

bool ggml_type_is_quantized(GgmlType t) { return t != GgmlType::F32 && t != GgmlType::F16 && t != GgmlType::BF16; }

int64_t ggml_type_size(GgmlType t) {
    const GgmlTypeTraits* e = traits(t);
    return e ? e->bytes : 0;
}

std::optional<uint64_t> ggml_tensor_bytes(GgmlType t, const std::vector<int64_t>& ne) {
    if (ne.empty()) return std::nullopt;
    uint64_t n = 1;
    for (int64_t d : ne) {
        if (d < 0) return std::nullopt;
        if (d != 0 && n > UINT64_MAX / static_cast<uint64_t>(d)) return std::nullopt;
        n *= static_cast<uint64_t>(d);
    }
    if (ne[0] % ggml_block_size(t) != 0) return std::nullopt;
    const uint64_t blocks = n / static_cast<uint64_t>(ggml_block_size(t));
    const uint64_t ts = static_cast<uint64_t>(ggml_type_size(t));
    if (blocks > UINT64_MAX / ts) return std::nullopt;
    return blocks * ts;
}

int64_t GgufTensorInfo::numel() const {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    return n;
}

namespace {

GgufValue scalar(GgufValueType t) {
    GgufValue v;
    v.type = t;
    return v;
}

template <class T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
    std::vector<uint8_t> b(v.size() * sizeof(T));
    if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
    return b;
}

bool is_unsigned(GgufValueType t) {
    return t == GgufValueType::UINT8 || t == GgufValueType::UINT16 || t == GgufValueType::UINT32 ||
           t == GgufValueType::UINT64 || t == GgufValueType::BOOL;
}
bool is_signed(GgufValueType t) {
    return t == GgufValueType::INT8 || t == GgufValueType::INT16 || t == GgufValueType::INT32 ||
           t == GgufValueType::INT64;
}

[[noreturn]] void wrong_type(const std::string& key, const GgufValue& v, const char* expected) {
    std::string got = gguf_value_type_name(v.type);
    if (v.type == GgufValueType::ARRAY) got += std::string(" of ") + gguf_value_type_name(v.array_type);
    throw UserError("GGUF metadata '" + key + "': expected " + expected + ", found " + got);
}

}  // namespace

GgufValue GgufValue::u8(uint8_t x) { auto v = scalar(GgufValueType::UINT8); v.u = x; return v; }
GgufValue GgufValue::u16(uint16_t x) { auto v = scalar(GgufValueType::UINT16); v.u = x; return v; }
GgufValue GgufValue::u32(uint32_t x) { auto v = scalar(GgufValueType::UINT32); v.u = x; return v; }
GgufValue GgufValue::u64(uint64_t x) { auto v = scalar(GgufValueType::UINT64); v.u = x; return v; }
GgufValue GgufValue::i8(int8_t x) { auto v = scalar(GgufValueType::INT8); v.i = x; return v; }
GgufValue GgufValue::i16(int16_t x) { auto v = scalar(GgufValueType::INT16); v.i = x; return v; }
GgufValue GgufValue::i32(int32_t x) { auto v = scalar(GgufValueType::INT32); v.i = x; return v; }
GgufValue GgufValue::i64(int64_t x) { auto v = scalar(GgufValueType::INT64); v.i = x; return v; }
GgufValue GgufValue::f32(float x) { auto v = scalar(GgufValueType::FLOAT32); v.f = x; return v; }
GgufValue GgufValue::f64(double x) { auto v = scalar(GgufValueType::FLOAT64); v.f = x; return v; }
GgufValue GgufValue::boolean(bool x) { auto v = scalar(GgufValueType::BOOL); v.u = x ? 1 : 0; return v; }
GgufValue GgufValue::string(std::string x) { auto v = scalar(GgufValueType::STRING); v.s = std::move(x); return v; }

GgufValue GgufValue::string_array(std::vector<std::string> x) {
    auto v = scalar(GgufValueType::ARRAY);
    v.array_type = GgufValueType::STRING;
    v.count = x.size();
    v.strings = std::move(x);
    return v;
}

GgufValue GgufValue::raw_array(GgufValueType element, uint64_t count, std::vector<uint8_t> bytes) {
    auto v = scalar(GgufValueType::ARRAY);
    v.array_type = element;
    v.count = count;
    v.raw = std::move(bytes);
    return v;
}

GgufValue GgufValue::i32_array(const std::vector<int32_t>& x) { return raw_array(GgufValueType::INT32, x.size(), bytes_of(x)); }
GgufValue GgufValue::f32_array(const std::vector<float>& x) { return raw_array(GgufValueType::FLOAT32, x.size(), bytes_of(x)); }

GgufValue GgufValue::array_of_arrays(std::vector<GgufValue> x) {
    auto v = scalar(GgufValueType::ARRAY);
    v.array_type = GgufValueType::ARRAY;
    v.count = x.size();
    v.items = std::move(x);
    return v;
}

uint64_t GgufValue::as_uint(const std::string& key) const {
    if (is_unsigned(type)) return u;
    if (is_signed(type) && i >= 0) return static_cast<uint64_t>(i);
    wrong_type(key, *this, "an unsigned integer");
}

int64_t GgufValue::as_int(const std::string& key) const {
    if (is_signed(type)) return i;
    if (is_unsigned(type) && u <= static_cast<uint64_t>(INT64_MAX)) return static_cast<int64_t>(u);
    wrong_type(key, *this, "an integer");
}

double GgufValue::as_float(const std::string& key) const {
    if (type == GgufValueType::FLOAT32 || type == GgufValueType::FLOAT64) return f;
    wrong_type(key, *this, "a float");
}

const std::string& GgufValue::as_string(const std::string& key) const {
    if (type == GgufValueType::STRING) return s;
    wrong_type(key, *this, "a string");
}

const std::vector<std::string>& GgufValue::as_strings(const std::string& key) const {
    if (type == GgufValueType::ARRAY && array_type == GgufValueType::STRING) return strings;
    wrong_type(key, *this, "an array of strings");
}

std::vector<int32_t> GgufValue::as_i32s(const std::string& key) const {
    if (type != GgufValueType::ARRAY || array_type != GgufValueType::INT32) wrong_type(key, *this, "an array of INT32");
    std::vector<int32_t> out(count);
    if (count) std::memcpy(out.data(), raw.data(), count * 4);
    return out;
}

std::vector<float> GgufValue::as_f32s(const std::string& key) const {
    if (type != GgufValueType::ARRAY || array_type != GgufValueType::FLOAT32) wrong_type(key, *this, "an array of FLOAT32");
    std::vector<float> out(count);
    if (count) std::memcpy(out.data(), raw.data(), count * 4);
    return out;
}

bool GgufValue::operator==(const GgufValue& o) const {
    if (type != o.type) return false;
    switch (type) {
        case GgufValueType::STRING: return s == o.s;
        case GgufValueType::FLOAT32:
        case GgufValueType::FLOAT64: return std::memcmp(&f, &o.f, sizeof f) == 0;
        case GgufValueType::ARRAY:
            return array_type == o.array_type && count == o.count && strings == o.strings && items == o.items &&
                   raw == o.raw;
        default: return u == o.u && i == o.i;
    }
}

}  // namespace ql
