// SPDX-License-Identifier: GPL-3.0-or-later
// GgufWriter (gguf_file.h): header and tensor infos serialised in memory, tensor data streamed
// through AtomicFileWriter ("<path>.partial", fsync, rename).
#include <sys/stat.h>

#include <cstring>
#include <algorithm>
#include <set>

#include "engine/core/errors.h"
#include "engine/io/atomic_file.h"
#include "engine/io/gguf_file.h"

namespace ql {
namespace {

void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
void put_u64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
void put_string(std::string& out, const std::string& s) {
    put_u64(out, s.size());
    out += s;
}

void put_value_body(std::string& out, const GgufValue& v, const std::string& key) {
    switch (v.type) {
        case GgufValueType::STRING: put_string(out, v.s); return;
        case GgufValueType::FLOAT32: {
            const float f = static_cast<float>(v.f);
            out.append(reinterpret_cast<const char*>(&f), 4);
            return;
        }
        case GgufValueType::FLOAT64: out.append(reinterpret_cast<const char*>(&v.f), 8); return;
        case GgufValueType::ARRAY: {
            put_u32(out, static_cast<uint32_t>(v.array_type));
            put_u64(out, v.count);
            if (v.array_type == GgufValueType::STRING) {
                if (v.strings.size() != v.count) throw UserError("GGUF metadata '" + key + "': count does not match the strings");
                for (const auto& s : v.strings) put_string(out, s);
            } else if (v.array_type == GgufValueType::ARRAY) {
                if (v.items.size() != v.count) throw UserError("GGUF metadata '" + key + "': count does not match the items");
                for (const auto& item : v.items) {
                    if (item.type != GgufValueType::ARRAY) throw UserError("GGUF metadata '" + key + "': an item of an array of arrays is not an array");
                    put_value_body(out, item, key);
                }
            } else {
                const int es = gguf_scalar_size(v.array_type);
                if (es == 0 || v.raw.size() != v.count * static_cast<uint64_t>(es))
                    throw UserError("GGUF metadata '" + key + "': array bytes do not match " + std::to_string(v.count) +
                                    " elements of " + gguf_value_type_name(v.array_type));
                out.append(reinterpret_cast<const char*>(v.raw.data()), v.raw.size());
            }
            return;
        }
        default: {
            const int n = gguf_scalar_size(v.type);
            if (n == 0) throw UserError("GGUF metadata '" + key + "': unknown value type");
            // Little-endian host: the low n bytes of the 64-bit slot are the value.
            const uint64_t bits = (v.type == GgufValueType::INT8 || v.type == GgufValueType::INT16 ||
                                   v.type == GgufValueType::INT32 || v.type == GgufValueType::INT64)
                                      ? static_cast<uint64_t>(v.i)
                                      : v.u;
            out.append(reinterpret_cast<const char*>(&bits), static_cast<size_t>(n));
        }
    }
}

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

struct GgufWriter::Impl {
    std::string path;
    std::unique_ptr<AtomicFileWriter> out;
    GgufMetadata metadata;
    std::set<std::string> keys, names;
    std::vector<GgufTensorInfo> tensors;
    uint64_t data_end = 0;       // declared data size (unpadded end of the last tensor)
    uint32_t alignment = kGgufDefaultAlignment;
    bool header_written = false;
    size_t current = 0;          // tensor being written
    uint64_t current_done = 0;   // its bytes written so far
    uint64_t written = 0;        // bytes written to the file

    void write(const void* p, uint64_t n) {
        out->write(p, n);
        written += n;
    }
    void pad_to(uint64_t offset_in_data, uint64_t data_start) {
        static const char zeros[256] = {};
        uint64_t need = data_start + offset_in_data - written;
        while (need > 0) {
            const uint64_t n = need < sizeof zeros ? need : sizeof zeros;
            write(zeros, n);
            need -= n;
        }
    }
    uint64_t data_start = 0;

