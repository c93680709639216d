// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/doctor_context.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <regex>

#include "engine/core/errors.h"
#include "engine/io/strict_json.h"
#include "engine/io/whole_file.h"
#include "engine/quant/recipe.h"

namespace ql {
namespace fs = std::filesystem;
using nlohmann::json;

DoctorCheck* DoctorContext::find(const std::string& id) {
    for (DoctorCheck& c : report_.checks)
        if (c.id == id) return &c;
    return nullptr;
}

void DoctorContext::check(const std::string& id, const std::string& title) {
    if (!find(id)) report_.checks.push_back({id, title, false, ""});
}

void DoctorContext::ran(const std::string& id, const std::string& note) {
    if (DoctorCheck* c = find(id)) {
        c->ran = true;
        if (!note.empty()) c->note = note;
    }
}

void DoctorContext::skipped(const std::string& id, const std::string& why) {
    if (DoctorCheck* c = find(id)) {
        c->ran = false;
        c->note = why;
    }
}

bool DoctorContext::has_run(const std::string& id) const {
    for (const DoctorCheck& c : report_.checks)
        if (c.id == id) return c.ran;
    return false;
}

void DoctorContext::error(const std::string& check, const std::string& where, const std::string& problem,
                          const std::string& consumer, const std::string& fix) {
    // One defect, one error: two tests of one check that catch the same tensor (an inverted
    // NVFP4 global scale fails both the magnitude test and the comparison with the manifest)
    // add their evidence to the first finding instead of counting twice.
    for (DoctorFinding& f : report_.findings)
        if (f.severity == DoctorSeverity::Error && f.check == check && f.where == where) {
            if (f.problem.find(problem) == std::string::npos) f.problem += "; also: " + problem;
            return;
        }
    report_.findings.push_back({DoctorSeverity::Error, check, where, problem, consumer, fix});
}

void DoctorContext::warning(const std::string& check, const std::string& where, const std::string& problem,
                            const std::string& consumer, const std::string& fix) {
    report_.findings.push_back({DoctorSeverity::Warning, check, where, problem, consumer, fix});
}

void DoctorContext::info(const std::string& check, const std::string& where, const std::string& problem) {
    report_.findings.push_back({DoctorSeverity::Info, check, where, problem, "", ""});
}

bool is_quantization_param(const std::string& p) {
    static const std::set<std::string> names = {
        "weight_packed", "weight_scale", "weight_scale_2", "weight_global_scale", "weight_zero_point", "weight_shape",
        "weight_g_idx",  "input_scale",  "input_global_scale", "input_zero_point", "pre_quant_scale", "k_scale", "v_scale",
        "q_scale",       "output_scale", "output_zero_point", "k_bias", "v_bias",
    };
    return names.count(p) != 0;
}

ExportTensor HfFolderView::tensor(const std::string& name) const {
    const SafetensorsFile::TensorInfo& info = checkpoint->info(name);
    const TensorBytes b = checkpoint->bytes(name);
    return ExportTensor{name, info.dtype, info.shape, std::vector<uint8_t>(b.data, b.data + b.size)};
}

bool is_embedding_name(const std::string& m) {
    const std::string leaf = m.substr(m.rfind('.') == std::string::npos ? 0 : m.rfind('.') + 1);
    return leaf == "embed_tokens" || leaf == "wte" || leaf == "wpe" || leaf.find("embeddings") != std::string::npos ||
           leaf == "lm_head" || leaf == "embed_positions" || leaf == "shared";
}

std::vector<std::string> HfFolderView::matrix_modules() const {
    std::vector<std::string> out;
    if (!checkpoint) return out;
    for (const auto& [module, params] : modules) {
        if (params.count("weight_packed")) {
            out.push_back(module);
            continue;
        }
        if (!params.count("weight")) continue;
        if (checkpoint->info(module + ".weight").shape.size() == 2) out.push_back(module);
    }
    return out;
}

HfFolderView read_hf_folder(const std::string& disk_path, const std::string& display_path, const std::string& consumer,
                            DoctorContext& ctx) {
    HfFolderView f;
    f.path = display_path;
    f.disk_path = disk_path;
    ctx.check("files", "config.json and every safetensors shard open as " + consumer + " opens them");
    auto shown = [&](const std::string& p) {
        return p.rfind(disk_path, 0) == 0 ? display_path + p.substr(disk_path.size()) : p;
    };
    const std::string config_path = disk_path + "/config.json";
    try {
        const std::string text = read_whole_file(config_path, "config.json");
        f.config = parse_strict_json(text.data(), text.data() + text.size());
        if (!f.config.is_object()) throw UserError(config_path + ": not a JSON object");
    } catch (const std::exception& e) {
        f.config = json();
        ctx.error("files", display_path + "/config.json", std::string("unreadable: ") + e.what(),
                  consumer + " fails to load the model (no architecture, no quantization config)",
                  "write a valid config.json (the source model's, with quantization_config)");
    }
    try {
        f.checkpoint = SafetensorsCheckpoint::open(disk_path);
        for (const std::string& name : f.checkpoint->names()) {
            const size_t dot = name.rfind('.');
            if (dot == std::string::npos) continue;
            f.modules[name.substr(0, dot)].insert(name.substr(dot + 1));
        }
    } catch (const std::exception& e) {
        f.checkpoint.reset();
        // Messages name the partial folder while an export is checked before its rename.
        const std::string what = with_path_shown(e.what(), disk_path, display_path);
        ctx.error("files", display_path, "the safetensors checkpoint does not open: " + what,
                  consumer + " fails to load (a truncated or lying shard)", "export again; check the disk and the copy");
    }
    const std::string manifest_path = disk_path + "/" + kExportManifestFile;
    std::error_code ec;
    if (fs::is_regular_file(manifest_path, ec)) {
        try {
            f.manifest = parse_export_manifest(read_whole_file(manifest_path, "export manifest"), shown(manifest_path));
        } catch (const std::exception& e) {
            ctx.warning("files", display_path + "/" + kExportManifestFile, std::string("unreadable: ") + e.what(),
                        "consumers ignore this file; the doctor cannot compare the weights with what QuantLab evaluated",
                        "export again");
        }
    }
    ctx.ran("files", f.checkpoint ? std::to_string(f.checkpoint->names().size()) + " tensors in " +
                                        std::to_string(f.checkpoint->files().size()) + " file(s)"
                                  : "");
    return f;
}

namespace {

int64_t vocab_of_tokenizer_json(const json& t, int64_t* max_id) {
    int64_t n = 0;
    *max_id = -1;
    if (t.contains("model") && t["model"].is_object() && t["model"].contains("vocab")) {
        const json& v = t["model"]["vocab"];
        if (v.is_object()) {
            for (auto it = v.begin(); it != v.end(); ++it)
                if (it->is_number_integer()) *max_id = std::max<int64_t>(*max_id, it->get<int64_t>());
            n = static_cast<int64_t>(v.size());
        } else if (v.is_array()) {
            n = static_cast<int64_t>(v.size());
            *max_id = n - 1;
        }
    }
    if (t.contains("added_tokens") && t["added_tokens"].is_array())
        for (const json& a : t["added_tokens"])
            if (a.is_object() && a.contains("id") && a["id"].is_number_integer()) *max_id = std::max<int64_t>(*max_id, a["id"].get<int64_t>());
    return n;
}

}  // namespace

void check_config_tokenizer(const HfFolderView& f, DoctorContext& ctx) {
    ctx.check("config-tokenizer", "config.json, the embedding and the tokenizer agree (vocabulary size, special token ids)");
    if (!f.config.is_object()) return ctx.skipped("config-tokenizer", "no readable config.json");
    const json& c = f.config.contains("text_config") && f.config["text_config"].is_object() ? f.config["text_config"] : f.config;
    std::error_code ec;
    const std::vector<std::string> tokenizer_files = {"tokenizer.json", "tokenizer.model", "vocab.txt", "vocab.json", "quantlab.json"};
    bool any = false;
    for (const std::string& t : tokenizer_files) any = any || fs::is_regular_file(f.disk_path + "/" + t, ec);
    if (!any)
        ctx.warning("config-tokenizer", f.path, "no tokenizer files (tokenizer.json, tokenizer.model, vocab.txt)",
                    "vLLM and transformers cannot tokenize text with this folder alone (they need --tokenizer)",
                    "copy the source model's tokenizer files into the export");
    int64_t vocab = -1;
    if (c.contains("vocab_size") && c["vocab_size"].is_number_integer()) vocab = c["vocab_size"].get<int64_t>();
    // The embedding's rows.
    if (vocab > 0 && f.checkpoint) {
        for (const auto& [module, params] : f.modules) {
            const std::string leaf = module.substr(module.rfind('.') == std::string::npos ? 0 : module.rfind('.') + 1);
            if ((leaf != "embed_tokens" && leaf != "wte" && leaf != "word_embeddings") || !params.count("weight")) continue;
            const auto& shape = f.checkpoint->info(module + ".weight").shape;
            if (!shape.empty() && shape[0] != vocab)
                ctx.error("config-tokenizer", module + ".weight",
                          "the embedding has " + std::to_string(shape[0]) + " rows, config.json vocab_size is " + std::to_string(vocab),
                          "transformers and vLLM fail to load (size mismatch)", "make vocab_size the embedding's row count");
        }
    }
    if (fs::is_regular_file(f.disk_path + "/tokenizer.json", ec) && vocab > 0) {
        try {
            const std::string text = read_whole_file(f.disk_path + "/tokenizer.json", "tokenizer.json");
            const json t = json::parse(text);
            int64_t max_id = -1;
            vocab_of_tokenizer_json(t, &max_id);
            if (max_id >= vocab)
                ctx.error("config-tokenizer", f.path + "/tokenizer.json",
                          "token id " + std::to_string(max_id) + " is beyond config.json vocab_size " + std::to_string(vocab),
                          "the model indexes past its embedding for those tokens (vLLM: index error or garbage)",
                          "use the tokenizer the model was trained with");
        } catch (const std::exception& e) {
            ctx.error("config-tokenizer", f.path + "/tokenizer.json", std::string("not valid JSON: ") + e.what(),
                      "vLLM and transformers fail to load the tokenizer", "copy the source model's tokenizer.json");
        }
    }
    if (vocab > 0) {
        for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id"}) {
            if (!c.contains(key)) continue;
            std::vector<int64_t> ids;
            if (c[key].is_number_integer()) ids.push_back(c[key].get<int64_t>());
            else if (c[key].is_array())
                for (const json& v : c[key])
                    if (v.is_number_integer()) ids.push_back(v.get<int64_t>());
            for (int64_t id : ids)
                if (id < 0 || id >= vocab)
                    ctx.error("config-tokenizer", std::string("config.json ") + key,
                              "id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(vocab) + ")",
                              "generation never stops or indexes past the embedding", "set the tokenizer's special token id");
        }
    }
    ctx.ran("config-tokenizer", vocab > 0 ? "vocab_size " + std::to_string(vocab) : "no vocab_size in config.json");
}

