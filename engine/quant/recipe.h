// SPDX-License-Identifier: GPL-3.0-or-later
// A PTQ recipe (docs/RECIPES.md): which quantizer of which layer gets which settings, the
// algorithm that prepares the weights, and how much calibration data to use. The quant_cfg list
// follows NVIDIA Model Optimizer's (modelopt_recipes/configs/ptq): entries
//   {"quantizer_name": "<glob>", "enable": bool, "cfg": {<settings>}}
// are applied in order to every quantizer name "<layer>.weight_quantizer" /
// "<layer>.input_quantizer"; a later entry overrides the fields it sets. Quantizers no entry
// enables stay off. Presets with Model Optimizer's names ship in resources/presets/.
// Plain C++ (facade-safe).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/quant/kv_cache_settings.h"
#include "engine/quant/quantizer_settings.h"
#include "engine/quant/rotation_settings.h"

namespace ql {

// The fields one quant_cfg entry sets (unset = keep what earlier entries gave).
struct QuantizerPatch {
    std::optional<bool> enabled;
    std::optional<std::string> format, granularity, mx_scale, calibrator;
    std::optional<int64_t> group_size;
    std::optional<int> axis;
    std::optional<bool> asymmetric, double_quant, dynamic;
    std::optional<double> percentile;

    void apply_to(QuantizerSettings& s) const;
    bool configures() const;  // sets anything but "enable: false" (see plan_recipe)
};

struct RecipeEntry {
    std::string quantizer_name;  // glob: * any run of characters (dots included), ? one character
    QuantizerPatch patch;
};

// How the weights are prepared before they are rounded (all methods calibrate static input
// scales first, as Model Optimizer's max calibration does).
struct PtqAlgorithm {
    std::string method = "max";       // max (= RTN weights) | smoothquant | awq | gptq
    double smoothquant_alpha = 1.0;   // migration strength (Model Optimizer's default)
    bool smoothquant_fold = false;    // smooth only groups whose scales fold into a preceding norm
    int64_t awq_grid = 10;            // alpha grid points in [0, 1) (Model Optimizer awq_lite alpha_step 0.1)
    bool awq_clip = false;            // AWQ clipping search (Model Optimizer's awq_full = lite + clip)
    bool awq_fold = false;            // AWQ scales folded into the preceding norm / Linear (engine/ptq/awq_fold.h)
    int64_t gptq_block_size = 128;    // lazy batch width
    double gptq_damp_percent = 0.01;  // dampening, fraction of mean(diag(H))
    bool gptq_act_order = false;
};

struct CalibrationSettings {
    int64_t samples = 128;          // calibration sequences / images
    int64_t sequence_length = 0;    // 0 = the data's default
    int64_t batch_size = 16;
};

struct Recipe {
    std::string name;          // preset name or file stem
    std::string description;
    std::vector<RecipeEntry> quant_cfg;
    PtqAlgorithm algorithm;
    CalibrationSettings calibration;
    // An importance matrix file (llama.cpp's GGUF or .dat imatrix, `quantlab-cli imatrix`) for
    // the weight calibrator "imatrix_mse" and the GGUF formats' own weighted searches; "" = none.
    std::string imatrix;
    // "share_fused_scales": layers that consumers fuse (q/k/v, gate/up; engine/quant/fused_layers.h)
    // get one per-tensor weight amax (NVFP4 global scale, FP8 / INT per-tensor scale) and one
    // static input amax, in PTQ and QAT/QAD (on in the NVFP4 and FP8 presets).
    bool share_fused_scales = false;
    KvCacheSettings kv_cache;  // the `kv_cache` section (off when absent)
    RotationSettings rotation; // the `rotation` section (off when absent)
    std::string source;        // "preset NVFP4_DEFAULT" or the file path (for messages)
};

// `quantlab-cli ptq|train --kv-cache NAME --rotate NAME` on top of any recipe, as Model
// Optimizer's hf_ptq.py merges its --kv_cache_qformat preset into the --qformat config: NAME
// replaces the recipe's section ("none" removes it; "" leaves the recipe as it is) and the
// recipe's name gets "-kv_NAME" / "-rotate_NAME". UserError naming the option for unknown names.
void overlay_recipe(Recipe& recipe, const std::string& kv_cache, const std::string& rotate);

// `name_or_path`: a preset name (case-insensitive, "_CFG" suffix allowed) or a JSON file.
// UserError naming the file and field for anything malformed or unknown.
Recipe load_recipe(const std::string& name_or_path);
Recipe parse_recipe(const std::string& json_text, const std::string& source);
std::string recipe_to_json(const Recipe& recipe);  // parse_recipe(recipe_to_json(r)) == r

std::vector<std::string> preset_names();
bool is_preset_name(const std::string& name);

// The settings a quantizer gets from the recipe's entries (no validation against shapes).
QuantizerSettings settings_for(const Recipe& recipe, const std::string& quantizer_name);

bool glob_match(const std::string& pattern, const std::string& text);

}  // namespace ql
