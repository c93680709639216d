// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/npy_file.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "engine/core/errors.h"
#include "engine/io/atomic_file.h"
#include "engine/io/whole_file.h"

namespace ql {
namespace {

[[noreturn]] void fail_npy(const std::string& name, const std::string& what) {
    throw UserError(name + ": not a valid .npy file: " + what);
}

// The header is a Python dict literal; we accept exactly what numpy writes (and reasonable
// whitespace variations) and nothing else.
struct HeaderParser {
    const std::string& s;
    const std::string& name;
    size_t i = 0;

    void ws() {
        while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    }
    bool eat(char c) {
        ws();
        if (i < s.size() && s[i] == c) {
            ++i;
            return true;
        }
        return false;
    }
    void expect(char c, const char* field) {
        if (!eat(c)) fail_npy(name, std::string("header: expected '") + c + "' in " + field);
    }
    std::string str(const char* field) {
        ws();
        if (i >= s.size() || (s[i] != '\'' && s[i] != '"')) fail_npy(name, std::string("header: expected a string for ") + field);
        const char q = s[i++];
        const size_t start = i;
        while (i < s.size() && s[i] != q) ++i;
        if (i >= s.size()) fail_npy(name, std::string("header: unterminated string in ") + field);
        return s.substr(start, i++ - start);
    }
    bool boolean() {
        ws();
        if (s.compare(i, 4, "True") == 0) {
            i += 4;
            return true;
        }
        if (s.compare(i, 5, "False") == 0) {
            i += 5;
            return false;
        }
        fail_npy(name, "header: fortran_order must be True or False");
    }
    std::vector<int64_t> shape() {
        expect('(', "shape");
        std::vector<int64_t> dims;
        while (true) {
            ws();
            if (eat(')')) break;
            if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) fail_npy(name, "header: shape must hold non-negative integers");
            int64_t v = 0;
            while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
                if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) fail_npy(name, "header: shape dimension too large");
                v = v * 10 + (s[i++] - '0');
            }
            ws();
            if (i < s.size() && s[i] == 'L') ++i;  // Python 2 longs
            dims.push_back(v);
            if (eat(',')) continue;
            expect(')', "shape");
            break;
        }
        return dims;
    }
};

DType dtype_from_descr(const std::string& d, const std::string& name) {
    if (d == "<f4") return DType::Float32;
    if (d == "<f2") return DType::Float16;
    if (d == "|u1" || d == "<u1" || d == "u1") return DType::UInt8;
    if (d == "|i1" || d == "<i1" || d == "i1") return DType::Int8;
    if (d == "<i4") return DType::Int32;
    if (d == "<i8") return DType::Int64;
    if (d == "<u2") return DType::UInt16;
    if (d == "<u4") return DType::UInt32;
    if (!d.empty() && d[0] == '>') fail_npy(name, "descr '" + d + "' is big-endian; only little-endian arrays are supported");
    fail_npy(name, "descr '" + d + "' is not a supported dtype (float32, float16, uint8, int8, uint16, uint32, int32, int64)");
}

}  // namespace

NdArray parse_npy(const std::string& b, const std::string& name) {
    static const char magic[] = "\x93NUMPY";
    if (b.size() < 10 || std::memcmp(b.data(), magic, 6) != 0) fail_npy(name, "magic string \\x93NUMPY missing");
    const int major = static_cast<unsigned char>(b[6]);
    size_t header_len, header_start;
    if (major == 1) {
        header_len = static_cast<unsigned char>(b[8]) | (static_cast<unsigned char>(b[9]) << 8);
        header_start = 10;
    } else if (major == 2 || major == 3) {
        if (b.size() < 12) fail_npy(name, "truncated before the header length");
        header_len = 0;
        for (int k = 0; k < 4; ++k) header_len |= static_cast<size_t>(static_cast<unsigned char>(b[8 + k])) << (8 * k);
        header_start = 12;
    } else {
        fail_npy(name, "unsupported format version " + std::to_string(major));
    }
    if (header_len > b.size() - header_start) fail_npy(name, "header length " + std::to_string(header_len) + " runs past the end of the file");
    const std::string header = b.substr(header_start, header_len);
    HeaderParser p{header, name};
    p.expect('{', "header");
    std::string descr;
    bool fortran = false, have_descr = false, have_fortran = false, have_shape = false;
    std::vector<int64_t> shape;
    while (true) {
        if (p.eat('}')) break;
        const std::string key = p.str("a header key");
        p.expect(':', key.c_str());
        if (key == "descr") {
            descr = p.str("descr");
            have_descr = true;
        } else if (key == "fortran_order") {
            fortran = p.boolean();
            have_fortran = true;
        } else if (key == "shape") {
            shape = p.shape();
            have_shape = true;
        } else {
            fail_npy(name, "header: unknown key '" + key + "'");
        }
        if (p.eat(',')) continue;
        p.expect('}', "header");
        break;
    }
    if (!have_descr || !have_fortran || !have_shape) fail_npy(name, "header: descr, fortran_order and shape are all required");
    if (fortran) fail_npy(name, "fortran_order arrays are not supported (save with np.ascontiguousarray)");
    NdArray a;
    a.dtype = dtype_from_descr(descr, name);
    a.shape = shape;
    // numel * itemsize with overflow checks: a lying shape must not wrap around.
    uint64_t n = 1;
    for (int64_t d : shape) {
        if (d != 0 && n > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) fail_npy(name, "shape " + shape_string(shape) + " overflows");
        n *= static_cast<uint64_t>(d);
    }
    const uint64_t data_bytes = n * static_cast<uint64_t>(dtype_size(a.dtype));
    const uint64_t available = b.size() - header_start - header_len;
    if (data_bytes != available)
        fail_npy(name, "shape " + shape_string(shape) + " of " + descr + " needs " + std::to_string(data_bytes) +
                       " data bytes but the file has " + std::to_string(available));
    a.bytes.assign(b.begin() + static_cast<std::ptrdiff_t>(header_start + header_len), b.end());
    return a;
}

std::string serialize_npy(const NdArray& a) {
    // numpy's own spelling: "(5,)" for one dimension, "(2, 3)" for more, "()" for scalars.
    std::string tuple = "(";
    for (size_t i = 0; i < a.shape.size(); ++i) tuple += (i ? ", " : "") + std::to_string(a.shape[i]);
    tuple += a.shape.size() == 1 ? ",)" : ")";
    std::string dict = "{'descr': '" + dtype_npy_descr(a.dtype) + "', 'fortran_order': False, 'shape': " + tuple + ", }";
    // Pad with spaces so that magic + version + length + header is a multiple of 64, ending in \n.
    size_t total = 10 + dict.size() + 1;
    const bool v2 = total > 65535 + 10;
    if (v2) total += 2;
    const size_t pad = (64 - total % 64) % 64;
    dict.append(pad, ' ');
    dict += '\n';
    std::string out = "\x93NUMPY";
    out += static_cast<char>(v2 ? 2 : 1);
    out += '\0';
    const size_t hl = dict.size();
    out += static_cast<char>(hl & 0xFF);
    out += static_cast<char>((hl >> 8) & 0xFF);
    if (v2) {
        out += static_cast<char>((hl >> 16) & 0xFF);
        out += static_cast<char>((hl >> 24) & 0xFF);
    }
    out += dict;
    out.append(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size());
    return out;
}

NdArray read_npy(const std::string& path) {
    return parse_npy(read_whole_file(path), path);
}

void write_npy(const std::string& path, const NdArray& array) { write_file_atomically(path, serialize_npy(array)); }

}  // namespace ql
