// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/experiments/experiment_spec.h"

#include <openssl/evp.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/core/compute_device.h"
#include "engine/core/errors.h"
#include "engine/data/synthetic_tasks.h"
#include "engine/io/strict_json.h"

namespace ql::experiments {
namespace {

using nlohmann::json;

const std::set<std::string> kTopKeys = {"quantlab_experiment", "name", "title", "claim", "source", "analysis",
                                        "replicates", "seed", "base", "grid", "metrics", "comparisons"};
const std::set<std::string> kStringParameters = {"method", "model", "data", "eval_data", "eval_split", "calib", "schedule", "pairs",
                                                 "device", "suite", "suite_categories"};
const std::set<std::string> kIntegerParameters = {"steps", "batch_size", "eval_samples", "calib_samples", "fp_steps",
                                                  "warmup_steps", "total_steps", "qat_bits", "suite_limit"};
const std::set<std::string> kNumberParameters = {"lr", "temperature", "ce_weight", "qat_fraction", "bits"};
// The metrics a run reports (docs/EXPERIMENTS.md "Metrics"); exact_match/<domain> as well.
const std::set<std::string> kTokenModelMetrics = {"exact_match", "accuracy", "kl", "agreement", "loss", "fp_exact_match"};
const std::set<std::string> kEncoderMetrics = {"cosine_mean", "cosine_p5", "cosine_min", "spearman", "fp_spearman",
                                               "contrastive_loss"};
// Both kinds of model report these (fp-then-qat runs the planner's two, PTQ and mixed runs bits).
const std::set<std::string> kSharedMetrics = {"bits_per_parameter", "planner_qat_fraction", "tokens_per_parameter_byte"};

bool is_parameter(const std::string& k) {
    return k == "recipe" || k == "menu" || kStringParameters.count(k) || kIntegerParameters.count(k) || kNumberParameters.count(k);
}

[[noreturn]] void bad(const std::string& file, const std::string& field, const std::string& what) {
    throw UserError("experiment '" + file + "': field '" + field + "' " + what);
}

void check_parameter(const std::string& file, const std::string& field, const std::string& key, const json& v) {
    if (!is_parameter(key)) bad(file, field, "is not a run parameter (docs/EXPERIMENTS.md lists them)");
    if (kStringParameters.count(key) && !v.is_string()) bad(file, field, "must be a string");
    if (kIntegerParameters.count(key) && (!v.is_number_integer() || v.get<int64_t>() < 0))
        bad(file, field, "must be an integer >= 0");
    if (kNumberParameters.count(key) && (!v.is_number() || !(v.get<double>() >= 0)))
        bad(file, field, "must be a number >= 0");
    // A recipe is a preset name or a recipe file path, or the recipe itself (docs/RECIPES.md) with a "name".
    if (key == "recipe" && !v.is_string() && !(v.is_object() && v.contains("name") && v["name"].is_string()))
        bad(file, field, "must be a preset name, a recipe file or a recipe object with a \"name\"");
    if (key == "method" && v != "ptq" && v != "qat" && v != "qad" && v != "fp-then-qat" && v != "mixed")
        bad(file, field, "must be ptq, qat, qad, fp-then-qat or mixed");
    if (key == "bits" && !(v.get<double>() > 0 && v.get<double>() <= 32)) bad(file, field, "must be a budget above 0 and at most 32 bits per parameter");
    if (key == "menu") {
        if (!v.is_array() || v.empty() || !std::all_of(v.begin(), v.end(), [](const json& m) { return m.is_string() && !m.get<std::string>().empty(); }))
            bad(file, field, "must be a non-empty list of formats (NVFP4, FP8, MXFP8, MXFP4, BF16, or presets / recipe files)");
        if (std::none_of(v.begin(), v.end(), [](const json& m) { return m == "BF16"; }))
            bad(file, field, "must list BF16: the search can always keep a layer unquantized");
        if (v.size() < 2) bad(file, field, "must list a format to quantize with besides BF16");
        std::set<std::string> seen;
        for (const json& m : v)
            if (!seen.insert(m.get<std::string>()).second) bad(file, field, "lists " + m.get<std::string>() + " twice");
    }
    if (key == "eval_split" && v != "validation" && v != "all") bad(file, field, "must be validation or all");
    if (key == "qat_fraction" && !(v.get<double>() > 0 && v.get<double>() < 1)) bad(file, field, "must be between 0 and 1");
    if (key == "qat_bits" && (v.get<int64_t>() < 1 || v.get<int64_t>() > 16)) bad(file, field, "must be from 1 to 16");
    if (key == "steps" && v.get<int64_t>() == 0) bad(file, field, "must be at least 1");
    if (key == "lr" && !(v.get<double>() > 0)) bad(file, field, "must be > 0");
    if (key == "device") {
        try {
            parse_compute_device(v.get<std::string>());
        } catch (const UserError& e) {
            bad(file, field, "must be cpu, cuda or cuda:N (" + std::string(e.what()) + ")");
        }
    }
}

// How a grid value appears in a cell key: strings as they are, recipes by name, numbers as JSON.
std::string value_text(const json& v) {
    if (v.is_object()) return v["name"].get<std::string>();
    if (v.is_array()) {  // a menu: NVFP4+FP8+BF16
        std::string out;
        for (const json& e : v) out += (out.empty() ? "" : "+") + (e.is_string() ? e.get<std::string>() : e.dump());
        return out;
    }
    return v.is_string() ? v.get<std::string>() : v.dump();
}

RunParameters to_parameters(const json& p) {
    RunParameters r;
    auto s = [&](const char* k, std::string& out) { if (p.contains(k)) out = p[k].get<std::string>(); };
    auto i = [&](const char* k, int64_t& out) { if (p.contains(k)) out = p[k].get<int64_t>(); };
    auto d = [&](const char* k, double& out) { if (p.contains(k)) out = p[k].get<double>(); };
    if (p.contains("recipe") && p["recipe"].is_object()) {
        r.recipe = p["recipe"]["name"].get<std::string>();
        r.recipe_json = p["recipe"].dump(2);
    } else if (p.contains("recipe")) {
        r.recipe = p["recipe"].get<std::string>();
    }
    s("method", r.method), s("model", r.model), s("data", r.data), s("eval_data", r.eval_data);
    s("calib", r.calib), s("schedule", r.schedule), s("pairs", r.pairs), s("eval_split", r.eval_split);
    s("suite", r.suite), s("suite_categories", r.suite_categories), i("suite_limit", r.suite_limit);
    if (p.contains("device")) r.device = parse_compute_device(p["device"].get<std::string>()).text();
    i("steps", r.steps), i("batch_size", r.batch_size), i("eval_samples", r.eval_samples);
    i("calib_samples", r.calib_samples), i("fp_steps", r.fp_steps), i("warmup_steps", r.warmup_steps);
    i("total_steps", r.total_steps), i("qat_bits", r.qat_bits);
    d("lr", r.lr), d("temperature", r.temperature), d("ce_weight", r.ce_weight), d("qat_fraction", r.qat_fraction);
    d("bits", r.bits);
    if (p.contains("menu")) r.menu = p["menu"].get<std::vector<std::string>>();
    return r;
}

std::map<std::string, std::string> parse_selector(const std::string& file, const std::string& field, const json& sel,
                                                  const json& grid) {
    if (!sel.is_object() || sel.empty()) bad(file, field, "must be an object of grid axis -> value");
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : sel.items()) {
        if (!grid.contains(k)) bad(file, field + "." + k, "is not a grid axis");
        const json& axis = grid[k];
        if (!v.is_string() && !v.is_number()) bad(file, field + "." + k, "must be a value (a recipe by its name)");
        const std::string text = value_text(v);
        if (std::none_of(axis.begin(), axis.end(), [&](const json& a) { return value_text(a) == text; }))
            bad(file, field + "." + k, "is not one of the axis's values");
        out[k] = text;
    }
    return out;
}

}  // namespace

