// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/quant/recipe.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/core/format_catalog.h"
#include "engine/io/strict_json.h"
#include "engine/io/whole_file.h"
#include "engine/quant/recipe_presets.h"

namespace ql {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& source, const std::string& field, const std::string& what) {
    throw UserError(source + ": " + field + ": " + what);
}

void check_keys(const json& object, const std::vector<std::string>& allowed, const std::string& source,
                const std::string& where) {
    for (auto it = object.begin(); it != object.end(); ++it)
        if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
            std::string list;
            for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
            fail(source, where + "." + it.key(), "unknown key (expected one of: " + list + ")");
        }
}

template <typename T>
T get_as(const json& v, const std::string& source, const std::string& field, const char* expected) {
    try {
        if constexpr (std::is_same_v<T, bool>) {
            if (!v.is_boolean()) throw std::exception();
        } else if constexpr (std::is_integral_v<T>) {
            if (!v.is_number_integer()) throw std::exception();
        } else if constexpr (std::is_floating_point_v<T>) {
            if (!v.is_number()) throw std::exception();
        } else {
            if (!v.is_string()) throw std::exception();
        }
        return v.get<T>();
    } catch (const std::exception&) {
        fail(source, field, std::string("expected ") + expected + ", got " + v.dump());
    }
}

QuantizerPatch parse_cfg(const json& cfg, const std::string& source, const std::string& where) {
    if (!cfg.is_object()) fail(source, where, "expected an object");
    check_keys(cfg,
               {"format", "granularity", "group_size", "axis", "asymmetric", "double_quant", "mx_scale", "dynamic",
                "calibrator", "percentile", "enable"},
               source, where);
    QuantizerPatch p;
    auto field = [&](const char* k) { return where + "." + k; };
    if (cfg.contains("format")) {
        p.format = get_as<std::string>(cfg["format"], source, field("format"), "a format name");
        try {
            format_info(*p.format);
        } catch (const UserError& e) {
            fail(source, field("format"), e.what());
        }
    }
    if (cfg.contains("granularity")) {
        p.granularity = get_as<std::string>(cfg["granularity"], source, field("granularity"), "a string");
        if (*p.granularity != "tensor" && *p.granularity != "channel" && *p.granularity != "group")
            fail(source, field("granularity"), "expected tensor, channel or group, got '" + *p.granularity + "'");
    }
    if (cfg.contains("group_size")) {
        p.group_size = get_as<int64_t>(cfg["group_size"], source, field("group_size"), "a positive integer");
        if (*p.group_size <= 0) fail(source, field("group_size"), "expected a positive integer");
    }
    if (cfg.contains("axis")) p.axis = get_as<int>(cfg["axis"], source, field("axis"), "an integer");
    if (cfg.contains("asymmetric")) p.asymmetric = get_as<bool>(cfg["asymmetric"], source, field("asymmetric"), "true or false");
    if (cfg.contains("double_quant"))
        p.double_quant = get_as<bool>(cfg["double_quant"], source, field("double_quant"), "true or false");
    if (cfg.contains("mx_scale")) {
        p.mx_scale = get_as<std::string>(cfg["mx_scale"], source, field("mx_scale"), "floor or rceil");
        if (*p.mx_scale != "floor" && *p.mx_scale != "rceil")
            fail(source, field("mx_scale"), "expected floor or rceil, got '" + *p.mx_scale + "'");
    }
    if (cfg.contains("dynamic")) p.dynamic = get_as<bool>(cfg["dynamic"], source, field("dynamic"), "true or false");
    if (cfg.contains("calibrator")) {
        p.calibrator = get_as<std::string>(cfg["calibrator"], source, field("calibrator"), "a string");
        const std::string& c = *p.calibrator;
        if (c != "max" && c != "percentile" && c != "mse" && c != "entropy" && c != "imatrix_mse")
            fail(source, field("calibrator"), "expected max, percentile, mse, entropy or imatrix_mse, got '" + c + "'");
    }
    if (cfg.contains("percentile")) {
        p.percentile = get_as<double>(cfg["percentile"], source, field("percentile"), "a number");
        if (!(*p.percentile > 0 && *p.percentile <= 100))
            fail(source, field("percentile"), "expected a percentage in (0, 100]");
    }
    if (cfg.contains("enable")) p.enabled = get_as<bool>(cfg["enable"], source, field("enable"), "true or false");
    return p;
}

