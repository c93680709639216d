// SPDX-License-Identifier: GPL-3.0-or-later
// SHA-256 of models and artifacts (OpenSSL's libcrypto), as 64 lowercase hex digits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace ql::projects {

struct ContentHash {
    std::string sha256;           // 64 lowercase hex digits
    std::uint64_t size_bytes = 0;  // the file's size, or the sum over a folder's files
};

std::string sha256_hex(const void* data, std::size_t bytes);

// A regular file: SHA-256 of its bytes. A folder (an HF model folder): SHA-256 over the sorted
// list of its regular files, each line "relative/path\0size\0sha256\n", so renaming, adding or
// changing any file changes the hash. Throws UserError naming the path if it cannot be read.
ContentHash hash_content(const std::filesystem::path& path);

}  // namespace ql::projects
