// SPDX-License-Identifier: GPL-3.0-or-later
// A model's safetensors weights: one file, or shards listed by "<base>.safetensors.index.json"
// (the Hugging Face layout: {"metadata": {"total_size": N}, "weight_map": {tensor: shard}}).
// Plain C++, facade-safe; LibTorch access in engine/io/safetensors_tensors.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/io/safetensors_file.h"

namespace ql {

class SafetensorsCheckpoint {
public:
    // `path` is a folder (model.safetensors.index.json preferred, else model.safetensors), an
    // index .json, or a single .safetensors file. Every shard is opened and validated, and the
    // index must agree with the shards exactly: each mapped tensor present in its shard, no
    // tensor in two shards, none missing from the index. Shard names must stay inside the
    // index's folder lexically (relative, no ".." component); symbolic links are followed, as
    // the Hugging Face cache links snapshot files to blobs elsewhere. Throws UserError naming the
    // index (or file) and the tensor or shard.
    static SafetensorsCheckpoint open(const std::string& path);

    const std::string& path() const { return path_; }  // the index, or the single file
    bool sharded() const { return sharded_; }
    // All tensors: shards in name order, each in file order.
    const std::vector<std::string>& names() const { return names_; }
    bool contains(const std::string& name) const { return where_.count(name) != 0; }
    const SafetensorsFile& file_of(const std::string& name) const;  // throws UserError
    const SafetensorsFile::TensorInfo& info(const std::string& name) const { return file_of(name).info(name); }
    TensorBytes bytes(const std::string& name) const { return file_of(name).bytes(name); }
    const std::vector<SafetensorsFile>& files() const { return files_; }
    // "metadata"."total_size" of the index as written there (writers disagree on what it counts,
    // so it is reported, not checked); nullopt for a single file or when absent.
    std::optional<uint64_t> total_size() const { return total_size_; }

private:
    SafetensorsCheckpoint() = default;

    std::string path_;
    bool sharded_ = false;
    std::vector<SafetensorsFile> files_;
    std::vector<std::string> names_;
    std::unordered_map<std::string, size_t> where_;  // name -> index into files_
    std::optional<uint64_t> total_size_;
};

// Writes `tensors` into `folder` (created if missing) as Hugging Face does (huggingface_hub
// split_state_dict_into_shards_factory): tensors in the given order fill a shard until the next
// would take it past `max_shard_bytes` (tensor bytes, headers not counted; a larger tensor gets
// a shard of its own). One shard: "<base>.safetensors" and no index. Several:
// "<base>-00001-of-0000N.safetensors" ... and "<base>.safetensors.index.json" (sorted keys,
// indent 2) written last, so a complete index means complete shards. Then stale files of the
// other layout or an earlier shard count are removed (they would shadow or confuse the new
// ones). Every shard carries `metadata`. Returns the paths written, index last.
std::vector<std::string> write_safetensors_checkpoint(const std::string& folder, std::vector<SafetensorsWriteEntry> tensors,
                                                      uint64_t max_shard_bytes,
                                                      const std::map<std::string, std::string>& metadata = {},
                                                      const std::string& base = "model");

}  // namespace ql