void parse_algorithm(const json& a, PtqAlgorithm& alg, const std::string& source) {
    static const std::vector<std::string> kMethods = {"max", "smoothquant", "awq", "gptq"};
    const json* method = &a;
    if (a.is_object()) {
        check_keys(a, {"method", "alpha", "grid", "clip", "fold", "block_size", "damp_percent", "act_order"}, source, "algorithm");
        if (!a.contains("method")) fail(source, "algorithm.method", "missing");
        method = &a["method"];
    } else if (a.is_null()) {
        alg.method = "max";
        return;
    }
    alg.method = get_as<std::string>(*method, source, "algorithm.method", "max, smoothquant, awq or gptq");
    if (std::find(kMethods.begin(), kMethods.end(), alg.method) == kMethods.end())
        fail(source, "algorithm.method", "expected max, smoothquant, awq or gptq, got '" + alg.method + "'");
    if (!a.is_object()) return;
    auto allowed = [&](const char* key, const char* for_method) {
        if (a.contains(key) && alg.method != for_method)
            fail(source, std::string("algorithm.") + key, std::string("applies to ") + for_method + " only");
        return a.contains(key);
    };
    if (a.contains("alpha") && alg.method != "smoothquant")
        fail(source, "algorithm.alpha", "applies to smoothquant only");
    if (a.contains("alpha")) {
        alg.smoothquant_alpha = get_as<double>(a["alpha"], source, "algorithm.alpha", "a number in [0, 1]");
        if (!(alg.smoothquant_alpha >= 0 && alg.smoothquant_alpha <= 1)) fail(source, "algorithm.alpha", "expected a number in [0, 1]");
    }
    if (allowed("grid", "awq")) {
        alg.awq_grid = get_as<int64_t>(a["grid"], source, "algorithm.grid", "a positive integer");
        if (alg.awq_grid < 1 || alg.awq_grid > 1000) fail(source, "algorithm.grid", "expected 1..1000");
    }
    if (allowed("clip", "awq")) alg.awq_clip = get_as<bool>(a["clip"], source, "algorithm.clip", "true or false");
    if (a.contains("fold")) {
        if (alg.method != "awq" && alg.method != "smoothquant") fail(source, "algorithm.fold", "applies to awq and smoothquant only");
        const bool fold = get_as<bool>(a["fold"], source, "algorithm.fold", "true or false");
        (alg.method == "awq" ? alg.awq_fold : alg.smoothquant_fold) = fold;
    }
    if (allowed("block_size", "gptq")) {
        alg.gptq_block_size = get_as<int64_t>(a["block_size"], source, "algorithm.block_size", "a positive integer");
        if (alg.gptq_block_size < 1) fail(source, "algorithm.block_size", "expected a positive integer");
    }
    if (allowed("damp_percent", "gptq")) {
        alg.gptq_damp_percent = get_as<double>(a["damp_percent"], source, "algorithm.damp_percent", "a number in (0, 1]");
        if (!(alg.gptq_damp_percent > 0 && alg.gptq_damp_percent <= 1))
            fail(source, "algorithm.damp_percent", "expected a number in (0, 1]");
    }
    if (allowed("act_order", "gptq")) alg.gptq_act_order = get_as<bool>(a["act_order"], source, "algorithm.act_order", "true or false");
}

