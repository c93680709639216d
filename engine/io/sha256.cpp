// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/sha256.h"

#include <openssl/evp.h>

#include <fstream>
#include <vector>

#include "engine/core/errors.h"

namespace ql {

struct Sha256::State {
    EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
    state_->ctx = EVP_MD_CTX_new();
    if (!state_->ctx || EVP_DigestInit_ex(state_->ctx, EVP_sha256(), nullptr) != 1)
        throw std::runtime_error("OpenSSL: cannot start a SHA-256 digest");
}

Sha256::~Sha256() { EVP_MD_CTX_free(state_->ctx); }

void Sha256::update(const void* data, std::size_t bytes) {
    if (bytes) EVP_DigestUpdate(state_->ctx, data, bytes);
}

std::string Sha256::hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(state_->ctx, md, &n);
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (unsigned int i = 0; i < n; ++i) s += digits[md[i] >> 4], s += digits[md[i] & 15];
    return s;
}

std::string sha256_hex(const void* data, std::size_t bytes) {
    Sha256 h;
    h.update(data, bytes);
    return h.hex();
}

std::string sha256_file_hex(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw UserError("cannot read " + path + " to hash it");
    Sha256 h;
    std::vector<char> buf(1 << 20);
    while (f) {
        f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        if (f.gcount() > 0) h.update(buf.data(), static_cast<std::size_t>(f.gcount()));
    }
    return h.hex();
}

}  // namespace ql
