// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/safetensors_file.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/core/errors.h"
#include "engine/io/atomic_file.h"
#include "engine/io/file_bytes.h"
#include "engine/io/strict_json.h"
#include "engine/io/utf8.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this reader maps it without byte swapping"
#endif

namespace ql {
namespace {

using nlohmann::json;

// tensor.rs MAX_HEADER_SIZE.
constexpr uint64_t kMaxHeaderSize = 100'000'000;

struct DtypeRow {
    SafetensorsDtype dtype;
    const char* name;
    int bits;
};
// tensor.rs Dtype::bitsize, in enum order.
constexpr DtypeRow kDtypes[] = {
    {SafetensorsDtype::BOOL, "BOOL", 8},         {SafetensorsDtype::F4, "F4", 4},
    {SafetensorsDtype::F6_E2M3, "F6_E2M3", 6},   {SafetensorsDtype::F6_E3M2, "F6_E3M2", 6},
    {SafetensorsDtype::U8, "U8", 8},             {SafetensorsDtype::I8, "I8", 8},
    {SafetensorsDtype::F8_E5M2, "F8_E5M2", 8},   {SafetensorsDtype::F8_E4M3, "F8_E4M3", 8},
    {SafetensorsDtype::F8_E8M0, "F8_E8M0", 8},   {SafetensorsDtype::F8_E4M3FNUZ, "F8_E4M3FNUZ", 8},
    {SafetensorsDtype::F8_E5M2FNUZ, "F8_E5M2FNUZ", 8},
    {SafetensorsDtype::I16, "I16", 16},          {SafetensorsDtype::U16, "U16", 16},
    {SafetensorsDtype::F16, "F16", 16},          {SafetensorsDtype::BF16, "BF16", 16},
    {SafetensorsDtype::I32, "I32", 32},          {SafetensorsDtype::U32, "U32", 32},
    {SafetensorsDtype::F32, "F32", 32},          {SafetensorsDtype::C64, "C64", 64},
    {SafetensorsDtype::F64, "F64", 64},          {SafetensorsDtype::I64, "I64", 64},
    {SafetensorsDtype::U64, "U64", 64},
};

const DtypeRow& row(SafetensorsDtype d) { return kDtypes[static_cast<int>(d)]; }

std::string known_dtypes() {
    std::string s;
    for (const DtypeRow& r : kDtypes) s += (s.empty() ? "" : ", ") + std::string(r.name);
    return s;
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

std::string quoted(const std::string& name) { return quoted_name(name); }

[[noreturn]] void fail_file(const std::string& path, const std::string& what) {
    throw UserError(path + ": not a valid safetensors file: " + what);
}
[[noreturn]] void fail_tensor(const std::string& path, const std::string& tensor, const std::string& what) {
    fail_file(path, "tensor " + quoted(tensor) + ": " + what);
}

std::optional<uint64_t> as_u64(const json& j) {
    if (j.is_number_unsigned()) return j.get<uint64_t>();
    if (j.is_number_integer() && j.get<int64_t>() >= 0) return static_cast<uint64_t>(j.get<int64_t>());
    return std::nullopt;
}

uint64_t read_u64_le(const uint8_t* p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

}  // namespace

const char* safetensors_dtype_name(SafetensorsDtype d) { return row(d).name; }
int safetensors_dtype_bits(SafetensorsDtype d) { return row(d).bits; }

std::optional<SafetensorsDtype> safetensors_dtype_from_name(const std::string& name) {
    for (const DtypeRow& r : kDtypes)
        if (name == r.name) return r.dtype;
    return std::nullopt;
}

std::optional<uint64_t> safetensors_byte_size(SafetensorsDtype d, const std::vector<int64_t>& shape) {
    uint64_t n = 1;
    for (int64_t dim : shape) {
        if (dim < 0) return std::nullopt;
        const auto u = static_cast<uint64_t>(dim);
        if (u != 0 && n > std::numeric_limits<uint64_t>::max() / u) return std::nullopt;
        n *= u;
    }
    const auto bits = static_cast<uint64_t>(row(d).bits);
    if (n > std::numeric_limits<uint64_t>::max() / bits) return std::nullopt;
    if ((n * bits) % 8 != 0) return std::nullopt;
    return n * bits / 8;
}

int64_t SafetensorsFile::TensorInfo::numel() const {
    // Unsigned: a validated shape such as [2^62, 3, 0] has intermediate products above INT64_MAX.
    uint64_t n = 1;
    for (int64_t d : shape) n *= static_cast<uint64_t>(d);
    return static_cast<int64_t>(n);
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
    return validate(FileBytes::map(path), path);
}

SafetensorsFile SafetensorsFile::parse(std::string bytes, const std::string& name) {
    return validate(FileBytes::own(std::move(bytes)), name);
}

SafetensorsFile SafetensorsFile::validate(std::shared_ptr<const Storage> storage, const std::string& path) {
    const uint8_t* bytes = storage->data();
    const uint64_t size = storage->size();
    if (size < 8) fail_file(path, "the file has " + std::to_string(size) + " bytes, too few for the 8-byte header length");
    const uint64_t n = read_u64_le(bytes);
    if (n > kMaxHeaderSize)
        fail_file(path, "header length " + std::to_string(n) + " exceeds the limit of " + std::to_string(kMaxHeaderSize) + " bytes");
    if (n > size - 8)
        fail_file(path, "header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(size) + " bytes)");
    const char* header = reinterpret_cast<const char*>(bytes + 8);
    if (const auto bad = first_invalid_utf8(header, n))
        fail_file(path, "header is not valid UTF-8 (byte " + std::to_string(*bad) + " of the header)");
    json root;
    try {
        root = parse_strict_json(header, header + n);
    } catch (const StrictJsonError& e) {
        fail_file(path, std::string("header is not valid JSON: ") + e.what());
    }
    if (!root.is_object()) fail_file(path, "header is not a JSON object");

    SafetensorsFile f;
    f.path_ = path;
    f.data_offset_ = 8 + n;
    const uint64_t data_size = size - 8 - n;
    struct Span {
        uint64_t begin, end;
    };
    std::vector<Span> spans;
    for (auto it = root.begin(); it != root.end(); ++it) {
        const std::string& name = it.key();
        const json& v = it.value();
        if (name == "__metadata__") {
            if (v.is_null()) continue;
            if (!v.is_object()) fail_file(path, "\"__metadata__\" is not an object of strings");
            for (auto m = v.begin(); m != v.end(); ++m) {
                if (!m.value().is_string()) fail_file(path, "\"__metadata__\" value for key " + quoted(m.key()) + " is not a string");
                f.metadata_[m.key()] = m.value().get<std::string>();
            }
            continue;
        }
        if (!v.is_object()) fail_tensor(path, name, "entry is not a JSON object");
        TensorInfo t;
        t.name = name;
        const auto dtype = v.find("dtype");
        const auto shape = v.find("shape");
        const auto offsets = v.find("data_offsets");
        if (dtype == v.end()) fail_tensor(path, name, "missing \"dtype\"");
        if (shape == v.end()) fail_tensor(path, name, "missing \"shape\"");
        if (offsets == v.end()) fail_tensor(path, name, "missing \"data_offsets\"");
        if (!dtype->is_string()) fail_tensor(path, name, "\"dtype\" is not a string");
        const auto d = safetensors_dtype_from_name(dtype->get<std::string>());
        if (!d) fail_tensor(path, name, "unknown dtype " + quoted(dtype->get<std::string>()) + " (known: " + known_dtypes() + ")");
        t.dtype = *d;
        if (!shape->is_array()) fail_tensor(path, name, "\"shape\" is not an array");
        for (const json& dim : *shape) {
            const auto u = as_u64(dim);
            if (!u) fail_tensor(path, name, "\"shape\" must hold non-negative integers, found " + dim.dump().substr(0, 40));
            if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                fail_tensor(path, name, "dimension " + std::to_string(*u) + " is too large");
            t.shape.push_back(static_cast<int64_t>(*u));
        }
        if (!offsets->is_array() || offsets->size() != 2) fail_tensor(path, name, "\"data_offsets\" must be [begin, end]");
        const auto begin = as_u64((*offsets)[0]);
        const auto end = as_u64((*offsets)[1]);
        if (!begin || !end) fail_tensor(path, name, "\"data_offsets\" must hold non-negative integers");
        if (*end < *begin)
            fail_tensor(path, name, "data_offsets [" + std::to_string(*begin) + ", " + std::to_string(*end) + "] end before they begin");
        const auto want = safetensors_byte_size(t.dtype, t.shape);
        if (!want) {
            // Which rule failed (U8's byte size is numel): overflow, or a fraction of a byte.
            const auto numel = safetensors_byte_size(SafetensorsDtype::U8, t.shape);
            const auto bits = static_cast<uint64_t>(row(t.dtype).bits);
            const bool fraction = numel && *numel <= std::numeric_limits<uint64_t>::max() / bits;
            fail_tensor(path, name, "shape " + shape_text(t.shape) + " of " + row(t.dtype).name +
                                        (fraction ? " is not a whole number of bytes" : " overflows"));
        }
        if (*end - *begin != *want)
            fail_tensor(path, name, "shape " + shape_text(t.shape) + " of " + row(t.dtype).name + " needs " +
                                        std::to_string(*want) + " bytes but data_offsets [" + std::to_string(*begin) + ", " +
                                        std::to_string(*end) + "] hold " + std::to_string(*end - *begin));
        t.size = *want;
        f.tensors_.push_back(std::move(t));
        spans.push_back({*begin, *end});
    }

    // Sorted by offsets (tensor.rs sorts before validating; names break ties so that the order is
    // deterministic), the tensors must tile the data area exactly.
    std::vector<size_t> order(f.tensors_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (spans[a].begin != spans[b].begin) return spans[a].begin < spans[b].begin;
        if (spans[a].end != spans[b].end) return spans[a].end < spans[b].end;
        return f.tensors_[a].name < f.tensors_[b].name;
    });
    uint64_t covered = 0;
    const std::string* previous = nullptr;
    std::vector<TensorInfo> sorted;
    sorted.reserve(order.size());
    for (size_t i : order) {
        const std::string& name = f.tensors_[i].name;
        const Span s = spans[i];
        auto where = [&] { return "data_offsets [" + std::to_string(s.begin) + ", " + std::to_string(s.end) + "]"; };
        if (s.begin > covered)
            fail_tensor(path, name, where() + " leave a gap: the data before it ends at " + std::to_string(covered) +
                                        (previous ? " (tensor " + quoted(*previous) + ")" : std::string(" (start of the data)")));
        if (s.begin < covered)
            fail_tensor(path, name, where() + " overlap tensor " + quoted(*previous) + ", which ends at " + std::to_string(covered));
        covered = s.end;
        previous = &f.tensors_[i].name;
        sorted.push_back(f.tensors_[i]);
        // Compared without adding to the header size: a lying offset cannot wrap around.
        if (s.end > data_size)
            fail_tensor(path, name, where() + " run past the end of the file: truncated? The data area holds " +
                                        std::to_string(data_size) + " bytes");
        sorted.back().offset = f.data_offset_ + s.begin;
    }
    if (covered != data_size)
        fail_file(path, std::to_string(data_size - covered) + " bytes at the end of the data area belong to no tensor" +
                       (previous ? " (the last one, " + quoted(*previous) + ", ends at " + std::to_string(covered) + ")" : ""));
    f.tensors_ = std::move(sorted);
    for (size_t i = 0; i < f.tensors_.size(); ++i) f.index_[f.tensors_[i].name] = i;
    f.storage_ = std::move(storage);
    return f;
}

uint64_t SafetensorsFile::file_size() const { return storage_ ? storage_->size() : 0; }

std::vector<std::string> SafetensorsFile::names() const {
    std::vector<std::string> out;
    out.reserve(tensors_.size());
    for (const TensorInfo& t : tensors_) out.push_back(t.name);
    return out;
}

const SafetensorsFile::TensorInfo* SafetensorsFile::find(const std::string& name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

const SafetensorsFile::TensorInfo& SafetensorsFile::info(const std::string& name) const {
    if (const TensorInfo* t = find(name)) return *t;
    throw UserError(path_ + ": no tensor " + quoted(name));
}

TensorBytes SafetensorsFile::bytes(const std::string& name) const { return bytes(info(name)); }

TensorBytes SafetensorsFile::bytes(const TensorInfo& t) const {
    return TensorBytes{storage_->data() + t.offset, t.size, storage_};
}

// ---- writing ------------------------------------------------------------------------------

namespace {

struct WritePlan {
    std::string head;  // length + header
    std::vector<const SafetensorsWriteEntry*> order;
};

std::string json_string(const std::string& s) { return json(s).dump(); }

WritePlan plan_write(const std::vector<SafetensorsWriteEntry>& tensors, const std::map<std::string, std::string>& metadata,
                     const std::string& path) {
    auto bad = [&](const std::string& name, const std::string& what) {
        throw UserError(path + ": cannot write tensor " + quoted(name) + ": " + what);
    };
    std::set<std::string> seen;
    WritePlan p;
    for (const SafetensorsWriteEntry& t : tensors) {
        if (!valid_utf8(t.name)) bad(t.name, "the name is not valid UTF-8");
        if (t.name == "__metadata__") bad(t.name, "the name is reserved for the metadata");
        if (!seen.insert(t.name).second) bad(t.name, "the name appears twice");
        const auto want = safetensors_byte_size(t.dtype, t.shape);
        if (!want) bad(t.name, "shape " + shape_text(t.shape) + " of " + row(t.dtype).name + " is not a valid size");
        if (*want != t.size)
            bad(t.name, "shape " + shape_text(t.shape) + " of " + row(t.dtype).name + " needs " + std::to_string(*want) +
                            " bytes, given " + std::to_string(t.size));
        if (t.size > 0 && t.data == nullptr) bad(t.name, "no data");
        p.order.push_back(&t);
    }
    for (const auto& [k, v] : metadata)
        if (!valid_utf8(k) || !valid_utf8(v)) throw UserError(path + ": cannot write metadata " + quoted(k) + ": not valid UTF-8");
    // tensor.rs prepare(): descending dtype (its alignment order), then name.
    std::sort(p.order.begin(), p.order.end(), [](const SafetensorsWriteEntry* a, const SafetensorsWriteEntry* b) {
        if (a->dtype != b->dtype) return a->dtype > b->dtype;
        return a->name < b->name;
    });
    std::string h = "{";
    if (!metadata.empty()) {
        h += "\"__metadata__\":{";
        bool first = true;
        for (const auto& [k, v] : metadata) {
            h += (first ? "" : ",") + json_string(k) + ":" + json_string(v);
            first = false;
        }
        h += "}";
    }
    uint64_t offset = 0;
    for (const SafetensorsWriteEntry* t : p.order) {
        if (h.size() > 1) h += ",";
        h += json_string(t->name) + ":{\"dtype\":\"" + row(t->dtype).name + "\",\"shape\":[";
        for (size_t i = 0; i < t->shape.size(); ++i) h += (i ? "," : "") + std::to_string(t->shape[i]);
        h += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + t->size) + "]}";
        offset += t->size;
    }
    h += "}";
    h.append((8 - h.size() % 8) % 8, ' ');
    if (h.size() > kMaxHeaderSize) throw UserError(path + ": cannot write: the header would exceed " + std::to_string(kMaxHeaderSize) + " bytes");
    p.head.resize(8);
    uint64_t len = h.size();
    for (int i = 0; i < 8; ++i, len >>= 8) p.head[i] = static_cast<char>(len & 0xFF);
    p.head += h;
    return p;
}

}  // namespace

void write_safetensors(const std::string& path, std::vector<SafetensorsWriteEntry> tensors,
                       const std::map<std::string, std::string>& metadata) {
    const WritePlan p = plan_write(tensors, metadata, path);
    AtomicFileWriter out(path);
    out.write(p.head.data(), p.head.size());
    for (const SafetensorsWriteEntry* t : p.order) out.write(t->data, t->size);
    out.commit();
}

std::string serialize_safetensors(std::vector<SafetensorsWriteEntry> tensors, const std::map<std::string, std::string>& metadata) {
    const WritePlan p = plan_write(tensors, metadata, "<memory>");
    std::string out = p.head;
    for (const SafetensorsWriteEntry* t : p.order) out.append(static_cast<const char*>(t->data), t->size);
    return out;
}

}  // namespace ql
