// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/imatrix_file.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "engine/core/errors.h"
#include "engine/io/atomic_file.h"
#include "engine/io/file_bytes.h"
#include "engine/io/gguf_file.h"
#include "engine/core/string_suffix.h"

namespace ql {

ImatrixFormat parse_imatrix_format(const std::string& name) {
    if (name == "gguf") return ImatrixFormat::Gguf;
    if (name == "dat") return ImatrixFormat::Legacy;
    throw UserError("imatrix: unknown output format '" + name + "' (gguf or dat)");
}

const char* imatrix_format_name(ImatrixFormat f) { return f == ImatrixFormat::Gguf ? "gguf" : "dat"; }

namespace {

constexpr const char* kDatasets = "imatrix.datasets";
constexpr const char* kChunkCount = "imatrix.chunk_count";
constexpr const char* kChunkSize = "imatrix.chunk_size";

std::vector<float> f32_values(const GgufFile& f, const GgufTensorInfo& t) {
    if (t.type != GgmlType::F32)
        throw UserError(f.path() + ": tensor '" + t.name + "': type " + ggml_type_name(t.type) + ", expected F32 (imatrix)");
    return f.dequantize(t);
}

ImportanceMatrix from_gguf(const GgufFile& f) {
    ImportanceMatrix m;
    // llama-quantize refuses a non-legacy file without these three (load_imatrix: "missing
    // imatrix metadata").
    for (const char* key : {kDatasets, kChunkCount, kChunkSize}) f.get(key);
    try {
        m.datasets = f.get(kDatasets).as_strings(kDatasets);
        m.chunk_count = static_cast<int64_t>(f.get(kChunkCount).as_uint(kChunkCount));
        m.chunk_size = static_cast<int64_t>(f.get(kChunkSize).as_uint(kChunkSize));
    } catch (const UserError& e) {
        throw UserError(f.path() + ": " + e.what());
    }
    std::map<std::string, std::pair<const GgufTensorInfo*, const GgufTensorInfo*>> sums_counts;
    std::map<std::string, const GgufTensorInfo*> sums;
    for (const GgufTensorInfo& t : f.tensors()) {
        if (ends_with(t.name, ".in_sum2"))
            sums_counts[t.name.substr(0, t.name.size() - 8)].first = &t;
        else if (ends_with(t.name, ".counts"))
            sums_counts[t.name.substr(0, t.name.size() - 7)].second = &t;
        else if (ends_with(t.name, ".in_sum"))
            sums[t.name.substr(0, t.name.size() - 7)] = &t;
    }
    if (sums_counts.empty()) throw UserError(f.path() + ": no imatrix entries (no '<name>.in_sum2' tensors)");
    for (const auto& [name, sc] : sums_counts) {
        if (!sc.first || !sc.second)
            throw UserError(f.path() + ": entry '" + name + "': " + (sc.first ? "'.counts'" : "'.in_sum2'") + " tensor is missing");
        const std::vector<float> s2 = f32_values(f, *sc.first), c = f32_values(f, *sc.second);
        if (c.empty() || s2.empty() || s2.size() % c.size() != 0)
            throw UserError(f.path() + ": entry '" + name + "': " + std::to_string(s2.size()) + " sums for " + std::to_string(c.size()) +
                            " counts (expected a whole row of sums per count)");
        ImportanceEntry e;
        e.name = name;
        e.columns = static_cast<int64_t>(s2.size() / c.size());
        e.sum_sq.assign(s2.begin(), s2.end());
        for (float v : c) {
            if (!std::isfinite(v) || v < 0 || v > 9.0e15f)
                throw UserError(f.path() + ": tensor '" + name + ".counts': count " + std::to_string(v) + " is not a token count");
            e.counts.push_back(std::lround(v));
        }
        for (double v : e.sum_sq)
            if (!std::isfinite(v)) throw UserError(f.path() + ": tensor '" + name + ".in_sum2': non-finite value");
        if (const auto it = sums.find(name); it != sums.end()) {
            const std::vector<float> s = f32_values(f, *it->second);
            if (s.size() == s2.size()) e.sum.assign(s.begin(), s.end());
        }
        m.entries.push_back(std::move(e));
    }
    m.sort();
    return m;
}

class LegacyReader {
public:
    LegacyReader(const uint8_t* p, uint64_t n, const std::string& file) : p_(p), n_(n), file_(file) {}
    [[noreturn]] void fail(const std::string& what) const {
        throw UserError(file_ + ": " + what + " (legacy imatrix, at byte " + std::to_string(pos_) + ")");
    }
    int32_t i32(const std::string& what) {
        if (n_ - pos_ < 4) fail("truncated: " + what);
        int32_t v;
        std::memcpy(&v, p_ + pos_, 4);
        pos_ += 4;
        return v;
    }
    const uint8_t* take(uint64_t k, const std::string& what) {
        if (k > n_ - pos_) fail("truncated: " + what + " needs " + std::to_string(k) + " bytes, " + std::to_string(n_ - pos_) + " left");
        const uint8_t* q = p_ + pos_;
        pos_ += k;
        return q;
    }
    bool at_end() const { return pos_ == n_; }
    uint64_t left() const { return n_ - pos_; }

private:
    const uint8_t* p_;
    uint64_t n_, pos_ = 0;
    const std::string& file_;
};

ImportanceMatrix from_legacy(const uint8_t* data, uint64_t size, const std::string& file) {
    LegacyReader r(data, size, file);
    ImportanceMatrix m;
    const int32_t n_entries = r.i32("entry count");
    if (n_entries < 1) r.fail("entry count " + std::to_string(n_entries) + " (no data: not an imatrix file)");
    // Each entry takes at least 4 + 1 + 4 + 4 + 4 bytes.
    if (static_cast<uint64_t>(n_entries) > r.left() / 17) r.fail("entry count " + std::to_string(n_entries) + " does not fit the file");
    for (int32_t i = 0; i < n_entries; ++i) {
        const std::string what = "entry " + std::to_string(i + 1);
        const int32_t len = r.i32(what + " name length");
        if (len < 1 || len > 4096) r.fail(what + ": name length " + std::to_string(len));
        ImportanceEntry e;
        const uint8_t* name = r.take(static_cast<uint64_t>(len), what + " name");
        e.name.assign(reinterpret_cast<const char*>(name), static_cast<size_t>(len));
        if (e.name.find('\0') != std::string::npos) e.name.resize(e.name.find('\0'));  // the C++ reader stops at a NUL
        const int32_t ncall = r.i32(what + " ('" + e.name + "') call count");
        const int32_t nval = r.i32(what + " ('" + e.name + "') value count");
        if (nval < 1) r.fail(what + " ('" + e.name + "'): value count " + std::to_string(nval));
        if (ncall < 0) r.fail(what + " ('" + e.name + "'): call count " + std::to_string(ncall));
        const uint8_t* values = r.take(static_cast<uint64_t>(nval) * 4, what + " ('" + e.name + "') values");
        e.columns = nval;
        e.sum_sq.resize(static_cast<size_t>(nval));
        for (int32_t k = 0; k < nval; ++k) {
            float v;
            std::memcpy(&v, values + 4 * static_cast<size_t>(k), 4);
            if (!std::isfinite(v)) r.fail(what + " ('" + e.name + "'): non-finite value at " + std::to_string(k));
            e.sum_sq[static_cast<size_t>(k)] = v;
        }
        e.counts = {ncall};
        // common_imatrix_load_legacy keeps the last of repeated names (a std::map).
        for (auto& old : m.entries)
            if (old.name == e.name) old = e;
        if (!m.find(e.name)) m.entries.push_back(std::move(e));
        m.sort();
    }
    if (!r.at_end()) {  // optional trailer: chunk count, then the dataset name
        m.chunk_count = r.i32("chunk count");
        if (!r.at_end()) {
            const int32_t len = r.i32("dataset name length");
            if (len < 0 || static_cast<uint64_t>(len) > r.left()) r.fail("dataset name length " + std::to_string(len));
            if (len > 0) {
                const uint8_t* s = r.take(static_cast<uint64_t>(len), "dataset name");
                std::string d(reinterpret_cast<const char*>(s), static_cast<size_t>(len));
                if (d.find('\0') != std::string::npos) d.resize(d.find('\0'));
                m.datasets.push_back(d);
            }
        }
    }
    m.chunk_size = 0;
    return m;
}

ImportanceMatrix parse_any(std::shared_ptr<const FileBytes> bytes, const std::string& name) {
    if (bytes->size() >= 4 && std::memcmp(bytes->data(), "GGUF", 4) == 0) {
        const std::string copy(reinterpret_cast<const char*>(bytes->data()), bytes->size());
        return from_gguf(GgufFile::parse(copy, name));
    }
    return from_legacy(bytes->data(), bytes->size(), name);
}

void put_i32(std::string& out, int32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }

}  // namespace

ImportanceMatrix read_imatrix(const std::string& path) {
    std::shared_ptr<const FileBytes> bytes = FileBytes::map(path);
    if (bytes->size() >= 4 && std::memcmp(bytes->data(), "GGUF", 4) == 0) return from_gguf(GgufFile::open(path));
    return from_legacy(bytes->data(), bytes->size(), path);
}

ImportanceMatrix parse_imatrix(const std::string& bytes, const std::string& name) {
    return parse_any(FileBytes::own(bytes), name);
}

std::string legacy_imatrix_bytes(const ImportanceMatrix& m) {
    std::string out;
    std::vector<const ImportanceEntry*> stored;
    for (const ImportanceEntry& e : m.entries) {
        bool any = false;
        for (int64_t c : e.counts) any |= c != 0;
        if (any) stored.push_back(&e);  // save_imatrix_legacy skips entries without data
    }
    put_i32(out, static_cast<int32_t>(stored.size()));
    for (const ImportanceEntry* e : stored) {
        put_i32(out, static_cast<int32_t>(e->name.size()));
        out += e->name;
        int64_t max_count = 0;
        for (int64_t c : e->counts) max_count = std::max(max_count, c);
        // ceil(max / chunk_size) "to avoid accidental zeros"; a legacy-read matrix holds ncall itself.
        const int64_t ncall = m.chunk_size > 0 ? (max_count + m.chunk_size - 1) / m.chunk_size : max_count;
        put_i32(out, static_cast<int32_t>(ncall));
        const int64_t nval = static_cast<int64_t>(e->sum_sq.size());
        put_i32(out, static_cast<int32_t>(nval));
        const int64_t nmat = e->matrices();
        for (int64_t i = 0; i < nval; ++i) {
            float count = static_cast<float>(e->counts[static_cast<size_t>(i / (nval / nmat))]);
            float value = static_cast<float>(e->sum_sq[static_cast<size_t>(i)]);
            if (count == 0.0f) value = count = 1.0f;  // "store 1 for partial data"
            // A matrix read from a legacy file already holds the stored values (chunk_size 0).
            const float v = m.chunk_size > 0 ? (value / count) * static_cast<float>(ncall) : value;
            out.append(reinterpret_cast<const char*>(&v), 4);
        }
    }
    put_i32(out, static_cast<int32_t>(m.chunk_count));
    const std::string dataset = m.datasets.empty() ? std::string() : m.datasets.back();
    put_i32(out, static_cast<int32_t>(dataset.size()));
    out += dataset;
    return out;
}

void write_imatrix(const ImportanceMatrix& m, const std::string& path, ImatrixFormat format, bool force) {
    if (std::error_code ec; std::filesystem::exists(path, ec) && !force)
        throw UserError(path + ": already exists (use --force to overwrite it)");
    if (m.entries.empty()) throw UserError(path + ": the importance matrix has no entries (nothing was collected)");
    if (format == ImatrixFormat::Legacy) {
        write_file_atomically(path, legacy_imatrix_bytes(m));
        return;
    }
    GgufWriter w(path, force);
    w.add_metadata("general.type", GgufValue::string("imatrix"));
    w.add_metadata(kDatasets, GgufValue::string_array(m.datasets));
    w.add_metadata(kChunkCount, GgufValue::u32(static_cast<uint32_t>(m.chunk_count)));
    w.add_metadata(kChunkSize, GgufValue::u32(static_cast<uint32_t>(m.chunk_size)));
    for (const ImportanceEntry& e : m.entries) {
        const int64_t nmat = e.matrices();
        w.add_tensor(e.name + ".in_sum2", {e.columns, nmat}, GgmlType::F32);
        w.add_tensor(e.name + ".counts", {1, nmat}, GgmlType::F32);
        if (!e.sum.empty()) w.add_tensor(e.name + ".in_sum", {e.columns, nmat}, GgmlType::F32);
    }
    for (const ImportanceEntry& e : m.entries) {
        std::vector<float> s2(e.sum_sq.begin(), e.sum_sq.end());
        std::vector<float> c(e.counts.begin(), e.counts.end());
        w.write_tensor_data(s2.data(), s2.size() * 4);
        w.write_tensor_data(c.data(), c.size() * 4);
        if (!e.sum.empty()) {
            std::vector<float> s(e.sum.begin(), e.sum.end());
            w.write_tensor_data(s.data(), s.size() * 4);
        }
    }
    w.commit();
}

}  // namespace ql
