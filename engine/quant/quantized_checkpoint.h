// SPDX-License-Identifier: GPL-3.0-or-later
// The QuantLab quantized checkpoint: what `quantlab-cli ptq` writes and every command that takes
// MODEL reads back into the same quantized model, bit for bit (docs/RECIPES.md "Checkpoint").
// An HF model folder plus:
//   model.safetensors            the weights the quantizers read (after smoothing / AWQ
//                                scaling; GPTQ layers: the weight before GPTQ), HF names, in the
//                                model's dtypes (a BF16 source stays BF16; weights an algorithm
//                                changed are float32)
//   quantlab_quant.safetensors   per quantized layer L: L.weight_quantized (the weight as the
//                                quantized forward uses it, on the format's grid) where it is not
//                                the plain rounding of L's weight (GPTQ, clip search, learned
//                                scales, importance): F32, or BF16 when "weight_quantized_snap"
//                                (quantlab_quant.json) says that rounding the BF16 values onto the
//                                grid of L's weight (engine/ptq/weight_grid.h) gives it back bit
//                                for bit (GPTQ's results: half the bytes); L.weight_scale
//                                (F32 decoded scales: per tensor / channel / group / block),
//                                L.weight_global_scale (NVFP4), L.input_amax (F32 scalar, static
//                                input quantizers), L.pre_quant_scale (F32 [in], x * s)
//   quantlab_recipe.json         the recipe
//   quantlab_kv_cache.json       calibrated K / V amax per attention (recipes with "kv_cache";
//                                engine/quant/kv_cache_scales.h), absent otherwise
//   quantlab_quant.json          per-layer settings and switches; written last (complete marker)
// plus the source folder's other files (config.json, tokenizer files, quantlab.json).
// Written in parts (the layer-by-layer PTQ pipeline writes each block when it is final), the two
// safetensors files are Hugging Face shards with an index: model-00001-of-000NN.safetensors ...
// model.safetensors.index.json, quantlab_quant-00001-of-000NN.safetensors ...
// quantlab_quant.safetensors.index.json.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/models/model.h"
#include "engine/quant/quantized_model.h"

namespace ql {

constexpr const char* kQuantStateFile = "quantlab_quant.json";

// Writes `out_folder` via "<out_folder>.partial" and a rename; an existing folder is replaced
// only with `force` (UserError otherwise). `source_folder` provides the files copied unchanged.
// `extra_files` (name -> contents) are written into the folder too (reports).
void save_quantized_checkpoint(const QuantizedModel& quantized, const std::string& source_folder,
                               const std::string& out_folder, bool force,
                               const std::vector<std::pair<std::string, std::string>>& extra_files = {});

// The same folder written part by part: the constructor checks `force`, makes
// "<out_folder>.partial" and copies the source's files; write_part writes one part's parameters
// and quantizer state (shard `index` of `parts`, or the single files when parts == 1); finish
// writes the indexes, recipe, extra files and the marker, and renames into place. Destroyed
// without finish() (an error, a cancelled job), it removes the partial folder: no partial output.
class QuantizedCheckpointWriter {
public:
    // `resume_state`: state() of a writer of the same checkpoint whose process was killed; the
    // partial folder it left is kept and continued instead of being made anew.
    QuantizedCheckpointWriter(const QuantizedModel& quantized, const std::string& source_folder, std::string out_folder,
                              bool force, int64_t parts, const std::string& resume_state = "");
    ~QuantizedCheckpointWriter();
    QuantizedCheckpointWriter(const QuantizedCheckpointWriter&) = delete;
    QuantizedCheckpointWriter& operator=(const QuantizedCheckpointWriter&) = delete;

    // `parameters`: HF names (written in file layout); `layers`: quantizers whose state to write
    // (unconfigured ones are skipped); `kv_caches`: attention sites' calibrated amax.
    void write_part(int64_t index, const std::vector<std::string>& parameters, const std::vector<LayerQuantizer*>& layers,
                    const std::vector<KvCacheQuantizer*>& kv_caches);
    void finish(const std::vector<std::pair<std::string, std::string>>& extra_files = {});

    // What has been written so far (JSON text), for a resume point; the partial folder's path.
    std::string state() const;
    const std::string& partial_folder() const { return partial_; }

private:
    const QuantizedModel& q_;
    std::string out_, partial_;
    bool force_ = false, finished_ = false;
    int64_t parts_ = 1;
    std::map<std::string, std::string> layer_entries_, kv_entries_;  // quantlab_quant.json entries (JSON text)
    std::map<std::string, std::string> model_map_, quant_map_;  // tensor -> shard file
    uint64_t model_bytes_ = 0, quant_bytes_ = 0;
};

bool is_quantized_checkpoint(const std::string& folder);

// For a folder written by save_quantized_checkpoint: the recipe's quantizers installed into
// `model` (loaded from the same folder) with the saved state; nullptr for other folders.
// Missing, extra or mis-shaped tensors and malformed JSON are UserErrors naming file and field.
std::unique_ptr<QuantizedModel> load_quantization(Model& model, const std::string& folder);

}  // namespace ql
