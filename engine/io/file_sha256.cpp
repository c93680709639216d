// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/file_sha256.h"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <vector>

#include "engine/core/errors.h"

namespace ql {

std::string sha256_file_hex(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw UserError("cannot read " + path + " to hash it");
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
    std::vector<char> buf(1 << 20);
    while (f) {
        f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        if (f.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(f.gcount()));
    }
    if (f.bad()) throw UserError("cannot read " + path + " to hash it");
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx.get(), md, &n);
    static const char* hex = "0123456789abcdef";
    std::string s;
    for (unsigned int i = 0; i < n; ++i) s += hex[md[i] >> 4], s += hex[md[i] & 15];
    return s;
}

}  // namespace ql
