// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/file_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/core/errors.h"

namespace ql {

std::shared_ptr<const FileBytes> FileBytes::map(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw UserError(path + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw UserError(path + ": cannot stat: " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw UserError(path + ": not a regular file");
    }
    auto bytes = std::make_shared<FileBytes>();
    bytes->size_ = static_cast<uint64_t>(st.st_size);
    if (st.st_size > 0) {
        void* m = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            throw UserError(path + ": cannot map: " + std::strerror(err));
        }
        bytes->map_ = m;
        bytes->data_ = static_cast<const uint8_t*>(m);
    }
    ::close(fd);  // the mapping keeps the file alive
    return bytes;
}

std::shared_ptr<const FileBytes> FileBytes::own(std::string contents) {
    auto bytes = std::make_shared<FileBytes>();
    bytes->owned_ = std::move(contents);
    bytes->data_ = reinterpret_cast<const uint8_t*>(bytes->owned_.data());
    bytes->size_ = bytes->owned_.size();
    return bytes;
}

FileBytes::~FileBytes() {
    if (map_) ::munmap(map_, static_cast<size_t>(size_));
}

}  // namespace ql
