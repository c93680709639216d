// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/io/safetensors_checkpoint.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "engine/core/errors.h"
#include "engine/io/atomic_file.h"
#include "engine/io/strict_json.h"
#include "engine/io/utf8.h"
#include "engine/io/whole_file.h"
#include "engine/core/string_suffix.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Indices are a few MB even for the largest models; this only stops a hostile file early.
constexpr uint64_t kMaxIndexSize = 100'000'000;

[[noreturn]] void fail_index(const std::string& path, const std::string& what) {
    throw UserError(path + ": not a valid safetensors index: " + what);
}

// A shard name from an index must name a file below the index's folder: relative, without "..".
bool stays_inside(const std::string& shard) {
    if (shard.empty() || shard[0] == '/') return false;
    for (const auto& part : fs::path(shard))
        if (part == "..") return false;
    return true;
}

std::string read_index(const std::string& path) {
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec) throw UserError(path + ": cannot open: " + ec.message());
    if (size > kMaxIndexSize) fail_index(path, "the file has " + std::to_string(size) + " bytes, more than an index can need");
    return read_whole_file(path);
}

std::string shard_name(const std::string& base, size_t i, size_t n) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "-%05zu-of-%05zu.safetensors", i + 1, n);
    return base + buf;
}

}  // namespace

SafetensorsCheckpoint SafetensorsCheckpoint::open(const std::string& path) {
    SafetensorsCheckpoint c;
    std::string index_path;
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        const std::string index = (fs::path(path) / "model.safetensors.index.json").string();
        const std::string single = (fs::path(path) / "model.safetensors").string();
        if (fs::exists(index, ec)) {
            index_path = index;
        } else if (fs::exists(single, ec)) {
            c.path_ = single;
        } else {
            throw UserError(path + ": no model.safetensors.index.json or model.safetensors in this folder");
        }
    } else if (ends_with(path, ".json")) {
        index_path = path;
    } else {
        c.path_ = path;
    }

    if (index_path.empty()) {
        c.files_.push_back(SafetensorsFile::open(c.path_));
        c.names_ = c.files_[0].names();
        for (const std::string& n : c.names_) c.where_[n] = 0;
        return c;
    }

    c.path_ = index_path;
    c.sharded_ = true;
    const std::string text = read_index(index_path);
    json root;
    try {
        root = parse_strict_json(text.data(), text.data() + text.size());
    } catch (const StrictJsonError& e) {
        fail_index(index_path, std::string("not valid JSON: ") + e.what());
    }
    if (!root.is_object()) fail_index(index_path, "not a JSON object");
    const auto map = root.find("weight_map");
    if (map == root.end() || !map->is_object()) fail_index(index_path, "\"weight_map\" (tensor name -> shard file) is missing or not an object");
    if (const auto meta = root.find("metadata"); meta != root.end() && meta->is_object()) {
        if (const auto total = meta->find("total_size"); total != meta->end()) {
            if (total->is_number_unsigned()) {
                c.total_size_ = total->get<uint64_t>();
            } else if (total->is_number_float() && total->get<double>() >= 0 && total->get<double>() < 1.8e19) {
                c.total_size_ = static_cast<uint64_t>(total->get<double>());  // some writers emit 1234.0
            }
        }
    }
    std::map<std::string, std::string> mapped;  // tensor -> shard
    std::set<std::string> shard_names;
    for (auto it = map->begin(); it != map->end(); ++it) {
        if (!it.value().is_string()) fail_index(index_path, "weight_map: tensor " + quoted_name(it.key()) + ": shard is not a string");
        const std::string shard = it.value().get<std::string>();
        if (!stays_inside(shard))
            fail_index(index_path, "weight_map: tensor " + quoted_name(it.key()) + ": shard " + quoted_name(shard) +
                                 " is not a relative path inside the index's folder");
        mapped[it.key()] = shard;
        shard_names.insert(shard);
    }
    const fs::path folder = fs::path(index_path).parent_path();
    std::map<std::string, size_t> shard_index;
    for (const std::string& shard : shard_names) {
        shard_index[shard] = c.files_.size();
        c.files_.push_back(SafetensorsFile::open((folder / shard).string()));
    }
    std::vector<std::string> file_names(shard_names.begin(), shard_names.end());
    for (size_t f = 0; f < c.files_.size(); ++f) {
        for (const auto& t : c.files_[f].tensors()) {
            const auto [it, fresh] = c.where_.emplace(t.name, f);
            if (!fresh)
                fail_index(index_path, "tensor " + quoted_name(t.name) + " is in two shards, " + quoted_name(file_names[it->second]) +
                                     " and " + quoted_name(file_names[f]));
            const auto m = mapped.find(t.name);
            if (m == mapped.end())
                fail_index(index_path, "tensor " + quoted_name(t.name) + " of shard " + quoted_name(file_names[f]) +
                                     " is not in the weight_map");
            c.names_.push_back(t.name);
        }
    }
    for (const auto& [tensor, shard] : mapped) {
        const auto it = c.where_.find(tensor);
        if (it == c.where_.end() || it->second != shard_index[shard])
            fail_index(index_path, "weight_map: tensor " + quoted_name(tensor) + " is mapped to shard " + quoted_name(shard) +
                                 ", which does not hold it" +
                                 (it == c.where_.end() ? std::string() : " (it is in " + quoted_name(file_names[it->second]) + ")"));
    }
    return c;
}

