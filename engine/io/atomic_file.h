// SPDX-License-Identifier: GPL-3.0-or-later
// Crash-safe file writing (EXPORT.md "Safety of writing"): write "<path>.partial" in the target
// folder, fsync, rename over the final name. On any error the partial file is removed and a
// UserError names the path and the reason (e.g. "No space left on device"); the final name is
// never left half-written.
#pragma once

#include <cstddef>
#include <string>

namespace ql {

void write_file_atomically(const std::string& path, const std::string& contents);

// The streaming form, for files too large to build in memory (checkpoints): open, write() any
// number of pieces, commit(). Destroying the writer without a successful commit() removes the
// partial file, so an exception anywhere between open and commit leaves nothing behind.
class AtomicFileWriter {
public:
    explicit AtomicFileWriter(std::string path);  // creates "<path>.partial"; throws UserError
    ~AtomicFileWriter();
    AtomicFileWriter(const AtomicFileWriter&) = delete;
    AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

    void write(const void* data, size_t size);  // throws UserError naming the path and errno
    void commit();                              // fsync, close, rename; throws UserError
    const std::string& path() const { return path_; }

private:
    [[noreturn]] void give_up(const char* what, int err);

    std::string path_;
    std::string partial_;
    int fd_ = -1;
};

}  // namespace ql
