// SPDX-License-Identifier: GPL-3.0-or-later
// The bytes behind the checkpoint readers (SafetensorsFile, GgufFile): a file mapped
// copy-on-write (MAP_PRIVATE, readable and writable: the file itself is never changed), or an
// in-memory image. Shared (shared_ptr) by a reader and the tensor views into it, so a view
// stays valid after the reader is gone.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace ql {

class FileBytes {
public:
    // Maps the regular file `path` whole (PROT_READ, MAP_PRIVATE); an empty file maps nothing.
    // UserError "<path>: cannot open: <reason>", "cannot stat", "not a regular file", "cannot map".
    static std::shared_ptr<const FileBytes> map(const std::string& path);
    // Takes `bytes` as the file's contents.
    static std::shared_ptr<const FileBytes> own(std::string bytes);

    const uint8_t* data() const { return data_; }  // `size()` bytes; null when empty
    uint64_t size() const { return size_; }

    FileBytes() = default;  // an empty file
    FileBytes(const FileBytes&) = delete;
    FileBytes& operator=(const FileBytes&) = delete;
    ~FileBytes();

private:
    const uint8_t* data_ = nullptr;
    uint64_t size_ = 0;
    void* map_ = nullptr;  // munmap'ed on destruction
    std::string owned_;
};

// Whether [data, data + size) lies inside one live file mapping made by FileBytes::map
// (the weights of a model opened as stored, engine/models/model.h).
bool mapped_bytes(const void* data, uint64_t size);

// Gives back the resident pages wholly inside [data, data + size) when the range lies in a
// file mapping (madvise MADV_DONTNEED: the mapping is private, so the next read faults the
// file's bytes in again from the page cache or the file). Pages written since they were mapped
// (a weight changed in place: the mapping is copy-on-write so that such a write works instead of
// crashing) would fall back to the file's bytes: call it only on tensors nothing wrote; anything else
// (owned memory, partial pages at the ends) is left alone. Returns the bytes released. Used to
// keep a large checkpoint from staying resident after its tensors were checked or used.
uint64_t release_mapped_pages(const void* data, uint64_t size);

}  // namespace ql