bool is_encoder_metric(const std::string& metric) { return kEncoderMetrics.count(metric) > 0; }
bool is_token_model_metric(const std::string& metric) {
    return kTokenModelMetrics.count(metric) > 0 || metric.rfind("exact_match/", 0) == 0 || metric.rfind("evalsuite/", 0) == 0;
}

std::string sha256_hex(const std::string& bytes) {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
    EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size());
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx.get(), md, &n);
    static const char* hex = "0123456789abcdef";
    std::string s;
    for (unsigned int i = 0; i < n; ++i) s += hex[md[i] >> 4], s += hex[md[i] & 15];
    return s;
}

namespace {

// A template's encoder form (docs/EXPERIMENTS.md "Sentence encoders"): the same study on a
// sentence encoder and the caller's sentences (--data). QAT trains the encoder's contrastive
// loss (eval/contrastive_loss.h); the synthetic data a study varies become the sentences, their
// first third (a part of the corpus: for make-sentence-corpus's, CMake's manuals, while the
// held-out tenth is the command reference) and random sentences; the metrics are the encoder's.
std::string first_third_of(const std::string& data) {
    std::ifstream in(data, std::ios::binary);
    if (!in) throw UserError("experiment: cannot read " + data + " (--data; a part of it is one of the study's data)");
    int64_t lines = 0;
    std::string line;
    while (std::getline(in, line)) ++lines;
    if (lines < 30) throw UserError("experiment: " + data + " has " + std::to_string(lines) + " lines; a part of it needs at least 30");
    return data + "#lines=1-" + std::to_string(lines / 3);
}

// The title says what runs on a pretrained model: a fine-tune, not training from scratch.
void retitle_as_fine_tune(json& j, const std::string& model_kind) {
    std::string title = j.value("title", "");
    if (const size_t at = title.find(" from scratch"); at != std::string::npos)
        title.replace(at, 13, " of fine-tuning the pretrained " + model_kind);
    j["title"] = title;
}

void to_encoder_form(json& j, const std::string& file, const ExperimentOverrides& o) {
    if (o.data.empty())
        throw UserError(file + " on a sentence encoder needs its sentences: --data FILE (one sentence per line, e.g. "
                               "scripts/make-sentence-corpus; the last tenth is held out)");
    json& base = j["base"];
    const bool grid_list = j["grid"].is_array();
    const json grids = grid_list ? j["grid"] : json::array({j["grid"]});
    // Presets whose patterns name a decoder's modules (`*mlp*`): a BERT encoder has none (its FFN
    // is intermediate / output.dense), so their cells would fail at their first run.
    const auto decoder_preset = [](const json& r) { return r == "NVFP4_MLP_ONLY"; };
    std::string part;  // the first third of the sentences, made when a study varies its data
    const auto sentences_for = [&](const json& v) -> json {
        const std::string spec = v.get<std::string>();
        if (spec == "synthetic:random-tokens") return spec;
        if (spec == "synthetic:arith" || spec == "synthetic:all") return o.data;
        if (part.empty()) part = first_third_of(o.data);
        return part;  // one domain of the synthetic tasks: a part of the corpus
    };
    bool trains = base.value("method", "") == "qat" || base.value("method", "") == "qad" ||
                  base.value("method", "") == "fp-then-qat";
    json kept_grids = json::array();
    for (json grid : grids) {
        if (grid.contains("recipe") && grid["recipe"].is_array()) {
            json kept = json::array();
            for (const json& r : grid["recipe"])
                if (!decoder_preset(r)) kept.push_back(r);
            if (kept.empty()) continue;
            grid["recipe"] = kept;
        }
        if (grid.contains("method"))
            for (const json& m : grid["method"]) trains = trains || m == "qat" || m == "qad";
        if (grid.contains("data")) {
            json mapped = json::array();
            for (const json& v : grid["data"]) mapped.push_back(sentences_for(v));
            grid["data"] = mapped;
            // Calibrated on and scored by the whole corpus, whatever the training data.
            base["calib"] = o.data;
            base["eval_data"] = o.data;
        }
        // The demo's budgets are below what an encoder's 16-bit embedding table allows (MiniLM:
        // 11.7 of its 22.7 M parameters, so NVFP4 everywhere else still gives above 10 bits per
        // parameter, FP8 about 12).
        if (grid.contains("bits")) grid["bits"] = json::array({11, 12, 13});
        // Fine-tuning budgets of a pretrained encoder, not a demo trained from scratch.
        if (grid.contains("total_steps")) grid["total_steps"] = json::array({20, 40});
        kept_grids.push_back(grid);
    }
    if (base.value("method", "") == "fp-then-qat") {
        retitle_as_fine_tune(j, "encoder");
        base["lr"] = 1e-4;  // a pretrained encoder's fine-tuning rate (the demo's 1e-3 is for training from scratch)
        base["batch_size"] = 32;
    }
    // Sizes that finish in about 10 minutes on 2 CPU cores: a MiniLM step of 32 sentences takes
    // ~1 s (the demo's ~0.06 s). --steps and --replicates scale them up.
    bool fp_phase = false, varies_data = false;
    for (const json& grid : kept_grids) fp_phase = fp_phase || grid.contains("fp_steps"), varies_data = varies_data || grid.contains("data");
    if (fp_phase) {
        if (o.steps == 0) base["steps"] = 40;
        for (json& grid : kept_grids)
            if (grid.contains("fp_steps")) grid["fp_steps"] = json::array({0, 20});
        if (j.contains("comparisons"))
            for (json& c : j["comparisons"])
                for (const char* side : {"a", "b"})
                    if (c[side].contains("fp_steps") && c[side]["fp_steps"] != 0) c[side]["fp_steps"] = 20;
    } else if (base.contains("steps") && o.steps == 0) {
        base["steps"] = 30;
    }
    if ((fp_phase || varies_data || base.value("method", "") == "fp-then-qat") && o.replicates == 0) j["replicates"] = 2;
    j["grid"] = grid_list ? kept_grids : kept_grids[0];
    if (j.contains("comparisons")) {
        json comparisons = json::array();
        for (json c : j["comparisons"]) {
            const bool names_bits = c["a"].contains("bits") || c["b"].contains("bits");
            const bool names_decoder_preset = (c["a"].contains("recipe") && decoder_preset(c["a"]["recipe"])) ||
                                              (c["b"].contains("recipe") && decoder_preset(c["b"]["recipe"]));
            if (names_bits || names_decoder_preset) continue;
            for (const char* side : {"a", "b"})
                if (c[side].contains("data")) c[side]["data"] = sentences_for(c[side]["data"]);
            // The demo's "+ only" (one arithmetic domain) is the sentences' first third here.
            std::string name = c.value("name", "");
            if (const size_t at = name.find("+ only"); at != std::string::npos) name.replace(at, 6, "first third");
            c["name"] = name;
            comparisons.push_back(c);
        }
        j["comparisons"] = comparisons;
    }
    json metrics = json::array({"cosine_mean", "cosine_p5", "cosine_min"});
    if (!o.pairs.empty()) metrics.push_back("spearman"), metrics.push_back("fp_spearman");
    bool loss = trains;
    for (const json& m : j.value("metrics", json::array())) loss = loss || m == "loss";
    if (loss) metrics.push_back("contrastive_loss");
    for (const json& m : j.value("metrics", json::array()))
        if (kSharedMetrics.count(m.get<std::string>())) metrics.push_back(m);
    j["metrics"] = metrics;
}

// A template's decoder form (docs/EXPERIMENTS.md "Language models"): the same study as a
// fine-tune of a pretrained language model on the caller's text (--data, a text file or folder;
// --eval-data scores it, else the text's held-out tail). What the demo's synthetic problems
// measure by exact match becomes the held-out text's KL to the FP model, top-1 agreement and
// loss; the demo's data variants become the text, the first third of its lines and random
// tokens; sizes are those of a 135 M decoder on 2 CPU cores (a QAD step of 4 x 256 tokens ~10 s).
void to_decoder_form(json& j, const ExperimentOverrides& o) {
    json& base = j["base"];
    const bool grid_list = j["grid"].is_array();
    const json grids = grid_list ? j["grid"] : json::array({j["grid"]});
    // A separate evaluation text is scored whole (its validation tail would be a tenth of it).
    if (!o.eval_data.empty()) base["eval_data"] = o.eval_data, base["eval_split"] = "all";
    std::string part;  // the first third of the text's lines, made when a study varies its data
    const auto text_for = [&](const json& v) -> json {
        const std::string spec = v.get<std::string>();
        if (spec == "synthetic:random-tokens") return spec;
        if (spec == "synthetic:arith" || spec == "synthetic:all") return o.data;
        if (part.empty()) part = first_third_of(o.data);
        return part;  // one domain of the synthetic tasks: a part of the text
    };
    const auto trains = [](const json& method) { return method == "qat" || method == "qad" || method == "fp-then-qat"; };
    bool any_training = trains(base.value("method", ""));
    json kept_grids = json::array();
    for (json grid : grids) {
        if (grid.contains("method"))
            for (const json& m : grid["method"]) any_training = any_training || trains(m);
        if (grid.contains("data")) {
            json mapped = json::array();
            for (const json& v : grid["data"]) mapped.push_back(text_for(v));
            grid["data"] = mapped;
            base["calib"] = o.data;  // calibrated on the whole text, whatever the training data
            if (o.eval_data.empty()) base["eval_data"] = o.data;
        }
        // A decoder's embedding (and a tied or 16-bit head) stays unquantized: SmolLM2-135M's tied
        // embedding is 21 % of its parameters, so NVFP4 everywhere else is 6.9 bits per parameter
        // and FP8 9.7; the budgets lie between the two.
        if (grid.contains("bits")) grid["bits"] = json::array({7.5, 8.5, 9.5});
        // Fine-tuning budgets of a pretrained model, not a demo trained from scratch.
        if (grid.contains("total_steps")) grid["total_steps"] = json::array({20, 40});
        kept_grids.push_back(grid);
    }
    if (base.value("method", "") == "fp-then-qat") {
        retitle_as_fine_tune(j, "model");
        base.erase("warmup_steps");
    }
    if (any_training) {
        base["batch_size"] = 4;
        base["lr"] = 1e-4;
        if (base.contains("steps") && o.steps == 0) base["steps"] = 30;
    }
    if (o.eval_samples == 0) base["eval_samples"] = 32;  // windows of 256 tokens: 8 k predictions
    base["calib_samples"] = 16;
    bool fp_phase = false;
    for (const json& grid : kept_grids) fp_phase = fp_phase || grid.contains("fp_steps");
    if (fp_phase) {
        if (o.steps == 0) base["steps"] = 40;
        for (json& grid : kept_grids)
            if (grid.contains("fp_steps")) grid["fp_steps"] = json::array({0, 20});
    }
    if (any_training && o.replicates == 0) j["replicates"] = 2;
    j["grid"] = grid_list ? kept_grids : kept_grids[0];
    if (j.contains("comparisons")) {
        json comparisons = json::array();
        for (json c : j["comparisons"]) {
            for (const char* side : {"a", "b"}) {
                if (c[side].contains("data")) c[side]["data"] = text_for(c[side]["data"]);
                if (c[side].contains("fp_steps") && c[side]["fp_steps"] != 0) c[side]["fp_steps"] = 20;
                if (c[side].contains("bits")) c[side]["bits"] = c[side]["bits"].get<double>() + 2.5;  // 5, 6, 7 -> 7.5, 8.5, 9.5
            }
            std::string name = c.value("name", "");
            if (const size_t at = name.find("+ only"); at != std::string::npos) name.replace(at, 6, "first third");
            if (const size_t at = name.find("mixed 6 − 5 bits"); at != std::string::npos) name = "mixed 8.5 − 7.5 bits";
            c["name"] = name;
            comparisons.push_back(c);
        }
        j["comparisons"] = comparisons;
    }
    // The synthetic tasks' exact match has no counterpart on text: the held-out text's KL to the
    // FP model, top-1 agreement and loss (perplexity = exp(loss)) measure the same loss of skill.
    json metrics = json::array();
    const bool reports_loss_first = j.value("analysis", "") == "qat_fraction";
    for (const char* m : reports_loss_first ? std::vector<const char*>{"loss", "kl", "agreement"}
                                            : std::vector<const char*>{"kl", "agreement", "loss"})
        metrics.push_back(m);
    for (const json& m : j.value("metrics", json::array()))
        if (kSharedMetrics.count(m.get<std::string>())) metrics.push_back(m);
    j["metrics"] = metrics;
}

ExperimentSpec parse_json(json j, const std::string& file, const ExperimentOverrides& o, bool is_template) {
    if (!j.is_object()) throw UserError("experiment '" + file + "': the file must hold one JSON object");
    for (const auto& [k, v] : j.items())
        if (!kTopKeys.count(k)) bad(file, k, "is not an experiment field (docs/EXPERIMENTS.md lists them)");
    if (!j.contains("quantlab_experiment") || j["quantlab_experiment"] != 1)
        bad(file, "quantlab_experiment", "must be 1 (the format version this QuantLab reads)");
    ExperimentSpec spec;
    spec.file = file;
    auto str = [&](const char* k, std::string& out, bool required) {
        if (!j.contains(k)) {
            if (required) bad(file, k, "is missing");
            return;
        }
        if (!j[k].is_string()) bad(file, k, "must be a string");
        out = j[k].get<std::string>();
    };
    str("name", spec.name, true), str("title", spec.title, false), str("claim", spec.claim, false);
    str("source", spec.source, false), str("analysis", spec.analysis, false);
    if (spec.name.empty() || spec.name.size() > 64 ||
        !std::all_of(spec.name.begin(), spec.name.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }))
        bad(file, "name", "must be 1-64 characters of a-z, 0-9 and '-'");
    if (spec.analysis != "comparisons" && spec.analysis != "frontier" && spec.analysis != "qat_fraction")
        bad(file, "analysis", "must be comparisons, frontier or qat_fraction");

