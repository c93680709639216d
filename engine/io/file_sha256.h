// SPDX-License-Identifier: GPL-3.0-or-later
// SHA-256 of a file's bytes (OpenSSL's libcrypto), for manifests and records that let a reader
// check a file is the one that was written (export report, demo record). Plain C++.
#pragma once

#include <string>

namespace ql {

// 64 lowercase hex digits; UserError naming the path when it cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace ql
