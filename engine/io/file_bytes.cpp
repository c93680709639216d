// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/file_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "engine/core/errors.h"

namespace ql {
namespace {

// The live file mappings, start -> end, so that page release never touches owned memory.
// Never destroyed, on purpose: a FileBytes owned by a static object (a model a benchmark or a
// cache keeps for the whole process) is destroyed at exit after any static constructed before
// it, and its destructor must still find this registry. A function-local static map was
// destroyed first and the later erase corrupted the heap ("corrupted double-linked list" at
// the exit of quantlab-bench's RealModel/Generate).
struct LiveMappings {
    std::mutex mutex;
    std::map<uintptr_t, uintptr_t> ranges;
};
LiveMappings& live_mapping_registry() {
    static LiveMappings& registry = *new LiveMappings();  // leaked: see above
    return registry;
}
std::mutex& live_mappings_mutex() { return live_mapping_registry().mutex; }
std::map<uintptr_t, uintptr_t>& live_mappings() { return live_mapping_registry().ranges; }

bool inside_live_mapping(uintptr_t begin, uintptr_t end) {
    const auto& m = live_mappings();
    auto it = m.upper_bound(begin);
    if (it == m.begin()) return false;
    --it;
    return begin >= it->first && end <= it->second;
}

}  // namespace

bool mapped_bytes(const void* data, uint64_t size) {
    if (!data) return false;
    const auto begin = reinterpret_cast<uintptr_t>(data);
    std::lock_guard<std::mutex> lock(live_mappings_mutex());
    return inside_live_mapping(begin, begin + size);
}

uint64_t release_mapped_pages(const void* data, uint64_t size) {
    if (!data || size == 0) return 0;
    const auto begin = reinterpret_cast<uintptr_t>(data);
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t first = (begin + page - 1) / page * page, last = (begin + size) / page * page;
    if (last <= first) return 0;
    std::lock_guard<std::mutex> lock(live_mappings_mutex());
    if (!inside_live_mapping(begin, begin + size)) return 0;
    if (::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0) return 0;
    return last - first;
}

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
        // Writable but private (copy-on-write): tensors viewing the mapping are the weights of a
        // model opened as stored, and code that writes a weight in place gets its own copy of
        // those pages instead of a segmentation fault; the file is never written.
        void* m = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            throw UserError(path + ": cannot map: " + std::strerror(err));
        }
        bytes->map_ = m;
        bytes->data_ = static_cast<const uint8_t*>(m);
        std::lock_guard<std::mutex> lock(live_mappings_mutex());
        live_mappings()[reinterpret_cast<uintptr_t>(m)] = reinterpret_cast<uintptr_t>(m) + static_cast<uintptr_t>(st.st_size);
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
    if (!map_) return;
    {
        std::lock_guard<std::mutex> lock(live_mappings_mutex());
        live_mappings().erase(reinterpret_cast<uintptr_t>(map_));
    }
    ::munmap(map_, static_cast<size_t>(size_));
}

}  // namespace ql