    if (o.replicates > 0) j["replicates"] = o.replicates;
    if (j.contains("replicates")) {
        if (!j["replicates"].is_number_integer() || j["replicates"].get<int64_t>() < 1 || j["replicates"].get<int64_t>() > 1000)
            bad(file, "replicates", "must be an integer from 1 to 1000");
        spec.replicates = j["replicates"].get<int64_t>();
    }
    if (j.contains("seed")) {
        if (!j["seed"].is_number_integer() || j["seed"].get<int64_t>() < 0) bad(file, "seed", "must be an integer >= 0");
        spec.seed = j["seed"].get<uint64_t>();
    }

    json base = j.value("base", json::object());
    if (!base.is_object()) bad(file, "base", "must be an object of run parameters");
    if (!o.model.empty()) base["model"] = o.model;
    if (o.steps > 0) base["steps"] = o.steps;
    if (o.eval_samples > 0) base["eval_samples"] = o.eval_samples;
    if (!o.data.empty()) {
        base["data"] = o.data;
        base.erase("calib"), base.erase("eval_data");
    }
    if (!o.pairs.empty()) base["pairs"] = o.pairs;
    if (o.device == "cpu") base.erase("device");
    else if (!o.device.empty()) base["device"] = o.device;
    j["base"] = base;
    // A template on a language model with text (not the demo's synthetic tasks) takes its
    // decoder form; --eval-data without it is a plain override.
    const bool decoder_form = is_template && !o.encoder && !o.model.empty() && o.model != "demo" && !o.data.empty() &&
                              !is_synthetic_spec(o.data);
    if (!o.eval_data.empty() && !decoder_form) base["eval_data"] = o.eval_data;
    j["base"] = base;
    if (is_template && (o.encoder || decoder_form)) {
        if (!j.contains("grid")) j["grid"] = json::object();
        if (o.encoder) to_encoder_form(j, file, o);
        else to_decoder_form(j, o);
        base = j["base"];
        spec.replicates = j["replicates"].get<int64_t>();  // the form's size (a template always names it)
        spec.title = j.value("title", spec.title);
    }
    if (!o.suite.empty()) {
        // Every run also answers the suite; its metrics follow the study's own.
        base["suite"] = o.suite;
        if (!o.suite_categories.empty()) base["suite_categories"] = o.suite_categories;
        if (o.suite_limit > 0) base["suite_limit"] = o.suite_limit;
        j["base"] = base;
        json metrics = j.value("metrics", json::array({"exact_match", "kl"}));
        std::vector<std::string> wanted = {"evalsuite/success"};
        if (o.suite_has_json) wanted.push_back("evalsuite/json_valid");
        wanted.insert(wanted.end(), {"evalsuite/right_to_wrong", "evalsuite/wrong_to_right"});
        for (const std::string& c : o.suite_metric_categories) wanted.push_back("evalsuite/success/" + c);
        for (const std::string& m : wanted)
            if (std::find(metrics.begin(), metrics.end(), json(m)) == metrics.end()) metrics.push_back(m);
        j["metrics"] = metrics;
    }
    for (const auto& [k, v] : base.items()) check_parameter(file, "base." + k, k, v);

