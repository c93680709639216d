// SPDX-License-Identifier: GPL-3.0-or-later
// What a MODEL argument names (CLI, recipes, GUI): an HF model folder, a llama.cpp GGUF file
// (engine/loading/gguf_model.h), or the word "demo" for the shipped built-in demo model
// (resources/demo; engine/core/demo_folder.h). Opens the model together with what data loading
// needs from it: its tokenizer for text data.
#pragma once

#include <memory>
#include <string>

#include "engine/data/dataset.h"
#include "engine/loading/gguf_model.h"
#include "engine/loading/model_text.h"
#include "engine/models/model.h"
#include "engine/quant/quantized_model.h"

namespace ql {

class LoraAdapters;

struct OpenedModel {
    std::unique_ptr<Model> model;
    std::string path;       // the folder (or the .gguf file)
    bool is_demo = false;   // the built-in demo (quantlab.json says so): character vocabulary
    ModelText text;         // tokenizer, special tokens, chat template (model_text.h)
    DataContext data;       // vocabulary, positions, text encoder (demo: synthetic_vocab; else
                            // tokenizer.json when the folder has one); encoders: sentences
    int64_t mask_token_id = -1;  // encoders: the tokenizer's [MASK] (masked-LM evaluation), -1 = none
    // A QuantLab quantized checkpoint (quantized_checkpoint.h): its quantizers, installed into
    // `model` (declared after it, so destroyed first). Null for FP models.
    std::unique_ptr<QuantizedModel> quantization;
    // A GGUF file: the file (kept mapped) and where each parameter came from, with the file's own
    // per-tensor types; null for folders. Its weights are already quantized (decoded values):
    // no quantizers are installed.
    std::shared_ptr<const GgufSource> gguf;
    // A LoRA run (engine/lora/adapted_model.h open_model_or_lora_run): `path` is the run, the base
    // was made again from its record; the adapters hooked into `model`'s layers (declared last, so
    // unhooked before the model goes), what they are ("LoRA r8 alpha 16") and their parameters,
    // served beside the base's weights (unmerged). Null / empty / 0 for every other model.
    std::shared_ptr<LoraAdapters> adapters;
    std::string adapter_summary;
    int64_t adapter_parameters = 0;
};

// "demo" -> the shipped demo folder (a UserError naming it when it is missing). A Hugging Face
// model id ("HuggingFaceTB/SmolLM2-135M-Instruct", optionally "@revision": a branch or tag under
// refs/, or a commit hash) that is not an existing path -> its snapshot folder in the local
// Hugging Face cache, as huggingface_hub lays it out (HF_HUB_CACHE, else HF_HOME/hub, else
// $XDG_CACHE_HOME/huggingface/hub or ~/.cache/huggingface/hub; models--owner--name/refs/main
// holds the commit, snapshots/<commit>/ the files, linked to blobs/). Offline: nothing is
// downloaded; an id that is not in the cache is a UserError naming where it looked. Anything
// else is returned unchanged. A retrained demo is a folder like any other: it is opened by its path.
std::string resolve_model_path(const std::string& model);

// The Hugging Face cache folder that resolve_model_path searches (the environment as above).
std::string hugging_face_hub_cache();

// A quantized checkpoint opens as its quantized model (quantizers installed, state restored).
// `storage`: an HF folder's weights as stored (memory-mapped BF16 / F16 / F32; the default) or
// as owned float32 copies (training: QAT / QAD update them in place). GGUF files and Model
// Optimizer checkpoints are decoded to float32 either way.
OpenedModel open_model(const std::string& model, WeightStorage storage = WeightStorage::AsStored);

// Moves the model to `device` (engine/models/model_device.h move_model), a quantized checkpoint
// with its quantizers' state (engine/quant/quantized_model_device.h). Call before any other
// quantizer of the run is created.
void move_opened_model(OpenedModel& m, at::Device device);

// The folder whose files (config.json, tokenizer ...) a checkpoint of `m` copies
// (save_quantized_checkpoint's source_folder): the model's own folder, or for a GGUF file a
// temporary folder with the files write_gguf_model_files writes, removed with this object.
class ModelSourceFiles {
public:
    explicit ModelSourceFiles(const OpenedModel& m);
    ~ModelSourceFiles();
    ModelSourceFiles(const ModelSourceFiles&) = delete;
    ModelSourceFiles& operator=(const ModelSourceFiles&) = delete;
    const std::string& folder() const { return folder_; }

private:
    std::string folder_;
    bool temporary_ = false;
};

}  // namespace ql
