// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "engine/core/errors.h"

namespace ql {

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)), partial_(path_ + ".partial") {
    fd_ = ::open(partial_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw UserError(path_ + ": cannot write: " + std::strerror(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
    if (fd_ >= 0) {
        ::close(fd_);
        ::unlink(partial_.c_str());
    }
}

void AtomicFileWriter::give_up(const char* what, int err) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    ::unlink(partial_.c_str());
    throw UserError(path_ + ": " + what + ": " + std::strerror(err));
}

void AtomicFileWriter::write(const void* data, size_t size) {
    if (fd_ < 0) throw UserError(path_ + ": write after the file was closed");
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
        // Linux transfers at most 0x7ffff000 bytes per call; larger requests just return less.
        const ssize_t w = ::write(fd_, p, size);
        if (w < 0) {
            if (errno == EINTR) continue;
            give_up("write failed", errno);
        }
        if (w == 0) give_up("write failed", ENOSPC);
        p += w;
        size -= static_cast<size_t>(w);
    }
}

void AtomicFileWriter::commit() {
    if (fd_ < 0) throw UserError(path_ + ": commit after the file was closed");
    if (::fsync(fd_) != 0) give_up("fsync failed", errno);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) {
        const int err = errno;
        ::unlink(partial_.c_str());
        throw UserError(path_ + ": close failed: " + std::strerror(err));
    }
    if (std::rename(partial_.c_str(), path_.c_str()) != 0) {
        const int err = errno;
        ::unlink(partial_.c_str());
        throw UserError(path_ + ": rename failed: " + std::strerror(err));
    }
}

void write_file_atomically(const std::string& path, const std::string& contents) {
    AtomicFileWriter out(path);
    out.write(contents.data(), contents.size());
    out.commit();
}

}  // namespace ql