KvCacheSettings parse_kv_cache(const json& j, const std::string& source) {
    const std::string where = "kv_cache";
    if (j.is_null()) return KvCacheSettings{};
    if (j.is_string()) {
        try {
            return kv_cache_preset(j.get<std::string>());
        } catch (const UserError& e) {
            fail(source, where, e.what());
        }
    }
    if (!j.is_object()) fail(source, where, "expected a preset name (fp8, nvfp4, ...) or an object");
    check_keys(j, {"preset", "format", "granularity", "group_size", "use_constant_amax", "rotate", "exclude"}, source, where);
    KvCacheSettings k;
    if (j.contains("preset")) {
        try {
            k = kv_cache_preset(get_as<std::string>(j["preset"], source, where + ".preset", "a preset name"));
        } catch (const UserError& e) {
            fail(source, where + ".preset", e.what());
        }
        if (!k.enabled) {
            if (j.size() > 1) fail(source, where + ".preset", "\"none\" takes no other keys");
            return k;
        }
    }
    if (j.contains("format")) {
        k.format = get_as<std::string>(j["format"], source, where + ".format", "a format name");
        k.enabled = true;
    }
    if (!k.enabled) fail(source, where + ".format", "missing (fp8_e4m3, nvfp4, int8, int4, ...)");
    const FormatInfo* f = nullptr;
    try {
        f = &format_info(k.format);
    } catch (const UserError& e) {
        fail(source, where + ".format", e.what());
    }
    if (f->family != "fp8" && f->family != "nvfp4" && f->family != "int")
        fail(source, where + ".format", "a KV cache is fp8_e4m3, fp8_e5m2, nvfp4 or int2..int8, not " + k.format);
    if (j.contains("granularity")) {
        k.granularity = get_as<std::string>(j["granularity"], source, where + ".granularity", "tensor, head or group");
        if (k.granularity != "tensor" && k.granularity != "head" && k.granularity != "group")
            fail(source, where + ".granularity", "expected tensor, head or group, got '" + k.granularity + "'");
    }
    if (k.granularity == "group" && f->family != "int")
        fail(source, where + ".granularity", "group applies to integer formats (NVFP4 has its 16-element blocks)");
    if (j.contains("group_size")) {
        k.group_size = get_as<int64_t>(j["group_size"], source, where + ".group_size", "a positive integer");
        if (k.group_size <= 0) fail(source, where + ".group_size", "expected a positive integer");
    }
    if (k.group_size > 0 && k.granularity != "group") fail(source, where + ".group_size", "applies to granularity group only");
    if (j.contains("use_constant_amax"))
        k.use_constant_amax = get_as<bool>(j["use_constant_amax"], source, where + ".use_constant_amax", "true or false");
    if (k.use_constant_amax && f->family == "int")
        fail(source, where + ".use_constant_amax", "applies to fp8 and nvfp4 (the constant is the E4M3 maximum, 448)");
    if (k.use_constant_amax && k.granularity == "head")
        fail(source, where + ".use_constant_amax", "a constant amax has no per-head values (granularity tensor)");
    if (j.contains("rotate")) k.rotate = get_as<bool>(j["rotate"], source, where + ".rotate", "true or false");
    if (j.contains("exclude")) {
        const json& e = j["exclude"];
        if (!e.is_array()) fail(source, where + ".exclude", "expected a list of attention module globs");
        k.exclude.clear();
        for (size_t i = 0; i < e.size(); ++i)
            k.exclude.push_back(get_as<std::string>(e[i], source, where + ".exclude[" + std::to_string(i) + "]", "a glob"));
    }
    return k;
}

