// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/lora/adapted_model.h"

#include <cstdio>
#include <filesystem>

#include "engine/core/errors.h"

namespace ql {
namespace fs = std::filesystem;

bool is_lora_run(const std::string& path) {
    std::error_code ec;
    return fs::is_regular_file(fs::path(path) / "adapter" / kLoraRecordFile, ec) ||
           (fs::is_regular_file(fs::path(path) / kLoraRecordFile, ec) && is_peft_adapter_folder(path));
}

std::string adapter_folder_of(const std::string& run) {
    if (fs::is_regular_file(fs::path(run) / "adapter" / kLoraRecordFile)) return (fs::path(run) / "adapter").string();
    if (fs::is_regular_file(fs::path(run) / kLoraRecordFile)) return run;
    throw UserError(run + ": not a LoRA run (no adapter/" + std::string(kLoraRecordFile) + ") or QuantLab adapter folder");
}

void attach_adapter(AdaptedModel& m) {
    m.adapters.reset();  // the old hooks off before the new ones go on
    m.adapters = std::make_unique<LoraAdapters>(m.base.model(), m.files.settings);
    m.adapters->load(m.files.tensors, m.folder + "/adapter_model.safetensors");
}

AdaptedModel open_adapted_model(const std::string& run, const std::string& device, const CancellationToken& cancel,
                                bool check_base) {
    AdaptedModel m;
    m.folder = adapter_folder_of(run);
    m.files = read_peft_adapter(m.folder);
    const std::string record = m.folder + "/" + kLoraRecordFile;
    if (!m.files.record.contains("base")) throw UserError(record + ": base: missing");
    m.source = lora_base_source_from_json(m.files.record["base"], m.folder, record);
    m.trained_on = fingerprint_from_json(m.files.record.value("base_fingerprint", nlohmann::json::object()), record);
    m.base = open_lora_base(m.source, device, cancel);
    if (check_base) {
        const BaseFingerprint now = fingerprint_base(*m.base.quantized);
        if (now.sha256 != m.trained_on.sha256) {
            const auto diff = compare_fingerprints(m.trained_on, now);
            throw UserError(m.folder + ": the base made again from " + m.source.model +
                            " differs from the one the adapter was trained on (" +
                            (diff.empty() ? std::string("fingerprint") : diff.front().module + ": " + diff.front().what) +
                            "); the model file changed");
        }
    }
    attach_adapter(m);
    return m;
}

OpenedModel open_lora_run_model(const std::string& run, const std::string& device, const CancellationToken& cancel) {
    AdaptedModel a = open_adapted_model(run, device, cancel);
    OpenedModel m = std::move(a.base.opened);
    // The base's quantizers: a recipe of the run's own (PTQ of the base) or a checkpoint's.
    if (a.base.own) m.quantization = std::move(a.base.own);
    const LoraSettings& s = a.adapters->settings();
    char alpha[32];
    std::snprintf(alpha, sizeof alpha, "%g", s.alpha);
    m.adapter_summary = "LoRA r" + std::to_string(s.rank) + " alpha " + alpha;
    m.adapter_parameters = a.adapters->parameter_count();
    m.adapters = std::shared_ptr<LoraAdapters>(std::move(a.adapters));
    m.path = run;
    return m;
}

OpenedModel open_model_or_lora_run(const std::string& model, const std::string& device, const CancellationToken& cancel) {
    return is_lora_run(model) ? open_lora_run_model(model, device, cancel) : open_model(model);
}

}  // namespace ql