    // The grid: one object of axes (their cross product), or a list of such objects whose cells
    // are joined (uniform recipes beside mixed-precision budgets). A cell's key and values name
    // the axes of its own grid.
    const json grid_field = j.value("grid", json::object());
    if (!grid_field.is_object() && !(grid_field.is_array() && !grid_field.empty()))
        bad(file, "grid", "must be an object of run parameter -> list of values, or a non-empty list of such objects");
    const bool grid_list = grid_field.is_array();
    const json grids = grid_list ? grid_field : json::array({grid_field});
    json all_values = json::object();  // axis -> every value any grid lists (comparisons select from them)
    std::set<std::string> keys;
    for (std::size_t g = 0; g < grids.size(); ++g) {
        const json& grid = grids[g];
        const std::string where = grid_list ? "grid[" + std::to_string(g) + "]" : "grid";
        if (!grid.is_object()) bad(file, where, "must be an object of run parameter -> list of values");
        std::vector<std::string> axes;
        std::size_t cell_count = 1;
        for (const auto& [k, values] : grid.items()) {
            if (!values.is_array() || values.empty()) bad(file, where + "." + k, "must be a non-empty list of values");
            std::set<std::string> seen;
            for (std::size_t i = 0; i < values.size(); ++i) {
                check_parameter(file, where + "." + k + "[" + std::to_string(i) + "]", k, values[i]);
                if (!seen.insert(value_text(values[i])).second) bad(file, where + "." + k, "lists " + value_text(values[i]) + " twice");
                if (!all_values.contains(k)) all_values[k] = json::array();
                json& known = all_values[k];
                if (std::none_of(known.begin(), known.end(), [&](const json& a) { return value_text(a) == value_text(values[i]); }))
                    known.push_back(values[i]);
            }
            axes.push_back(k);  // nlohmann::json keeps keys sorted
            if (std::find(spec.axes.begin(), spec.axes.end(), k) == spec.axes.end()) spec.axes.push_back(k);
            cell_count *= values.size();
            if (cell_count + spec.cells.size() > 10000) bad(file, "grid", "has more than 10000 cells");
        }
        for (std::size_t index = 0; index < cell_count; ++index) {
            Cell c;
            json params = base;
            std::size_t rest = index;
            // Row-major: the last axis varies fastest.
            std::vector<std::size_t> pick(axes.size());
            for (std::size_t a = axes.size(); a-- > 0;) {
                const json& values = grid[axes[a]];
                pick[a] = rest % values.size();
                rest /= values.size();
            }
            for (std::size_t a = 0; a < axes.size(); ++a) {
                const json& v = grid[axes[a]][pick[a]];
                params[axes[a]] = v;
                c.values[axes[a]] = value_text(v);
                c.key += (a ? "," : "") + axes[a] + "=" + value_text(v);
            }
            if (c.key.empty()) c.key = "base";
            if (!keys.insert(c.key).second) bad(file, where, "makes the cell " + c.key + " that another grid of the list makes");
            c.parameters = to_parameters(params);
            if (c.parameters.method == "mixed" && !(c.parameters.bits > 0))
                bad(file, grid.contains("bits") ? where + ".bits" : "base.bits",
                    "is missing for cell " + c.key + ": a mixed cell needs a budget in bits per parameter");
            c.parameters_json = params.dump();
            spec.cells.push_back(std::move(c));
        }
    }
    std::sort(spec.axes.begin(), spec.axes.end());
    const json& grid = all_values;

