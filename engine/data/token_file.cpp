// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/token_file.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/core/allocation_limit.h"
#include "engine/core/errors.h"
#include "engine/io/npy_file.h"
#include "engine/io/whole_file.h"
#include "engine/core/string_suffix.h"

namespace ql {
namespace {

template <class T>
void append_tokens(std::vector<int64_t>& out, const uint8_t* bytes, size_t count, const std::string& path) {
    // Widened to int64 (4x a uint16 file): refused before reserving when that cannot fit.
    require_allocatable(checked_product({count, sizeof(int64_t)}), path + ": " + std::to_string(count) + " token ids",
                        "widening them to int64");
    out.reserve(out.size() + count);
    for (size_t i = 0; i < count; ++i) {
        T v;
        std::memcpy(&v, bytes + i * sizeof(T), sizeof(T));
        out.push_back(static_cast<int64_t>(v));
    }
}

void check_range(const std::vector<int64_t>& tokens, int64_t vocab_size, const std::string& path) {
    if (vocab_size <= 0) return;
    for (size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i] < 0 || tokens[i] >= vocab_size)
            throw UserError(path + ": token " + std::to_string(i) + " is " + std::to_string(tokens[i]) +
                            ", outside the model's vocabulary [0, " + std::to_string(vocab_size) +
                            ") (wrong tokenizer, or a .bin file of another dtype: see --dtype)");
}

}  // namespace

bool is_token_file_path(const std::string& path) { return ends_with(path, ".npy") || ends_with(path, ".bin"); }

TokenFile read_token_file(const std::string& path, int64_t vocab_size, const std::string& dtype_hint) {
    TokenFile f;
    if (ends_with(path, ".npy")) {
        const NdArray a = read_npy(path);
        if (a.shape.size() != 1 && a.shape.size() != 2)
            throw UserError(path + ": a token file must be 1-D (a stream) or 2-D (sequences), got shape " +
                            shape_string(a.shape));
        const auto n = static_cast<size_t>(a.numel());
        switch (a.dtype) {
            case DType::Int32: append_tokens<int32_t>(f.tokens, a.bytes.data(), n, path); break;
            case DType::Int64: append_tokens<int64_t>(f.tokens, a.bytes.data(), n, path); break;
            case DType::UInt16: append_tokens<uint16_t>(f.tokens, a.bytes.data(), n, path); break;
            case DType::UInt32: append_tokens<uint32_t>(f.tokens, a.bytes.data(), n, path); break;
            default:
                throw UserError(path + ": token ids must be int32, int64, uint16 or uint32, got " + dtype_name(a.dtype));
        }
        if (a.shape.size() == 2) {
            f.rows = a.shape[0];
            f.columns = a.shape[1];
        }
    } else if (ends_with(path, ".bin")) {
        std::string dtype = dtype_hint;
        if (dtype.empty()) dtype = vocab_size > 65536 ? "uint32" : "uint16";
        if (dtype != "uint16" && dtype != "uint32")
            throw UserError(path + ": --dtype must be uint16 or uint32 for a raw .bin token file, got '" + dtype + "'");
        const std::string bytes = read_whole_file(path, "token file");
        const size_t width = dtype == "uint16" ? 2 : 4;
        if (bytes.size() % width != 0)
            throw UserError(path + ": " + std::to_string(bytes.size()) + " bytes is not a whole number of " + dtype +
                            " token ids");
        const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
        if (width == 2) append_tokens<uint16_t>(f.tokens, p, bytes.size() / 2, path);
        else append_tokens<uint32_t>(f.tokens, p, bytes.size() / 4, path);
    } else {
        throw UserError(path + ": not a token file (.npy or .bin)");
    }
    check_range(f.tokens, vocab_size, path);
    return f;
}

}  // namespace ql
