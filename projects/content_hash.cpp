// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/content_hash.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "engine/core/errors.h"

namespace ql::projects {

namespace fs = std::filesystem;

namespace {

class Sha256 {
public:
    Sha256() : ctx_(EVP_MD_CTX_new()) {
        if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1)
            throw std::runtime_error("OpenSSL: cannot start SHA-256");
    }
    void update(const void* data, std::size_t bytes) {
        if (EVP_DigestUpdate(ctx_.get(), data, bytes) != 1) throw std::runtime_error("OpenSSL: SHA-256 update failed");
    }
    std::string hex() {
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned int length = 0;
        if (EVP_DigestFinal_ex(ctx_.get(), digest, &length) != 1) throw std::runtime_error("OpenSSL: SHA-256 failed");
        static const char* digits = "0123456789abcdef";
        std::string out;
        for (unsigned int i = 0; i < length; ++i) {
            out += digits[digest[i] >> 4];
            out += digits[digest[i] & 15];
        }
        return out;
    }

private:
    struct Free {
        void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
    };
    std::unique_ptr<EVP_MD_CTX, Free> ctx_;
};

struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
};

ContentHash hash_file(const fs::path& path) {
    std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "rb"));
    if (!f) throw UserError("cannot read '" + path.string() + "': " + std::strerror(errno));
    Sha256 sha;
    std::vector<unsigned char> buffer(1 << 20);
    ContentHash out;
    for (;;) {
        const std::size_t n = std::fread(buffer.data(), 1, buffer.size(), f.get());
        if (n > 0) {
            sha.update(buffer.data(), n);
            out.size_bytes += n;
        }
        if (n < buffer.size()) {
            if (std::ferror(f.get())) throw UserError("cannot read '" + path.string() + "': read error");
            break;
        }
    }
    out.sha256 = sha.hex();
    return out;
}

}  // namespace

std::string sha256_hex(const void* data, std::size_t bytes) {
    Sha256 sha;
    sha.update(data, bytes);
    return sha.hex();
}

ContentHash hash_content(const fs::path& path) {
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (ec || !fs::exists(status)) throw UserError("'" + path.string() + "' does not exist");
    if (fs::is_regular_file(status)) return hash_file(path);
    if (!fs::is_directory(status)) throw UserError("'" + path.string() + "' is neither a file nor a folder");

    std::vector<fs::path> files;
    for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_regular_file()) files.push_back(it->path());
    if (ec) throw UserError("cannot list '" + path.string() + "': " + ec.message());
    std::sort(files.begin(), files.end());
    Sha256 sha;
    ContentHash out;
    for (const fs::path& file : files) {
        const ContentHash h = hash_file(file);
        const std::string line = file.lexically_relative(path).generic_string() + '\0' + std::to_string(h.size_bytes) +
                                 '\0' + h.sha256 + '\n';
        sha.update(line.data(), line.size());
        out.size_bytes += h.size_bytes;
    }
    out.sha256 = sha.hex();
    return out;
}

}  // namespace ql::projects
