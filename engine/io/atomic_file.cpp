// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "engine/api/errors.h"

namespace ql {

void write_file_atomically(const std::string& path, const std::string& contents) {
    const std::string partial = path + ".partial";
    const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw UserError(path + ": cannot write: " + std::strerror(errno));
    auto give_up = [&](const char* what) {
        const int err = errno;
        ::close(fd);
        ::unlink(partial.c_str());
        throw UserError(path + ": " + what + ": " + std::strerror(err));
    };
    size_t done = 0;
    while (done < contents.size()) {
        const ssize_t w = ::write(fd, contents.data() + done, contents.size() - done);
        if (w < 0) {
            if (errno == EINTR) continue;
            give_up("write failed");
        }
        done += static_cast<size_t>(w);
    }
    if (::fsync(fd) != 0) give_up("fsync failed");
    if (::close(fd) != 0) {
        const int err = errno;
        ::unlink(partial.c_str());
        throw UserError(path + ": close failed: " + std::strerror(err));
    }
    if (std::rename(partial.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(partial.c_str());
        throw UserError(path + ": rename failed: " + std::strerror(err));
    }
}

}  // namespace ql