RotationSettings parse_rotation(const json& j, const std::string& source) {
    const std::string where = "rotation";
    if (j.is_null()) return RotationSettings{};
    if (j.is_string()) {
        try {
            return rotation_preset(j.get<std::string>());
        } catch (const UserError& e) {
            fail(source, where, e.what());
        }
    }
    if (!j.is_object()) fail(source, where, "expected hadamard, rht, none or an object");
    check_keys(j, {"method", "residual", "attention_head", "down_proj", "qk", "block_size", "seed"}, source, where);
    if (!j.contains("method")) fail(source, where + ".method", "missing (hadamard or rht)");
    RotationSettings r;
    r.method = get_as<std::string>(j["method"], source, where + ".method", "hadamard or rht");
    if (r.method == "none") {
        if (j.size() > 1) fail(source, where + ".method", "\"none\" takes no other keys");
        return RotationSettings{};
    }
    if (r.method != "hadamard" && r.method != "rht")
        fail(source, where + ".method", "expected hadamard, rht or none, got '" + r.method + "'");
    auto part = [&](const char* key, std::optional<bool>& out) {
        if (!j.contains(key)) return;
        if (r.method != "hadamard") fail(source, where + "." + key, "applies to method hadamard only");
        out = get_as<bool>(j[key], source, where + "." + key, "true or false");
    };
    part("residual", r.residual);
    part("attention_head", r.attention_head);
    part("down_proj", r.down_proj);
    if (j.contains("qk")) r.qk = get_as<bool>(j["qk"], source, where + ".qk", "true or false");
    if (j.contains("block_size")) {
        if (r.method != "rht") fail(source, where + ".block_size", "applies to method rht only");
        r.block_size = get_as<int64_t>(j["block_size"], source, where + ".block_size", "a power of two");
        if (r.block_size < 1 || (r.block_size & (r.block_size - 1)) != 0)
            fail(source, where + ".block_size", "expected a power of two, got " + std::to_string(r.block_size));
    }
    if (j.contains("seed")) {
        const int64_t seed = get_as<int64_t>(j["seed"], source, where + ".seed", "a non-negative integer");
        if (seed < 0) fail(source, where + ".seed", "expected a non-negative integer");
        r.seed = static_cast<uint64_t>(seed);
    }
    return r;
}

json kv_cache_json(const KvCacheSettings& k) {
    json j = {{"format", k.format}, {"granularity", k.granularity}, {"use_constant_amax", k.use_constant_amax},
              {"rotate", k.rotate}};
    if (k.group_size > 0) j["group_size"] = k.group_size;
    if (!k.exclude.empty()) j["exclude"] = k.exclude;
    return j;
}

json rotation_json(const RotationSettings& r) {
    json j = {{"method", r.method}, {"qk", r.qk}, {"seed", r.seed}};
    if (r.residual) j["residual"] = *r.residual;
    if (r.attention_head) j["attention_head"] = *r.attention_head;
    if (r.down_proj) j["down_proj"] = *r.down_proj;
    if (r.block_size > 0) j["block_size"] = r.block_size;
    return j;
}

json patch_json(const QuantizerPatch& p) {
    json cfg = json::object();
    if (p.format) cfg["format"] = *p.format;
    if (p.granularity) cfg["granularity"] = *p.granularity;
    if (p.group_size) cfg["group_size"] = *p.group_size;
    if (p.axis) cfg["axis"] = *p.axis;
    if (p.asymmetric) cfg["asymmetric"] = *p.asymmetric;
    if (p.double_quant) cfg["double_quant"] = *p.double_quant;
    if (p.mx_scale) cfg["mx_scale"] = *p.mx_scale;
    if (p.dynamic) cfg["dynamic"] = *p.dynamic;
    if (p.calibrator) cfg["calibrator"] = *p.calibrator;
    if (p.percentile) cfg["percentile"] = *p.percentile;
    return cfg;
}

std::string upper(std::string s) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

std::string preset_key(const std::string& name) {
    std::string n = upper(name);
    if (n.size() > 4 && n.compare(n.size() - 4, 4, "_CFG") == 0) n.resize(n.size() - 4);
    return n;
}

}  // namespace

void QuantizerPatch::apply_to(QuantizerSettings& s) const {
    if (enabled) s.enabled = *enabled;
    if (format) {
        s.options.format = *format;
        if (!enabled) s.enabled = true;  // a cfg with a format turns the quantizer on, as in Model Optimizer
    }
    if (granularity) s.options.granularity = *granularity;
    if (group_size) s.options.group_size = *group_size;
    if (axis) s.options.axis = *axis;
    if (asymmetric) s.options.asymmetric = *asymmetric;
    if (double_quant) s.options.double_quant = *double_quant;
    if (mx_scale) s.options.mx_scale = *mx_scale;
    if (dynamic) s.dynamic = *dynamic;
    if (calibrator) s.calibrator = *calibrator;
    if (percentile) s.percentile = *percentile;
}

