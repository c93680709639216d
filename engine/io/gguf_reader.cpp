// SPDX-License-Identifier: GPL-3.0-or-later
// GgufFile (gguf_file.h): a memory-mapped GGUF file, validated field by field before use so that
// a truncated or lying file is a UserError naming the file and the field, never a crash.
#include <algorithm>
#include <cstring>

#include "engine/core/errors.h"
#include "engine/io/file_bytes.h"
#include "engine/io/gguf_decode.h"
#include "engine/io/gguf_file.h"

namespace ql {

namespace {

// Nested arrays deeper than this are refused (a lying file could recurse without end).
constexpr int kMaxArrayDepth = 8;

class Cursor {
public:
    Cursor(const uint8_t* p, uint64_t n, const std::string& file) : p_(p), n_(n), file_(file) {}
    uint64_t pos() const { return pos_; }
    [[noreturn]] void fail(const std::string& what) const {
        throw UserError(file_ + ": " + what + " (at byte " + std::to_string(pos_) + ")");
    }
    void need(uint64_t k, const std::string& what) const {
        if (k > n_ - pos_) fail("truncated: " + what + " needs " + std::to_string(k) + " bytes, " + std::to_string(n_ - pos_) + " left");
    }
    template <class T>
    T get(const std::string& what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, p_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    std::string str(const std::string& what) {
        const uint64_t len = get<uint64_t>(what + " length");
        need(len, what);
        std::string s(reinterpret_cast<const char*>(p_ + pos_), len);
        pos_ += len;
        return s;
    }
    const uint8_t* take(uint64_t k, const std::string& what) {
        need(k, what);
        const uint8_t* q = p_ + pos_;
        pos_ += k;
        return q;
    }
    uint64_t left() const { return n_ - pos_; }

private:
    const uint8_t* p_;
    uint64_t n_, pos_ = 0;
    const std::string& file_;
};

GgufValueType value_type(Cursor& c, const std::string& what) {
    const uint32_t t = c.get<uint32_t>(what + " type");
    if (t > static_cast<uint32_t>(GgufValueType::FLOAT64)) c.fail(what + ": unknown value type " + std::to_string(t));
    return static_cast<GgufValueType>(t);
}

GgufValue read_scalar(Cursor& c, GgufValueType t, const std::string& what) {
    GgufValue v;
    v.type = t;
    switch (t) {
        case GgufValueType::UINT8: v.u = c.get<uint8_t>(what); break;
        case GgufValueType::UINT16: v.u = c.get<uint16_t>(what); break;
        case GgufValueType::UINT32: v.u = c.get<uint32_t>(what); break;
        case GgufValueType::UINT64: v.u = c.get<uint64_t>(what); break;
        case GgufValueType::INT8: v.i = c.get<int8_t>(what); break;
        case GgufValueType::INT16: v.i = c.get<int16_t>(what); break;
        case GgufValueType::INT32: v.i = c.get<int32_t>(what); break;
        case GgufValueType::INT64: v.i = c.get<int64_t>(what); break;
        case GgufValueType::FLOAT32: v.f = c.get<float>(what); break;
        case GgufValueType::FLOAT64: v.f = c.get<double>(what); break;
        case GgufValueType::BOOL: {
            const uint8_t b = c.get<uint8_t>(what);
            if (b > 1) c.fail(what + ": BOOL value " + std::to_string(b) + " (expected 0 or 1)");
            v.u = b;
            break;
        }
        case GgufValueType::STRING: v.s = c.str(what); break;
        default: c.fail(what + ": not a scalar");
    }
    return v;
}

GgufValue read_array(Cursor& c, const std::string& what, int depth) {
    if (depth > kMaxArrayDepth) c.fail(what + ": arrays nested deeper than " + std::to_string(kMaxArrayDepth));
    GgufValue v;
    v.type = GgufValueType::ARRAY;
    v.array_type = value_type(c, what + " element");
    v.count = c.get<uint64_t>(what + " count");
    if (v.array_type == GgufValueType::STRING) {
        // Every string takes at least its 8-byte length: a count beyond that is a lie.
        if (v.count > c.left() / 8) c.fail(what + ": count " + std::to_string(v.count) + " does not fit the file");
        v.strings.reserve(v.count);
        for (uint64_t k = 0; k < v.count; ++k) v.strings.push_back(c.str(what + "[" + std::to_string(k) + "]"));
    } else if (v.array_type == GgufValueType::ARRAY) {
        if (v.count > c.left() / 12) c.fail(what + ": count " + std::to_string(v.count) + " does not fit the file");
        for (uint64_t k = 0; k < v.count; ++k) v.items.push_back(read_array(c, what + "[" + std::to_string(k) + "]", depth + 1));
    } else {
        const uint64_t es = static_cast<uint64_t>(gguf_scalar_size(v.array_type));
        if (v.count > c.left() / es) c.fail(what + ": count " + std::to_string(v.count) + " does not fit the file");
        const uint8_t* p = c.take(v.count * es, what);
        v.raw.assign(p, p + v.count * es);
        if (v.array_type == GgufValueType::BOOL)
            for (uint8_t b : v.raw)
                if (b > 1) c.fail(what + ": BOOL element " + std::to_string(b) + " (expected 0 or 1)");
    }
    return v;
}

}  // namespace

GgufFile GgufFile::open(const std::string& path) {
    GgufFile f;
    f.path_ = path;
    f.storage_ = FileBytes::map(path);
    f.validate();
    return f;
}

GgufFile GgufFile::parse(std::string bytes, const std::string& name) {
    GgufFile f;
    f.path_ = name;
    f.storage_ = FileBytes::own(std::move(bytes));
    f.validate();
    return f;
}

void GgufFile::validate() {
    Cursor c(storage_->data(), storage_->size(), path_);
    c.need(4, "magic");
    if (std::memcmp(c.take(4, "magic"), "GGUF", 4) != 0) c.fail("bad magic: not a GGUF file (expected \"GGUF\")");
    version_ = c.get<uint32_t>("version");
    if (version_ != 2 && version_ != 3) c.fail("unsupported GGUF version " + std::to_string(version_) + " (expected 3)");
    const uint64_t n_tensors = c.get<uint64_t>("tensor count");
    const uint64_t n_kv = c.get<uint64_t>("metadata count");
    // Each KV takes at least 8 + 4 + 1 bytes, each tensor info 8 + 4 + 8 + 4 + 8.
    if (n_kv > c.left() / 13) c.fail("metadata count " + std::to_string(n_kv) + " does not fit the file");
    if (n_tensors > c.left() / 32) c.fail("tensor count " + std::to_string(n_tensors) + " does not fit the file");

    for (uint64_t k = 0; k < n_kv; ++k) {
        const std::string key = c.str("metadata key #" + std::to_string(k));
        const std::string what = "metadata '" + key + "'";
        const GgufValueType t = value_type(c, what);
        GgufValue v = t == GgufValueType::ARRAY ? read_array(c, what, 0) : read_scalar(c, t, what);
        if (!key_index_.emplace(key, metadata_.size()).second) c.fail("metadata key '" + key + "' appears twice");
        metadata_.emplace_back(key, std::move(v));
    }
    if (const GgufValue* a = find("general.alignment")) {
        if (a->type != GgufValueType::UINT32 || a->u == 0 || (a->u & (a->u - 1)) != 0)
            throw UserError(path_ + ": metadata 'general.alignment': expected a UINT32 power of two");
        alignment_ = static_cast<uint32_t>(a->u);
    }

    for (uint64_t k = 0; k < n_tensors; ++k) {
        GgufTensorInfo t;
        t.name = c.str("tensor name #" + std::to_string(k));
        const std::string what = "tensor '" + t.name + "'";
        const uint32_t nd = c.get<uint32_t>(what + " dimension count");
        if (nd == 0 || nd > 4) c.fail(what + ": " + std::to_string(nd) + " dimensions (1 to 4 allowed)");
        for (uint32_t d = 0; d < nd; ++d) {
            const uint64_t ne = c.get<uint64_t>(what + " dimension");
            if (ne > static_cast<uint64_t>(INT64_MAX)) c.fail(what + ": dimension " + std::to_string(ne) + " too large");
            t.ne.push_back(static_cast<int64_t>(ne));
        }
        const uint32_t type = c.get<uint32_t>(what + " type");
        const auto gt = ggml_type_from_id(type);
        if (!gt)
            c.fail(what + ": ggml type " + std::to_string(type) + " (" + ggml_type_id_name(type) +
                   ") is not a type QuantLab reads");
        t.type = *gt;
        t.offset = c.get<uint64_t>(what + " offset");
        const auto size = ggml_tensor_bytes(t.type, t.ne);
        if (!size)
            c.fail(what + ": dimensions do not fit type " + ggml_type_name(t.type) + " (first dimension " +
                   std::to_string(t.ne[0]) + " not a multiple of its block, or the size overflows)");
        t.size = *size;
        if (!tensor_index_.emplace(t.name, tensors_.size()).second) c.fail(what + " appears twice");
        tensors_.push_back(std::move(t));
    }

    data_offset_ = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
    const uint64_t data_size = storage_->size() >= data_offset_ ? storage_->size() - data_offset_ : 0;
    if (!tensors_.empty() && storage_->size() < data_offset_)
        throw UserError(path_ + ": truncated: the data section (at byte " + std::to_string(data_offset_) + ") is missing");
    // Offsets: aligned, inside the data section, no two tensors overlapping.
    std::vector<const GgufTensorInfo*> by_offset;
    for (const auto& t : tensors_) {
        const std::string what = path_ + ": tensor '" + t.name + "'";
        if (t.offset % alignment_ != 0)
            throw UserError(what + ": offset " + std::to_string(t.offset) + " is not a multiple of the alignment " + std::to_string(alignment_));
        if (t.offset > data_size || t.size > data_size - t.offset)
            throw UserError(what + ": data at offset " + std::to_string(t.offset) + " + " + std::to_string(t.size) +
                            " bytes lies past the end of the data section (" + std::to_string(data_size) +
                            " bytes): truncated file or wrong offset");
        by_offset.push_back(&t);
    }
    std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->offset < b->offset; });
    for (size_t k = 1; k < by_offset.size(); ++k)
        if (by_offset[k - 1]->offset + by_offset[k - 1]->size > by_offset[k]->offset && by_offset[k - 1]->size > 0)
            throw UserError(path_ + ": tensor '" + by_offset[k]->name + "' overlaps tensor '" + by_offset[k - 1]->name + "'");
}

const GgufValue* GgufFile::find(const std::string& key) const {
    const auto it = key_index_.find(key);
    return it == key_index_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufValue& GgufFile::get(const std::string& key) const {
    const GgufValue* v = find(key);
    if (!v) throw UserError(path_ + ": metadata '" + key + "' is missing");
    return *v;
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
    const auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensorInfo& GgufFile::tensor(const std::string& name) const {
    const GgufTensorInfo* t = find_tensor(name);
    if (!t) throw UserError(path_ + ": tensor '" + name + "' is missing");
    return *t;
}

const uint8_t* GgufFile::tensor_data(const GgufTensorInfo& t) const { return storage_->data() + data_offset_ + t.offset; }

std::vector<float> GgufFile::dequantize(const GgufTensorInfo& t) const {
    const int64_t n = t.numel();
    std::vector<float> out(static_cast<size_t>(n));
    if (n == 0) return out;
    decode_gguf_tensor(tensor_data(t), n / t.ne[0], t.ne[0], t.type, out.data(), path_ + ": tensor '" + t.name + "'");
    return out;
}

}  // namespace ql
