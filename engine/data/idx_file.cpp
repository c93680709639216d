// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/idx_file.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "engine/core/errors.h"
#include "engine/io/atomic_file.h"
#include "engine/io/whole_file.h"

namespace ql {
namespace {

[[noreturn]] void fail_idx(const std::string& name, const std::string& what) {
    throw UserError(name + ": not a valid IDX file: " + what);
}

const char* type_name(uint8_t t) {
    switch (t) {
        case 0x08: return "uint8";
        case 0x09: return "int8";
        case 0x0B: return "int16";
        case 0x0C: return "int32";
        case 0x0D: return "float32";
        case 0x0E: return "float64";
        default: return nullptr;
    }
}

}  // namespace

IdxArray parse_idx(const std::string& bytes, const std::string& name) {
    const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
    const uint64_t size = bytes.size();
    if (size >= 2 && b[0] == 0x1F && b[1] == 0x8B) fail_idx(name, "the file is gzip-compressed; decompress it first (gunzip)");
    if (size < 4) fail_idx(name, "shorter than the 4-byte magic number");
    if (b[0] != 0 || b[1] != 0) fail_idx(name, "magic number must start with two zero bytes");
    const char* type = type_name(b[2]);
    if (!type) fail_idx(name, "unknown element type 0x" + [&] {
        char h[3];
        std::snprintf(h, sizeof h, "%02X", b[2]);
        return std::string(h);
    }());
    if (b[2] != 0x08) fail_idx(name, std::string("element type ") + type + " is not supported (QuantLab reads uint8 IDX files)");
    const int ndims = b[3];
    if (ndims < 1) fail_idx(name, "the number of dimensions is 0");
    const uint64_t header = 4 + 4 * static_cast<uint64_t>(ndims);
    if (size < header)
        fail_idx(name, "header declares " + std::to_string(ndims) + " dimensions but the file ends after " +
                       std::to_string(size) + " bytes");
    IdxArray a;
    uint64_t count = 1;
    bool too_large = false;  // the product overflows 64 bits
    for (int d = 0; d < ndims; ++d) {
        const uint8_t* p = b + 4 + 4 * d;
        const uint64_t n = (uint64_t{p[0]} << 24) | (uint64_t{p[1]} << 16) | (uint64_t{p[2]} << 8) | p[3];
        a.dims.push_back(static_cast<int64_t>(n));
        if (n == 0) count = 0, too_large = false;
        else if (!too_large && __builtin_mul_overflow(count, n, &count)) too_large = true;
    }
    if (too_large || header + count != size) {
        std::string dims;
        for (size_t i = 0; i < a.dims.size(); ++i) dims += (i ? "x" : "") + std::to_string(a.dims[i]);
        fail_idx(name, "dimensions " + dims + " need " + (too_large ? "more than " + std::to_string(size - header) : std::to_string(count)) +
                       " data bytes but the file has " + std::to_string(size - header));
    }
    a.data.assign(b + header, b + size);
    return a;
}

IdxArray read_idx(const std::string& path) { return parse_idx(read_whole_file(path, "IDX file"), path); }

std::string serialize_idx(const IdxArray& a) {
    std::string out;
    out += '\0';
    out += '\0';
    out += '\x08';
    out += static_cast<char>(a.dims.size());
    for (int64_t n : a.dims) {
        const auto v = static_cast<uint32_t>(n);
        out += static_cast<char>(v >> 24);
        out += static_cast<char>((v >> 16) & 0xFF);
        out += static_cast<char>((v >> 8) & 0xFF);
        out += static_cast<char>(v & 0xFF);
    }
    out.append(reinterpret_cast<const char*>(a.data.data()), a.data.size());
    return out;
}

void write_idx(const std::string& path, const IdxArray& array) { write_file_atomically(path, serialize_idx(array)); }

std::string idx_labels_path_for(const std::string& images_path) {
    const size_t slash = images_path.find_last_of('/');
    const size_t base = slash == std::string::npos ? 0 : slash + 1;
    std::string name = images_path.substr(base);
    const size_t i = name.find("images");
    if (i == std::string::npos) return "";
    name.replace(i, 6, "labels");
    if (const size_t k = name.find("idx3"); k != std::string::npos) name.replace(k, 4, "idx1");
    return images_path.substr(0, base) + name;
}

bool looks_like_idx(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    unsigned char m[4] = {0, 0, 0, 0};
    if (!in.read(reinterpret_cast<char*>(m), 4)) return false;
    return m[0] == 0 && m[1] == 0 && type_name(m[2]) != nullptr && m[3] >= 1 && m[3] <= 8;
}

}  // namespace ql
