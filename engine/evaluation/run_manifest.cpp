// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/evaluation/run_manifest.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/evaluation/json_fields.h"
#include "engine/io/sha256.h"

namespace ql::evaluation {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

std::string manifest_number_text(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v);
    return b;
}

}  // namespace

ordered_json manifest_json(const RunManifest& m) {
    ordered_json d;
    d["max_tokens"] = m.decoding.max_tokens;
    d["temperature"] = m.decoding.temperature;
    d["top_k"] = m.decoding.top_k;
    d["top_p"] = m.decoding.top_p;
    d["min_p"] = m.decoding.min_p;
    d["repetition_penalty"] = m.decoding.repetition_penalty;
    d["samples"] = m.decoding.samples;
    d["seed"] = m.decoding.seed;
    d["description"] = m.decoding.description;
    ordered_json j;
    j["label"] = m.label;
    j["model"] = m.model;
    j["model_path"] = m.model_path;
    j["model_kind"] = m.model_kind;
    j["model_sha256"] = m.model_sha256;
    j["quant_scheme"] = m.quant_scheme;
    j["quant_formats"] = m.quant_formats;
    j["weight_bits"] = m.weight_bits;
    j["recipe_json"] = m.recipe_json;
    j["kv_cache"] = m.kv_cache;
    j["chat_template_sha256"] = m.chat_template_sha256;
    j["chat_template_origin"] = m.chat_template_origin;
    j["prompt_format"] = m.prompt_format;
    j["tools_mode"] = m.tools_mode;
    j["default_system"] = m.default_system;
    j["decoding"] = std::move(d);
    j["suite"] = m.suite;
    j["suite_sha256"] = m.suite_sha256;
    j["item_ids"] = m.item_ids;
    j["quantlab_version"] = m.quantlab_version;
    j["quantlab_commit"] = m.quantlab_commit;
    j["torch_version"] = m.torch_version;
    j["device"] = m.device;
    j["threads"] = m.threads;
    j["started_at"] = m.started_at;
    j["seconds"] = m.seconds;
    return j;
}

RunManifest manifest_from_json(const nlohmann::json& j, const std::string& source) {
    try {
        const JsonFields f(j, "manifest.");
        f.only({"label", "model", "model_path", "model_kind", "model_sha256", "quant_scheme", "quant_formats", "weight_bits",
                "recipe_json", "kv_cache", "chat_template_sha256", "chat_template_origin", "prompt_format", "tools_mode",
                "default_system", "decoding", "suite", "suite_sha256", "item_ids", "quantlab_version", "quantlab_commit",
                "torch_version", "device", "threads", "started_at", "seconds"});
        RunManifest m;
        m.label = f.text("label");
        m.model = f.text("model");
        m.model_path = f.text("model_path");
        m.model_kind = f.text("model_kind");
        m.model_sha256 = f.text("model_sha256");
        m.quant_scheme = f.text("quant_scheme");
        m.quant_formats = f.text("quant_formats");
        m.weight_bits = f.non_negative("weight_bits");
        m.recipe_json = f.text("recipe_json");
        m.kv_cache = f.text("kv_cache");
        m.chat_template_sha256 = f.text("chat_template_sha256");
        m.chat_template_origin = f.text("chat_template_origin");
        m.prompt_format = f.text("prompt_format");
        m.tools_mode = f.text("tools_mode");
        m.default_system = f.text("default_system");
        const JsonFields d = f.object("decoding");
        d.only({"max_tokens", "temperature", "top_k", "top_p", "min_p", "repetition_penalty", "samples", "seed", "description"});
        m.decoding.max_tokens = d.integer("max_tokens", 1);
        m.decoding.temperature = d.non_negative("temperature");
        m.decoding.top_k = d.integer("top_k", 0);
        m.decoding.top_p = d.non_negative("top_p");
        m.decoding.min_p = d.non_negative("min_p");
        m.decoding.repetition_penalty = d.non_negative("repetition_penalty");
        m.decoding.samples = d.integer("samples", 1);
        m.decoding.seed = d.unsigned_integer("seed");
        m.decoding.description = d.text("description");
        m.suite = f.text("suite");
        m.suite_sha256 = f.text("suite_sha256");
        m.item_ids = f.texts("item_ids");
        m.quantlab_version = f.text("quantlab_version");
        m.quantlab_commit = f.text("quantlab_commit");
        m.torch_version = f.text("torch_version");
        m.device = f.text("device");
        m.threads = f.integer("threads", 0);
        m.started_at = f.text("started_at");
        m.seconds = f.non_negative("seconds");
        return m;
    } catch (const JsonFieldError& e) {
        throw UserError(source + ": " + e.field + ": " + e.message);
    }
}