float finite_amax(const std::vector<float>& v) {
    float m = 0;
    for (float x : v)
        if (std::isfinite(x)) m = std::max(m, std::fabs(x));
    return m;
}

std::string with_path_shown(std::string text, const std::string& disk_path, const std::string& shown) {
    if (disk_path.empty() || disk_path == shown) return text;
    // Scan on past each replacement: `shown` may contain `disk_path` (a folder and its .partial).
    for (size_t p = text.find(disk_path); p != std::string::npos; p = text.find(disk_path, p + shown.size()))
        text.replace(p, disk_path.size(), shown);
    return text;
}

UlpDiff ulp_difference(const std::vector<float>& a, const std::vector<float>& b) {
    UlpDiff d;
    auto ordered = [](float x) {
        int32_t i;
        std::memcpy(&i, &x, 4);
        return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : static_cast<int64_t>(i);
    };
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
        if (a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i]))) continue;
        ++d.differing;
        if (d.first < 0) d.first = static_cast<int64_t>(i);
        const int64_t u = std::max(ordered(a[i]) - ordered(b[i]), ordered(b[i]) - ordered(a[i]));
        d.one_ulp += u == 1;
        d.two_ulps += u == 2;
        d.max_ulps = std::max(d.max_ulps, u);
    }
    return d;
}

bool ct_name_matches(const std::string& pattern, const std::string& name) {
    if (pattern.rfind("re:", 0) == 0) {
        try {
            return std::regex_search(name, std::regex(pattern.substr(3)), std::regex_constants::match_continuous);
        } catch (const std::regex_error&) {
            return false;
        }
    }
    return pattern == name || (pattern.find('*') != std::string::npos && glob_match(pattern, name));
}

}  // namespace ql