const SafetensorsFile& SafetensorsCheckpoint::file_of(const std::string& name) const {
    const auto it = where_.find(name);
    if (it == where_.end()) throw UserError(path_ + ": no tensor " + quoted_name(name));
    return files_[it->second];
}

std::vector<std::string> write_safetensors_checkpoint(const std::string& folder, std::vector<SafetensorsWriteEntry> tensors,
                                                      uint64_t max_shard_bytes,
                                                      const std::map<std::string, std::string>& metadata,
                                                      const std::string& base) {
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec) throw UserError(folder + ": cannot create the folder: " + ec.message());

    // Every entry checked before the first shard is written (write_safetensors checks again).
    std::set<std::string> names;
    for (const SafetensorsWriteEntry& t : tensors) {
        auto bad = [&](const std::string& what) {
            throw UserError(folder + ": cannot write tensor " + quoted_name(t.name) + ": " + what);
        };
        if (!valid_utf8(t.name)) bad("the name is not valid UTF-8");
        if (!names.insert(t.name).second) bad("the name appears twice");
        const auto want = safetensors_byte_size(t.dtype, t.shape);
        if (!want || *want != t.size) bad("its byte size does not match its shape and dtype");
    }

    // huggingface_hub split_state_dict_into_shards_factory.
    std::vector<std::vector<SafetensorsWriteEntry>> shards;
    std::vector<SafetensorsWriteEntry> current;
    uint64_t current_size = 0, total_size = 0;
    for (SafetensorsWriteEntry& t : tensors) {
        total_size += t.size;
        if (t.size > max_shard_bytes) {
            shards.push_back({std::move(t)});
            continue;
        }
        if (current_size + t.size > max_shard_bytes) {
            shards.push_back(std::move(current));
            current.clear();
            current_size = 0;
        }
        current_size += t.size;
        current.push_back(std::move(t));
    }
    if (!current.empty() || shards.empty()) shards.push_back(std::move(current));

    const fs::path dir(folder);
    const std::string index_name = base + ".safetensors.index.json";
    std::vector<std::string> written;
    std::set<std::string> keep;
    if (shards.size() == 1) {
        const std::string name = base + ".safetensors";
        write_safetensors((dir / name).string(), std::move(shards[0]), metadata);
        written.push_back((dir / name).string());
        keep.insert(name);
    } else {
        json weight_map = json::object();
        for (size_t i = 0; i < shards.size(); ++i) {
            const std::string name = shard_name(base, i, shards.size());
            for (const SafetensorsWriteEntry& t : shards[i]) weight_map[t.name] = name;
            write_safetensors((dir / name).string(), std::move(shards[i]), metadata);
            written.push_back((dir / name).string());
            keep.insert(name);
        }
        const json index = {{"metadata", {{"total_size", total_size}}}, {"weight_map", weight_map}};
        write_file_atomically((dir / index_name).string(), index.dump(2) + "\n");
        written.push_back((dir / index_name).string());
        keep.insert(index_name);
    }

    // Remove what an earlier save left that the new files do not replace.
    const std::regex stale("^" + std::regex_replace(base, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                           R"((-\d{5}-of-\d{5}\.safetensors|\.safetensors|\.safetensors\.index\.json)$)");
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        if (!keep.count(name) && std::regex_match(name, stale)) fs::remove(entry.path(), ec);
    }
    return written;
}

}  // namespace ql
