// SPDX-License-Identifier: GPL-3.0-or-later
// What one evaluation run of a suite was (docs/EVAL_SUITES.md "Runs"): the model (as given, its
// resolved path and content hash), its quantization scheme, the chat template that rendered the
// prompts, the generation settings, the suite (path, hash, items run) and the software
// (QuantLab version and commit, LibTorch, device, threads). Recorded with every run so that a
// table of results can say exactly what it compares, and so that runs made with different
// settings are not put side by side by accident (comparability_problems). Plain C++
// (nlohmann_json, OpenSSL through engine/io/sha256.h).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace ql::evaluation {

// How items were decoded. An item's own max_tokens wins over max_tokens.
struct DecodingManifest {
    int64_t max_tokens = 0;          // generated tokens per item unless the item says otherwise
    double temperature = 0;          // 0: greedy
    int64_t top_k = 0;
    double top_p = 1, min_p = 0, repetition_penalty = 1;
    int64_t samples = 1;             // generations per item (replicates); 1 when greedy
    uint64_t seed = 0;               // sampled runs: replicate r of item i draws with seed + r * items + i
    std::string description;         // describe_sampling(): "greedy" / "sampled: temperature 0.7, ..."
};

struct RunManifest {
    std::string label;               // what tables call the run ("fp", "NVFP4_DEFAULT" ...)
    std::string model;               // the MODEL argument as given
    std::string model_path;          // resolved (the demo's folder; absolute)
    std::string model_kind;          // "hf folder", "quantized checkpoint", "gguf", "demo"
    std::string model_sha256;        // content_sha256(model_path)
    std::string quant_scheme;        // "fp" for a full-precision folder, the recipe's name, "gguf MOSTLY_Q4_1"
    std::string quant_formats;       // the formats in use ("weights nvfp4 (210 layers), inputs nvfp4 dynamic ...")
    double weight_bits = 16;         // element bits of the quantized weights (the widest; 16 = not quantized)
    std::string recipe_json;         // the recipe as applied ("" for none)
    std::string kv_cache;            // the KV-cache format ("bf16" when not quantized)
    std::string chat_template_sha256, chat_template_origin;  // "" when the model has none (plain prompts)
    std::string prompt_format;       // "chat template" or "plain" (no template: the user message as the prompt)
    // "template": the template renders `tools`; "system message": the template ignores them and
    // they are written into the system message (tool_prompt.h); "" when no item has tools.
    std::string tools_mode;
    std::string default_system;      // the template's own system message (folded tools go after it)
    DecodingManifest decoding;
    std::string suite, suite_sha256; // as given, and EvalSuite::sha256
    std::vector<std::string> item_ids;  // the items run, in suite order (a filtered run holds fewer)
    std::string quantlab_version, quantlab_commit, torch_version, device;
    int64_t threads = 0;
    std::string started_at;          // UTC, ISO 8601
    double seconds = 0;              // wall time of the whole run (loading, generation, logit metrics)
};

nlohmann::ordered_json manifest_json(const RunManifest& m);
// UserError "<source>: manifest.<field>: ..." for a missing or mistyped field.
RunManifest manifest_from_json(const nlohmann::json& j, const std::string& source);

// Why `b` must not be put side by side with `a` (empty when it may): every generation setting,
// the suite and its item set, the chat template, the prompt format and how tools are offered
// must agree; the model, its quantization, the software and the times may differ. Each entry
// names the field and both values ("decoding.max_tokens: 64 vs 128").
std::vector<std::string> comparability_problems(const RunManifest& a, const RunManifest& b);

// SHA-256 of a file's bytes; of a folder (an HF model folder), SHA-256 over the sorted list of
// its regular files, one line "relative/path\0size\0sha256\n" each -- the hash a project records
// for the model (projects/content_hash.h hash_content), so the two can be matched. UserError
// naming the path when it cannot be read.
std::string content_sha256(const std::string& path);

// The current time, UTC, "2025-11-30T14:05:09Z".
std::string utc_timestamp();

}  // namespace ql::evaluation
