// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/export_folder.h"

#include <algorithm>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/models/sentence_embedding_config.h"
#include "engine/io/atomic_file.h"

namespace ql {
namespace fs = std::filesystem;

bool is_hf_weights_file(const std::string& name) {
    auto ends = [&](const std::string& s) { return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0; };
    return ends(".safetensors") || ends(".safetensors.index.json") || ends(".bin") || ends(".bin.index.json");
}

ExportFolder::ExportFolder(std::string out, bool force) : out_(std::move(out)) {
    while (out_.size() > 1 && out_.back() == '/') out_.pop_back();
    partial_ = out_ + ".partial";
    std::error_code ec;
    if (fs::exists(out_, ec) && !force) throw UserError(out_ + " already exists (pass --force to replace it)");
    fs::remove_all(partial_, ec);
    if (!fs::create_directories(partial_, ec) || ec)
        throw UserError("cannot create " + partial_ + ": " + (ec ? ec.message() : std::string("it already exists")));
}

ExportFolder::~ExportFolder() {
    if (committed_) return;
    std::error_code ec;
    fs::remove_all(partial_, ec);
}

std::string ExportFolder::file(const std::string& name) const { return partial_ + "/" + name; }

void ExportFolder::copy_from(const std::string& source, bool (*keep)(const std::string&)) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(source, ec)) {
        const std::string name = entry.path().filename().string();
        if (!entry.is_regular_file() || !keep(name)) continue;
        fs::copy_file(entry.path(), file(name), fs::copy_options::overwrite_existing, ec);
        if (ec) throw UserError("cannot copy " + entry.path().string() + " to " + file(name) + ": " + ec.message());
    }
    if (ec) throw UserError("cannot read " + source + ": " + ec.message());
    copy_sentence_module_folders(source, partial_);  // sentence-transformers' 1_Pooling/ ...
}

void ExportFolder::write(const std::string& name, const std::string& contents) { write_file_atomically(file(name), contents); }

void ExportFolder::commit() {
    std::error_code ec;
    const fs::path out(out_), partial(partial_), old(out_ + ".old");
    fs::remove_all(old, ec);
    const bool had_old = fs::exists(out, ec);
    if (had_old) {
        fs::rename(out, old, ec);
        if (ec) throw UserError("cannot move aside " + out_ + ": " + ec.message());
    }
    fs::rename(partial, out, ec);
    if (ec) {
        const std::string why = ec.message();
        if (had_old) fs::rename(old, out, ec);
        throw UserError("cannot rename " + partial_ + " into place: " + why);
    }
    committed_ = true;
    if (had_old) fs::remove_all(old, ec);
    files_.clear();
    bytes_ = 0;
    for (const auto& entry : fs::recursive_directory_iterator(out, ec)) {
        if (!entry.is_regular_file()) continue;
        files_.push_back(entry.path().string());
        bytes_ += static_cast<int64_t>(entry.file_size(ec));
    }
    std::sort(files_.begin(), files_.end());
}

}  // namespace ql
