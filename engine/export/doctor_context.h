// SPDX-License-Identifier: GPL-3.0-or-later
// What the Export Doctor's checks share (export_doctor.h): the report being written, and an HF
// folder as its consumer sees it -- config.json, the safetensors checkpoint, QuantLab's export
// manifest, the modules the tensor names imply. Internal to engine/export.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/doctor_report.h"
#include "engine/export/export_manifest.h"
#include "engine/export/hf_modelopt_layout.h"
#include "engine/io/safetensors_checkpoint.h"

namespace ql {

class DoctorContext {
public:
    explicit DoctorContext(DoctorReport& report) : report_(report) {}

    // Declares a check (in report order); ran() / skipped() say what became of it.
    void check(const std::string& id, const std::string& title);
    void ran(const std::string& id, const std::string& note = "");
    void skipped(const std::string& id, const std::string& why);
    bool has_run(const std::string& id) const;

    void error(const std::string& check, const std::string& where, const std::string& problem, const std::string& consumer,
               const std::string& fix);
    void warning(const std::string& check, const std::string& where, const std::string& problem, const std::string& consumer,
                 const std::string& fix);
    void info(const std::string& check, const std::string& where, const std::string& problem);
    DoctorReport& report() { return report_; }

private:
    DoctorCheck* find(const std::string& id);
    DoctorReport& report_;
};

// The tensor parameter names QuantLab's layouts and compressed-tensors use for quantization
// state ("weight_scale", "weight_packed", "input_global_scale", "k_scale" ...).
bool is_quantization_param(const std::string& param);

struct HfFolderView {
    std::string path;                              // the folder as named in messages
    std::string disk_path;                         // where it is read from (a .partial folder)
    nlohmann::json config;                         // config.json (object), null when unreadable
    std::optional<SafetensorsCheckpoint> checkpoint;
    std::optional<ExportManifest> manifest;        // quantlab_export.json
    // module -> its parameters present ("weight", "weight_scale", ...), from the tensor names.
    std::map<std::string, std::set<std::string>> modules;

    bool has(const std::string& tensor) const { return checkpoint && checkpoint->contains(tensor); }
    ExportTensor tensor(const std::string& name) const;  // a copy of the tensor's bytes
    // Modules whose weight is a matrix (2-D `weight` or a packed weight): Linear layers and
    // embeddings; embeddings and lm_head are told by name (is_embedding_name).
    std::vector<std::string> matrix_modules() const;
};

bool is_embedding_name(const std::string& module);

// Reads what it can (each failure a finding of the "files" check, naming the file): config.json,
// the safetensors checkpoint (a truncated or lying shard is an error), quantlab_export.json.
HfFolderView read_hf_folder(const std::string& disk_path, const std::string& display_path, const std::string& consumer,
                            DoctorContext& ctx);

// config.json vs the tokenizer and the embedding: vocabulary sizes, special token ids, files present.
void check_config_tokenizer(const HfFolderView& folder, DoctorContext& ctx);

// Layout-specific checks (doctor_compressed_tensors.cpp, doctor_modelopt.cpp, doctor_gguf.cpp).
void check_compressed_tensors_folder(const HfFolderView& folder, DoctorContext& ctx);
void check_modelopt_folder(const HfFolderView& folder, DoctorContext& ctx);
void check_gguf_file(const std::string& disk_path, const std::string& display_path, DoctorContext& ctx);
// doctor_onnx.cpp: a folder holding model.onnx, or a .onnx file.
bool is_onnx_artifact(const std::string& path);
void check_onnx_model(const std::string& disk_path, const std::string& display_path, DoctorContext& ctx);

// `text` with every occurrence of `disk_path` replaced by `shown` (messages name the folder the
// user sees, not the .partial folder an export is checked in).
std::string with_path_shown(std::string text, const std::string& disk_path, const std::string& shown);

// Shared by both HF layouts: the largest |w| of a decoded weight, finite values only.
float finite_amax(const std::vector<float>& v);
// Elements of `a` and `b` that differ and the largest difference in float32 ulps.
struct UlpDiff {
    int64_t differing = 0;
    int64_t one_ulp = 0, two_ulps = 0;  // elements exactly 1 / 2 ulp apart
    int64_t max_ulps = 0;
    int64_t first = -1;
};
UlpDiff ulp_difference(const std::vector<float>& a, const std::vector<float>& b);
// A name matched by compressed-tensors' rules (exact, or "re:<regex>" fully matching) or, for
// Model Optimizer's exclude_modules, by a glob ("*" any run).
bool ct_name_matches(const std::string& pattern, const std::string& name);

}  // namespace ql
