// SPDX-License-Identifier: GPL-3.0-or-later
// A LoRA run opened for use: the quantized base made again from the adapter's record
// (quantlab_lora.json: the model, the recipe, the calibration; LoftQ's base weights) with the
// adapter attached, checked against the fingerprint of the base it was trained on. What the merge
// preview, `lora logits`, the merged exports and the evaluation suites (a run given to
// `evalsuite` as MODEL) all open.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/jobs/job.h"
#include "engine/lora/base_fingerprint.h"
#include "engine/lora/lora_adapters.h"
#include "engine/lora/lora_base.h"
#include "engine/lora/peft_adapter.h"

namespace ql {

struct AdaptedModel {
    std::string folder;  // the adapter folder (RUN/adapter, or the folder given)
    PeftAdapter files;
    LoraBaseSource source;
    LoraBase base;
    std::unique_ptr<LoraAdapters> adapters;  // declared after `base`: unhooked before the model goes
    BaseFingerprint trained_on;
};

// Whether `path` is a LoRA run (DIR of 'train lora|qlora': DIR/adapter/quantlab_lora.json) or a
// QuantLab adapter folder (a PEFT folder with quantlab_lora.json). Also declared in the facade
// (engine/api/lora_api.h) for the GUI and the CLI.
bool is_lora_run(const std::string& path);

// RUN/adapter, or RUN itself when it is an adapter folder; UserError otherwise.
std::string adapter_folder_of(const std::string& run);

// Opens the run's base on `device` and attaches its adapter. check_base: a base made again that
// differs from the recorded fingerprint (the model file changed) is a UserError naming the first
// difference; without it the caller compares (the doctor measures the drift).
AdaptedModel open_adapted_model(const std::string& run, const std::string& device, const CancellationToken& cancel,
                                bool check_base = true);

// Attaches the adapter in `m.files` to `m.base` (replacing any attached one).
void attach_adapter(AdaptedModel& m);

// A LoRA run as a model like any other (what was trained: the quantized base with the adapter,
// unmerged): OpenedModel::path is `run`, quantization the base's quantizers, adapters / adapter_*
// set, opened on `device` (move_opened_model to the same device then does nothing). The base is
// checked against its fingerprint as open_adapted_model does.
OpenedModel open_lora_run_model(const std::string& run, const std::string& device, const CancellationToken& cancel);

// open_lora_run_model for a LoRA run (is_lora_run), open_model otherwise.
OpenedModel open_model_or_lora_run(const std::string& model, const std::string& device, const CancellationToken& cancel);

}  // namespace ql