    const json metrics = j.value("metrics", json::array({"exact_match", "kl"}));
    if (!metrics.is_array() || metrics.empty()) bad(file, "metrics", "must be a non-empty list of metric names");
    for (const json& m : metrics) {
        if (!m.is_string()) bad(file, "metrics", "must list strings");
        const std::string name = m.get<std::string>();
        if (!is_token_model_metric(name) && !is_encoder_metric(name) && !kSharedMetrics.count(name))
            bad(file, "metrics", "names an unknown metric '" + name + "' (docs/EXPERIMENTS.md lists them)");
        spec.metrics.push_back(name);
    }

    const json comparisons = j.value("comparisons", json::array());
    if (!comparisons.is_array()) bad(file, "comparisons", "must be a list");
    for (std::size_t i = 0; i < comparisons.size(); ++i) {
        const std::string field = "comparisons[" + std::to_string(i) + "]";
        const json& c = comparisons[i];
        if (!c.is_object() || !c.contains("a") || !c.contains("b")) bad(file, field, "must be an object with a and b");
        for (const auto& [k, v] : c.items())
            if (k != "a" && k != "b" && k != "name") bad(file, field + "." + k, "is not a comparison field");
        Comparison cmp;
        cmp.a = parse_selector(file, field + ".a", c["a"], grid);
        cmp.b = parse_selector(file, field + ".b", c["b"], grid);
        std::set<std::string> ka, kb;
        for (const auto& kv : cmp.a) ka.insert(kv.first);
        for (const auto& kv : cmp.b) kb.insert(kv.first);
        if (ka != kb) bad(file, field, "a and b must select by the same axes");
        if (cmp.a == cmp.b) bad(file, field, "compares a cell with itself");
        cmp.name = c.value("name", "");
        if (cmp.name.empty())
            for (const auto& [k, v] : cmp.a) cmp.name += (cmp.name.empty() ? "" : ",") + v + " − " + cmp.b[k];
        spec.comparisons.push_back(std::move(cmp));
    }