std::vector<std::string> comparability_problems(const RunManifest& a, const RunManifest& b) {
    std::vector<std::string> out;
    auto differ = [&](const std::string& field, const std::string& x, const std::string& y) {
        if (x != y) out.push_back(field + ": " + (x.empty() ? "(none)" : x) + " vs " + (y.empty() ? "(none)" : y));
    };
    auto differ_number = [&](const std::string& field, double x, double y) {
        if (x != y) out.push_back(field + ": " + manifest_number_text(x) + " vs " + manifest_number_text(y));
    };
    const DecodingManifest &x = a.decoding, &y = b.decoding;
    differ_number("decoding.max_tokens", static_cast<double>(x.max_tokens), static_cast<double>(y.max_tokens));
    differ_number("decoding.temperature", x.temperature, y.temperature);
    if (x.temperature > 0 || y.temperature > 0) {  // the sampling knobs only matter when sampling
        differ_number("decoding.top_k", static_cast<double>(x.top_k), static_cast<double>(y.top_k));
        differ_number("decoding.top_p", x.top_p, y.top_p);
        differ_number("decoding.min_p", x.min_p, y.min_p);
        differ("decoding.seed", std::to_string(x.seed), std::to_string(y.seed));
    }
    differ_number("decoding.repetition_penalty", x.repetition_penalty, y.repetition_penalty);
    differ_number("decoding.samples", static_cast<double>(x.samples), static_cast<double>(y.samples));
    differ("suite_sha256", a.suite_sha256, b.suite_sha256);
    if (a.item_ids != b.item_ids)
        out.push_back("item_ids: " + std::to_string(a.item_ids.size()) + " items vs " + std::to_string(b.item_ids.size()) +
                      (a.item_ids.size() == b.item_ids.size() ? " (different ones)" : ""));
    differ("chat_template_sha256", a.chat_template_sha256, b.chat_template_sha256);
    differ("prompt_format", a.prompt_format, b.prompt_format);
    differ("tools_mode", a.tools_mode, b.tools_mode);
    differ("default_system", a.default_system, b.default_system);
    return out;
}

std::string content_sha256(const std::string& path) {
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (ec || !fs::exists(status)) throw UserError("'" + path + "' does not exist");
    if (fs::is_regular_file(status)) return sha256_file_hex(path);
    if (!fs::is_directory(status)) throw UserError("'" + path + "' is neither a file nor a folder");
    std::vector<fs::path> files;
    for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_regular_file()) files.push_back(it->path());
    if (ec) throw UserError("cannot list '" + path + "': " + ec.message());
    std::sort(files.begin(), files.end());
    Sha256 sha;
    for (const fs::path& file : files) {
        const uintmax_t size = fs::file_size(file, ec);
        if (ec) throw UserError("cannot read '" + file.string() + "': " + ec.message());
        const std::string line = file.lexically_relative(path).generic_string() + '\0' + std::to_string(size) + '\0' +
                                 sha256_file_hex(file.string()) + '\n';
        sha.update(line.data(), line.size());
    }
    return sha.hex();
}

std::string utc_timestamp() {
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char b[32];
    std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return b;
}

}  // namespace ql::evaluation