    void write_header() {
        std::string h;
        h += "GGUF";
        put_u32(h, kGgufVersion);
        put_u64(h, tensors.size());
        put_u64(h, metadata.size());
        for (const auto& [key, value] : metadata) {
            put_string(h, key);
            put_u32(h, static_cast<uint32_t>(value.type));
            put_value_body(h, value, key);
        }
        for (const auto& t : tensors) {
            put_string(h, t.name);
            put_u32(h, static_cast<uint32_t>(t.ne.size()));
            for (int64_t d : t.ne) put_u64(h, static_cast<uint64_t>(d));
            put_u32(h, static_cast<uint32_t>(t.type));
            put_u64(h, t.offset);
        }
        data_start = align_up(h.size(), alignment);
        h.resize(data_start, '\0');
        write(h.data(), h.size());
        header_written = true;
    }
};

GgufWriter::GgufWriter(const std::string& path, bool force) : impl_(std::make_unique<Impl>()) {
    impl_->path = path;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) throw UserError(path + ": is a folder, expected a .gguf file name");
        if (!force) throw UserError(path + ": already exists (use --force to overwrite it)");
    }
    impl_->out = std::make_unique<AtomicFileWriter>(path);
}

GgufWriter::~GgufWriter() = default;

const std::string& GgufWriter::path() const { return impl_->path; }
uint64_t GgufWriter::bytes_written() const { return impl_->written; }

void GgufWriter::add_metadata(const std::string& key, GgufValue value) {
    if (impl_->header_written) throw UserError(impl_->path + ": metadata '" + key + "' added after tensor data");
    if (!impl_->keys.insert(key).second) throw UserError(impl_->path + ": metadata key '" + key + "' given twice");
    if (key == "general.alignment") {
        if (value.type != GgufValueType::UINT32 || value.u == 0 || (value.u & (value.u - 1)) != 0)
            throw UserError(impl_->path + ": general.alignment must be a UINT32 power of two");
        if (!impl_->tensors.empty()) throw UserError(impl_->path + ": general.alignment must come before the tensors");
        impl_->alignment = static_cast<uint32_t>(value.u);
    }
    impl_->metadata.emplace_back(key, std::move(value));
}

uint64_t GgufWriter::add_tensor(const std::string& name, const std::vector<int64_t>& ne, GgmlType type) {
    if (impl_->header_written) throw UserError(impl_->path + ": tensor '" + name + "' declared after tensor data");
    if (ne.empty() || ne.size() > 4)
        throw UserError(impl_->path + ": tensor '" + name + "': " + std::to_string(ne.size()) + " dimensions (1 to 4 allowed)");
    const auto size = ggml_tensor_bytes(type, ne);
    if (!size)
        throw UserError(impl_->path + ": tensor '" + name + "': first dimension " + std::to_string(ne[0]) +
                        " is not a multiple of the " + ggml_type_name(type) + " block of " +
                        std::to_string(ggml_block_size(type)) + " (or a dimension is negative)");
    if (!impl_->names.insert(name).second) throw UserError(impl_->path + ": tensor '" + name + "' declared twice");
    GgufTensorInfo t;
    t.name = name;
    t.ne = ne;
    t.type = type;
    t.offset = align_up(impl_->data_end, impl_->alignment);
    t.size = *size;
    impl_->data_end = t.offset + t.size;
    impl_->tensors.push_back(std::move(t));
    return *size;
}

void GgufWriter::write_tensor_data(const void* data, uint64_t size) {
    Impl& m = *impl_;
    if (!m.header_written) m.write_header();
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
        if (m.current >= m.tensors.size()) throw UserError(m.path + ": more tensor data than the tensors declared");
        const GgufTensorInfo& t = m.tensors[m.current];
        if (m.current_done == 0) m.pad_to(t.offset, m.data_start);
        const uint64_t n = std::min(size, t.size - m.current_done);
        m.write(p, n);
        p += n;
        size -= n;
        m.current_done += n;
        if (m.current_done == t.size) {
            ++m.current;
            m.current_done = 0;
        }
    }
    // Zero-sized tensors that follow need no bytes: step over them.
    while (m.current < m.tensors.size() && m.tensors[m.current].size == 0 && m.current_done == 0) ++m.current;
}

void GgufWriter::commit() {
    Impl& m = *impl_;
    if (!m.header_written) m.write_header();
    while (m.current < m.tensors.size() && m.tensors[m.current].size == 0) ++m.current;
    if (m.current != m.tensors.size())
        throw UserError(m.path + ": tensor '" + m.tensors[m.current].name + "' was declared but its data not written");
    // The data section ends padded to the alignment, as gguf-py writes it.
    m.pad_to(align_up(m.data_end, m.alignment), m.data_start);
    m.out->commit();
}

}  // namespace ql
