// SPDX-License-Identifier: GPL-3.0-or-later
// SHA-256 (OpenSSL's libcrypto) as 64 lowercase hex digits: for the export report's manifest
// (files) and the export manifest's per-layer weight digests (engine/export/export_manifest.h).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace ql {

// Incremental digest: update() any number of times, then hex() once.
class Sha256 {
public:
    Sha256();
    ~Sha256();
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;
    void update(const void* data, std::size_t bytes);
    std::string hex();

private:
    struct State;
    std::unique_ptr<State> state_;
};

std::string sha256_hex(const void* data, std::size_t bytes);
// UserError naming the path when it cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace ql
