// SPDX-License-Identifier: GPL-3.0-or-later
// safetensors files (huggingface/safetensors), read memory-mapped and written atomically.
// Plain C++ (no LibTorch): part of the engine facade usable from app/. LibTorch tensors over
// these files: engine/io/safetensors_tensors.h. Sharded checkpoints: safetensors_checkpoint.h.
//
// Layout: u64 little-endian N, then N bytes of UTF-8 JSON
//   {"__metadata__": {"k": "v", ...},                      (optional, string -> string)
//    "<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
// then the data area; offsets are relative to its start, elements little-endian, C order.
//
// Reading validates what safetensors/src/tensor.rs (SafeTensors::read_metadata and
// Metadata::validate) validates, and reports it naming the file and, where there is one, the
// tensor: header length <= 100,000,000 and inside the file; the header valid UTF-8 JSON (an
// object; "__metadata__" string -> string or null; every tensor an object with a known dtype, a
// shape of non-negative integers and two data_offsets); tensors sorted by offset exactly tile
// the data area (no gap, no overlap, end >= begin, the last end == data size); end - begin ==
// numel x dtype bits / 8 with overflow-checked arithmetic. Stricter than the reference: duplicate
// JSON keys and dimensions above INT64_MAX are rejected (LibTorch shapes are int64).
// A lying, truncated or hostile file throws ql::UserError; it never crashes. (A file truncated
// by another process *after* open() can still raise SIGBUS on access, as with any mmap reader.)
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ql {

class FileBytes;

// Every dtype the reference knows, in its order (increasing alignment); the writer sorts by it.
enum class SafetensorsDtype {
    BOOL, F4, F6_E2M3, F6_E3M2, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ,
    I16, U16, F16, BF16, I32, U32, F32, C64, F64, I64, U64,
};

const char* safetensors_dtype_name(SafetensorsDtype d);  // "F32", "F8_E4M3", ...
int safetensors_dtype_bits(SafetensorsDtype d);          // 4 for F4, 6 for F6_*, 8 ... 64
std::optional<SafetensorsDtype> safetensors_dtype_from_name(const std::string& name);
// Bytes of `numel` elements, or nullopt when numel x bits overflows or is not a whole byte count.
std::optional<uint64_t> safetensors_byte_size(SafetensorsDtype d, const std::vector<int64_t>& shape);

// A tensor's bytes inside a file. `owner` keeps the mapping alive: the view stays valid after the
// SafetensorsFile is gone for as long as a copy of `owner` lives. Read-only memory.
struct TensorBytes {
    const uint8_t* data = nullptr;
    uint64_t size = 0;
    std::shared_ptr<const void> owner;
};

class SafetensorsFile {
public:
    struct TensorInfo {
        std::string name;
        SafetensorsDtype dtype = SafetensorsDtype::F32;
        std::vector<int64_t> shape;  // [] for a scalar
        uint64_t offset = 0;         // bytes from the start of the file
        uint64_t size = 0;           // bytes
        int64_t numel() const;
    };

    // Maps `path` (MAP_PRIVATE, PROT_READ) and validates it; throws UserError.
    static SafetensorsFile open(const std::string& path);
    // Validates an in-memory image (copied); `name` stands for the path in error messages.
    static SafetensorsFile parse(std::string bytes, const std::string& name);

    const std::string& path() const { return path_; }
    uint64_t file_size() const;
    uint64_t data_offset() const { return data_offset_; }  // 8 + N
    // Tensors in file order (by offset).
    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    std::vector<std::string> names() const;
    const TensorInfo* find(const std::string& name) const;  // nullptr when absent
    const TensorInfo& info(const std::string& name) const;  // throws UserError naming file and tensor
    TensorBytes bytes(const std::string& name) const;
    TensorBytes bytes(const TensorInfo& info) const;
    const std::map<std::string, std::string>& metadata() const { return metadata_; }

private:
    using Storage = FileBytes;
    SafetensorsFile() = default;
    static SafetensorsFile validate(std::shared_ptr<const Storage> storage, const std::string& path);

    std::string path_;
    std::shared_ptr<const Storage> storage_;
    uint64_t data_offset_ = 0;
    std::vector<TensorInfo> tensors_;
    std::unordered_map<std::string, size_t> index_;
    std::map<std::string, std::string> metadata_;
};

// One tensor to write: `size` bytes at `data` (not owned; must stay valid during the call),
// little-endian, C order, size == numel x dtype bits / 8.
struct SafetensorsWriteEntry {
    std::string name;
    SafetensorsDtype dtype = SafetensorsDtype::F32;
    std::vector<int64_t> shape;
    const void* data = nullptr;
    uint64_t size = 0;
};

// Writes like the reference serializer (tensor.rs prepare/serialize), so that our files are byte
// for byte the ones safetensors writes for the same tensors and at most one metadata entry
// (its metadata is a hash map, ours is sorted): tensors sorted by dtype, larger alignment first
// (the enum order above, descending), then by name; compact JSON with "__metadata__" first
// (omitted when empty); header padded with spaces to a multiple of 8 bytes, so every tensor is
// aligned to its element size. Written atomically (<path>.partial, fsync, rename), streamed
// from the callers' buffers. Throws UserError naming the path (and the tensor, for a bad entry:
// duplicate, non-UTF-8 or "__metadata__" name, negative dimension, size mismatch).
void write_safetensors(const std::string& path, std::vector<SafetensorsWriteEntry> tensors,
                       const std::map<std::string, std::string>& metadata = {});
// The same file as one in-memory image (tests, small files).
std::string serialize_safetensors(std::vector<SafetensorsWriteEntry> tensors,
                                  const std::map<std::string, std::string>& metadata = {});

}  // namespace ql