bool QuantizerPatch::configures() const {
    return (enabled && *enabled) || format || granularity || group_size || axis || asymmetric || double_quant ||
           mx_scale || dynamic || calibrator || percentile;
}

bool glob_match(const std::string& pattern, const std::string& text) {
    // Iterative wildcard matching with backtracking to the last '*' (linear in practice).
    size_t p = 0, t = 0, star = std::string::npos, mark = 0;
    while (t < text.size()) {
        if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
            ++p;
            ++t;
        } else if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            mark = t;
        } else if (star != std::string::npos) {
            p = star + 1;
            t = ++mark;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

Recipe parse_recipe(const std::string& text, const std::string& source) {
    json j;
    try {
        j = parse_strict_json(text.data(), text.data() + text.size());
    } catch (const StrictJsonError& e) {
        throw UserError(source + ": not valid JSON: " + e.what());
    }
    if (!j.is_object()) throw UserError(source + ": a recipe is a JSON object");
    check_keys(j, {"name", "description", "algorithm", "quant_cfg", "calibration", "imatrix", "share_fused_scales", "kv_cache",
                   "rotation"},
               source, "recipe");
    Recipe r;
    r.source = source;
    r.name = j.contains("name") ? get_as<std::string>(j["name"], source, "name", "a string")
                                : std::filesystem::path(source).stem().string();
    if (j.contains("description")) r.description = get_as<std::string>(j["description"], source, "description", "a string");
    if (j.contains("algorithm")) parse_algorithm(j["algorithm"], r.algorithm, source);
    if (j.contains("imatrix")) {
        r.imatrix = get_as<std::string>(j["imatrix"], source, "imatrix", "an importance matrix file");
        if (r.imatrix.empty()) fail(source, "imatrix", "empty path");
    }
    if (j.contains("share_fused_scales"))
        r.share_fused_scales = get_as<bool>(j["share_fused_scales"], source, "share_fused_scales", "true or false");
    if (!j.contains("quant_cfg")) fail(source, "quant_cfg", "missing (a list of {\"quantizer_name\", \"enable\", \"cfg\"})");
    const json& list = j["quant_cfg"];
    if (!list.is_array()) fail(source, "quant_cfg", "expected a list of {\"quantizer_name\", \"enable\", \"cfg\"}");
    for (size_t i = 0; i < list.size(); ++i) {
        const std::string where = "quant_cfg[" + std::to_string(i) + "]";
        const json& e = list[i];
        if (!e.is_object()) fail(source, where, "expected an object");
        check_keys(e, {"quantizer_name", "enable", "cfg"}, source, where);
        if (!e.contains("quantizer_name")) fail(source, where + ".quantizer_name", "missing");
        RecipeEntry entry;
        entry.quantizer_name = get_as<std::string>(e["quantizer_name"], source, where + ".quantizer_name", "a glob pattern");
        if (entry.quantizer_name.empty()) fail(source, where + ".quantizer_name", "empty pattern");
        if (e.contains("cfg")) entry.patch = parse_cfg(e["cfg"], source, where + ".cfg");
        if (e.contains("enable")) entry.patch.enabled = get_as<bool>(e["enable"], source, where + ".enable", "true or false");
        r.quant_cfg.push_back(std::move(entry));
    }
    if (j.contains("calibration")) {
        const json& c = j["calibration"];
        if (!c.is_object()) fail(source, "calibration", "expected an object");
        check_keys(c, {"samples", "seq_len", "batch_size"}, source, "calibration");
        auto positive = [&](const char* key, int64_t& out) {
            if (!c.contains(key)) return;
            out = get_as<int64_t>(c[key], source, std::string("calibration.") + key, "a positive integer");
            if (out <= 0) fail(source, std::string("calibration.") + key, "expected a positive integer");
        };
        positive("samples", r.calibration.samples);
        positive("seq_len", r.calibration.sequence_length);
        positive("batch_size", r.calibration.batch_size);
    }
    if (j.contains("kv_cache")) r.kv_cache = parse_kv_cache(j["kv_cache"], source);
    if (j.contains("rotation")) r.rotation = parse_rotation(j["rotation"], source);
    return r;
}

std::string recipe_to_json(const Recipe& r) {
    json j = json::object();
    j["name"] = r.name;
    if (!r.description.empty()) j["description"] = r.description;
    const PtqAlgorithm& a = r.algorithm;
    json alg = {{"method", a.method}};
    if (a.method == "smoothquant") alg["alpha"] = a.smoothquant_alpha;
    if (a.method == "smoothquant" && a.smoothquant_fold) alg["fold"] = true;
    if (a.method == "awq") {
        alg["grid"] = a.awq_grid;
        alg["clip"] = a.awq_clip;
        if (a.awq_fold) alg["fold"] = true;
    }
    if (a.method == "gptq") {
        alg["block_size"] = a.gptq_block_size;
        alg["damp_percent"] = a.gptq_damp_percent;
        alg["act_order"] = a.gptq_act_order;
    }
    j["algorithm"] = alg;
    json list = json::array();
    for (const RecipeEntry& e : r.quant_cfg) {
        json entry = {{"quantizer_name", e.quantizer_name}};
        if (e.patch.enabled) entry["enable"] = *e.patch.enabled;
        json cfg = patch_json(e.patch);
        if (!cfg.empty()) entry["cfg"] = cfg;
        list.push_back(entry);
    }
    j["quant_cfg"] = list;
    json cal = {{"samples", r.calibration.samples}, {"batch_size", r.calibration.batch_size}};
    if (r.calibration.sequence_length > 0) cal["seq_len"] = r.calibration.sequence_length;
    j["calibration"] = cal;
    if (!r.imatrix.empty()) j["imatrix"] = r.imatrix;
    if (r.share_fused_scales) j["share_fused_scales"] = true;
    if (r.kv_cache.enabled) j["kv_cache"] = kv_cache_json(r.kv_cache);
    if (r.rotation.enabled()) j["rotation"] = rotation_json(r.rotation);
    // nlohmann::json sorts keys; quant_cfg order is kept because it is a list.
    return j.dump(2) + "\n";
}

std::vector<std::string> preset_names() {
    std::vector<std::string> names;
    for (const auto& [name, text] : recipe_preset_texts()) names.push_back(name);
    return names;
}

bool is_preset_name(const std::string& name) {
    const std::string key = preset_key(name);
    for (const auto& [n, text] : recipe_preset_texts())
        if (n == key) return true;
    return false;
}

Recipe load_recipe(const std::string& name_or_path) {
    const std::string key = preset_key(name_or_path);
    for (const auto& [name, text] : recipe_preset_texts())
        if (name == key) return parse_recipe(text, "preset " + name);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(name_or_path, ec)) {
        std::string list;
        for (const auto& n : preset_names()) list += (list.empty() ? "" : ", ") + n;
        throw UserError("recipe '" + name_or_path + "' is neither a preset (" + list + ") nor a JSON file");
    }
    return parse_recipe(read_whole_file(name_or_path, "recipe"), name_or_path);
}

void overlay_recipe(Recipe& r, const std::string& kv_cache, const std::string& rotate) {
    if (!kv_cache.empty()) {
        r.kv_cache = kv_cache_preset(kv_cache);
        r.name += "-kv_" + kv_cache;
    }
    if (!rotate.empty()) {
        r.rotation = rotation_preset(rotate);
        r.name += "-rotate_" + rotate;
    }
}

QuantizerSettings settings_for(const Recipe& recipe, const std::string& quantizer_name) {
    QuantizerSettings s;
    for (const RecipeEntry& e : recipe.quant_cfg)
        if (glob_match(e.quantizer_name, quantizer_name)) e.patch.apply_to(s);
    return s;
}

}  // namespace ql
