// SPDX-License-Identifier: GPL-3.0-or-later
// A folder export written crash-safely (shared/design/EXPORT.md "Safety of writing"): files go
// into "<out>.partial", which replaces "<out>" by a rename only when complete (commit). An
// existing "<out>" is refused unless `force`; with `force` the old folder goes only after the
// new one is in place. Destroying an uncommitted ExportFolder removes the partial folder, so an
// error or a cancellation leaves nothing under the final name. Errors are UserErrors naming the
// path and the reason ("Permission denied", "File too large", "No space left on device").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ql {

class ExportFolder {
public:
    ExportFolder(std::string out, bool force);
    ~ExportFolder();
    ExportFolder(const ExportFolder&) = delete;
    ExportFolder& operator=(const ExportFolder&) = delete;

    // The path of `name` inside the partial folder.
    std::string file(const std::string& name) const;
    const std::string& partial_path() const { return partial_; }
    // Copies the source folder's regular files for which keep(name) is true, and the
    // sentence-transformers module folders its modules.json names (1_Pooling/ ...).
    void copy_from(const std::string& source_folder, bool (*keep)(const std::string& name));
    void write(const std::string& name, const std::string& contents);  // atomically
    // Renames into place; returns the final file paths (sorted) and their total size in bytes.
    void commit();
    const std::vector<std::string>& files() const { return files_; }
    int64_t bytes() const { return bytes_; }

private:
    std::string out_, partial_;
    bool committed_ = false;
    std::vector<std::string> files_;
    int64_t bytes_ = 0;
};

// A check of the complete partial folder before it is renamed into place (the Export Doctor,
// engine/api/export_api.cpp): throwing aborts the export, leaving nothing under the final name.
using FolderCheck = std::function<void(const std::string& partial_folder)>;

// HF weight files (model*.safetensors and their index), which exports write themselves.
bool is_hf_weights_file(const std::string& name);

}  // namespace ql