    spec.canonical_json = j.dump();
    json identity = j;
    identity.erase("replicates");
    identity.erase("title"), identity.erase("claim"), identity.erase("source");  // prose, not what runs
    spec.identity_sha256 = sha256_hex(identity.dump());
    return spec;
}

}  // namespace

ExperimentSpec parse_experiment(const std::string& json_text, const std::string& file) {
    json j;
    try {
        j = parse_strict_json(json_text.data(), json_text.data() + json_text.size());
    } catch (const StrictJsonError& e) {
        throw UserError("experiment '" + file + "' is not valid JSON: " + e.what());
    }
    return parse_json(std::move(j), file, {}, false);
}

ExperimentSpec load_experiment(const std::string& template_or_file, const ExperimentOverrides& overrides) {
    std::string text, file = template_or_file;
    const std::vector<std::string> names = experiment_template_names();
    const bool is_template = std::find(names.begin(), names.end(), template_or_file) != names.end();
    if (is_template) {
        text = experiment_template_json(template_or_file);
        file = "template " + template_or_file;
    } else {
        std::ifstream in(template_or_file, std::ios::binary);
        if (!in) {
            std::string list;
            for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
            throw UserError("experiment '" + template_or_file + "' is neither a readable file nor a template (" + list + ")");
        }
        std::ostringstream ss;
        ss << in.rdbuf();
        text = ss.str();
        if (text.size() > (16u << 20)) throw UserError("experiment '" + file + "' is larger than 16 MiB");
    }
    json j;
    try {
        j = parse_strict_json(text.data(), text.data() + text.size());
    } catch (const StrictJsonError& e) {
        throw UserError("experiment '" + file + "' is not valid JSON: " + e.what());
    }
    return parse_json(std::move(j), file, overrides, is_template);
}

ExperimentSpec load_experiment(const std::string& template_or_file) { return load_experiment(template_or_file, {}); }

std::vector<PlannedRun> plan_runs(const ExperimentSpec& spec) {
    std::vector<PlannedRun> out;
    for (int64_t r = 0; r < spec.replicates; ++r)
        for (const Cell& c : spec.cells) out.push_back({&c, r, spec.seed + static_cast<uint64_t>(r)});
    return out;
}

}  // namespace ql::experiments
