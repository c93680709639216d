// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/ptq_api.h"

#include <optional>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/core/process_memory.h"
#include "engine/io/atomic_file.h"
#include "engine/io/imatrix_file.h"
#include "engine/io/safetensors_tensors.h"
#include "engine/loading/model_source.h"
#include "engine/models/model_device.h"
#include "engine/ptq/ptq_estimate.h"
#include "engine/ptq/ptq_pipeline.h"
#include "engine/quant/quantized_checkpoint.h"
#include "engine/quant/recipe.h"
#include "engine/quant/quantized_model.h"

namespace ql {
namespace {

nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

PtqLayerSummary summary_of(const LayerPtqReport& r) {
    PtqLayerSummary s;
    s.layer = r.layer;
    s.kind = r.kind;
    s.weight_quantizer = r.weight_quantizer;
    s.input_quantizer = r.input_quantizer;
    s.method = r.method;
    s.parameters = r.parameters;
    s.weight_bits = r.weight_bits;
    s.weight_mse = r.weight_mse;
    s.output_mse = r.output_mse;
    s.output_sqnr_db = r.output_sqnr_db;
    s.rtn_output_sqnr_db = r.rtn_output_sqnr_db;
    s.input_amax = r.input_amax;
    s.input_clipped_fraction = r.input_clipped_fraction;
    s.awq_alpha = r.awq_alpha;
    s.gptq_proxy_loss = r.gptq_proxy_loss;
    s.seconds = r.seconds;
    return s;
}

nlohmann::json floats_json(const std::vector<float>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (float x : v) a.push_back(x);
    return a;
}

nlohmann::json kv_cache_report_json(const PtqSummary& s) {
    nlohmann::json layers = nlohmann::json::array();
    for (const PtqKvCacheSummary& k : s.kv_cache_layers)
        layers.push_back({{"attention", k.attention},
                          {"quantizer", k.quantizer},
                          {"key_amax", floats_json(k.key_amax)},
                          {"value_amax", floats_json(k.value_amax)},
                          {"key_scale", floats_json(k.key_scale)},
                          {"value_scale", floats_json(k.value_scale)},
                          {"key_sqnr_db", finite_or_null(k.key_sqnr_db)},
                          {"value_sqnr_db", finite_or_null(k.value_sqnr_db)},
                          {"tokens", k.tokens}});
    const KvCacheMemorySummary& m = s.kv_memory;
    return {{"quantizer", s.kv_cache},
            {"layers", layers},
            {"attention_layers", m.layers},
            {"kv_heads", m.kv_heads},
            {"head_dim", m.head_dim},
            {"bytes_per_token", m.bytes_per_token},
            {"fp16_bytes_per_token", m.fp16_bytes_per_token},
            {"bytes_8k", m.bytes_8k()},
            {"fp16_bytes_8k", m.fp16_bytes_8k()}};
}

KvCacheMemorySummary kv_memory_summary(const KvCacheMemory& m) {
    KvCacheMemorySummary s;
    s.layers = m.layers;
    s.kv_heads = m.kv_heads;
    s.head_dim = m.head_dim;
    s.bytes_per_token = m.bytes_per_token();
    s.fp16_bytes_per_token = m.fp16_bits_per_token / 8.0;
    return s;
}

// Resume points of a streamed checkpoint (a run killed half-way starts again at its first
// unfinished block): in the partial folder, quantlab_resume.json (what the run is, the parts done,
// the writer's state, the finished parts' reports) and quantlab_resume_activations.safetensors
// (the activations entering the next part), both written atomically after every part.
constexpr const char* kResumeFile = "quantlab_resume.json";
constexpr const char* kResumeActivations = "quantlab_resume_activations.safetensors";

// Doubles as C99 hex floats: exact, and inf / nan survive (JSON has neither).
std::string exact(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a", v);
    return buf;
}
double exact(const nlohmann::json& j) { return std::strtod(j.get<std::string>().c_str(), nullptr); }

nlohmann::json report_state(const LayerPtqReport& r) {
    return {{"layer", r.layer}, {"kind", r.kind}, {"weight_quantizer", r.weight_quantizer}, {"input_quantizer", r.input_quantizer},
            {"method", r.method}, {"parameters", r.parameters},
            {"values", {exact(r.weight_bits), exact(r.weight_mse), exact(r.output_mse), exact(r.output_sqnr_db),
                        exact(r.rtn_output_sqnr_db), exact(r.input_amax), exact(r.input_clipped_fraction), exact(r.awq_alpha),
                        exact(r.gptq_proxy_loss), exact(r.seconds)}}};
}

LayerPtqReport report_from_state(const nlohmann::json& j) {
    LayerPtqReport r;
    r.layer = j.at("layer");
    r.kind = j.at("kind");
    r.weight_quantizer = j.at("weight_quantizer");
    r.input_quantizer = j.at("input_quantizer");
    r.method = j.at("method");
    r.parameters = j.at("parameters");
    const nlohmann::json& v = j.at("values");
    r.weight_bits = exact(v.at(0));
    r.weight_mse = exact(v.at(1));
    r.output_mse = exact(v.at(2));
    r.output_sqnr_db = exact(v.at(3));
    r.rtn_output_sqnr_db = exact(v.at(4));
    r.input_amax = exact(v.at(5));
    r.input_clipped_fraction = exact(v.at(6));
    r.awq_alpha = exact(v.at(7));
    r.gptq_proxy_loss = exact(v.at(8));
    r.seconds = exact(v.at(9));
    return r;
}

nlohmann::json floats_state(const std::vector<float>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (float x : v) a.push_back(exact(x));
    return a;
}

std::vector<float> floats_from_state(const nlohmann::json& a) {
    std::vector<float> v;
    for (const nlohmann::json& x : a) v.push_back(static_cast<float>(exact(x)));
    return v;
}

nlohmann::json kv_state(const KvCachePtqReport& k) {
    return {{"attention", k.attention}, {"quantizer", k.quantizer}, {"key_amax", floats_state(k.key_amax)},
            {"value_amax", floats_state(k.value_amax)}, {"key_scale", floats_state(k.key_scale)},
            {"value_scale", floats_state(k.value_scale)}, {"key_sqnr_db", exact(k.key_sqnr_db)},
            {"value_sqnr_db", exact(k.value_sqnr_db)}, {"tokens", k.tokens}};
}

KvCachePtqReport kv_from_state(const nlohmann::json& j) {
    KvCachePtqReport k;
    k.attention = j.at("attention");
    k.quantizer = j.at("quantizer");
    k.key_amax = floats_from_state(j.at("key_amax"));
    k.value_amax = floats_from_state(j.at("value_amax"));
    k.key_scale = floats_from_state(j.at("key_scale"));
    k.value_scale = floats_from_state(j.at("value_scale"));
    k.key_sqnr_db = exact(j.at("key_sqnr_db"));
    k.value_sqnr_db = exact(j.at("value_sqnr_db"));
    k.tokens = j.at("tokens");
    return k;
}

// What makes two runs the same job: the model's files, the recipe as applied, the data and the
// options that shape the activations.
std::string run_fingerprint(const OpenedModel& opened, const Recipe& recipe, const PtqRequest& req, const Dataset& data,
                            const PtqOptions& options) {
    uint64_t weights = 0;
    std::error_code ec;
    if (std::filesystem::is_directory(opened.path, ec))
        for (const auto& f : std::filesystem::directory_iterator(opened.path, ec))
            if (f.path().extension() == ".safetensors") weights += std::filesystem::file_size(f.path(), ec);
    return nlohmann::json({{"model", std::filesystem::absolute(opened.path).string()},
                           {"weight_bytes", weights},
                           {"recipe", recipe_to_json(recipe)},
                           {"calibration", req.calibration},
                           {"samples", data.size()},
                           {"tokens", data.inputs.dim() >= 2 ? data.inputs.size(1) : 0},
                           {"seed", req.seed},
                           {"token_dtype", req.token_dtype},
                           {"batch_size", options.batch_size},
                           {"sample_rows", options.sample_rows},
                           {"device", req.device}})
        .dump();
}

struct ResumePoint {
    int64_t parts_done = 0;
    std::string writer_state;
    std::vector<LayerPtqReport> layers;
    std::vector<KvCachePtqReport> kv_cache;
};

// The resume point a killed run of the same job left in `partial`, if any (anything unreadable
// or of another job: none, the run starts over).
std::optional<ResumePoint> read_resume_point(const std::string& partial, const std::string& fingerprint) {
    std::error_code ec;
    const std::string path = partial + "/" + kResumeFile;
    if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
    try {
        std::ifstream in(path);
        const nlohmann::json j = nlohmann::json::parse(in);
        if (j.at("fingerprint").get<std::string>() != fingerprint) return std::nullopt;
        ResumePoint r;
        r.parts_done = j.at("parts_done");
        r.writer_state = j.at("writer").get<std::string>();
        for (const nlohmann::json& l : j.at("layers")) r.layers.push_back(report_from_state(l));
        for (const nlohmann::json& k : j.at("kv_cache")) r.kv_cache.push_back(kv_from_state(k));
        if (r.parts_done <= 0 || !std::filesystem::is_regular_file(partial + "/" + kResumeActivations, ec)) return std::nullopt;
        return r;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

bool streams_checkpoint(const Model& model, const Dataset& calibration, int64_t above_bytes) {
    return model.block_count() > 0 && model.parameter_bytes() > above_bytes &&
           calibration.kind == Dataset::Kind::Tokens && !calibration.attention_mask.defined();
}

}  // namespace

std::vector<std::string> recipe_preset_names() { return preset_names(); }

std::pair<std::string, std::string> recipe_name_and_json(const std::string& recipe, const std::string& kv_cache,
                                                         const std::string& rotate) {
    Recipe r = load_recipe(recipe);
    overlay_recipe(r, kv_cache, rotate);
    return {r.name, recipe_to_json(r)};
}

std::string resolved_model_folder(const std::string& model) { return resolve_model_path(model); }

std::string ptq_report_json(const PtqSummary& s) {
    nlohmann::json layers = nlohmann::json::array();
    for (const PtqLayerSummary& l : s.layers)
        layers.push_back({{"layer", l.layer},
                          {"kind", l.kind},
                          {"weight_quantizer", l.weight_quantizer},
                          {"input_quantizer", l.input_quantizer},
                          {"method", l.method},
                          {"parameters", l.parameters},
                          {"weight_bits", l.weight_bits},
                          {"weight_mse", finite_or_null(l.weight_mse)},
                          {"output_mse", finite_or_null(l.output_mse)},
                          {"output_sqnr_db", finite_or_null(l.output_sqnr_db)},
                          {"rtn_output_sqnr_db", finite_or_null(l.rtn_output_sqnr_db)},
                          {"input_amax", l.input_amax},
                          {"input_clipped_fraction", l.input_clipped_fraction},
                          {"awq_alpha", l.awq_alpha >= 0 ? nlohmann::json(l.awq_alpha) : nlohmann::json(nullptr)},
                          {"gptq_proxy_loss", l.gptq_proxy_loss >= 0 ? nlohmann::json(l.gptq_proxy_loss) : nlohmann::json(nullptr)},
                          {"seconds", l.seconds}});
    nlohmann::json j = {{"model", s.model_path},
                        {"recipe", s.recipe_name},
                        {"method", s.method},
                        {"calibration", s.calibration},
                        {"calibration_examples", s.calibration_examples},
                        {"parameters", s.parameters},
                        {"quantized_parameters", s.quantized_parameters},
                        {"bits_per_parameter", s.bits_per_parameter},
                        {"model_bytes", s.model_bytes},
                        {"fp16_bytes", s.fp16_bytes},
                        {"seconds", s.seconds},
                        {"memory", {{"estimated_peak_bytes", s.estimate.peak_bytes},
                                    {"estimated_seconds", s.estimate.seconds},
                                    {"measured_gflops", s.estimate.gflops},
                                    {"peak_rss_bytes", s.peak_rss_bytes}}},
                        {"layers", layers},
                        {"kv_cache", kv_cache_report_json(s)},
                        {"rotation", {{"method", s.rotation}, {"notes", s.rotation_notes}}}};
    return j.dump(2) + "\n";
}

std::string ptq_report_csv(const PtqSummary& s) {
    std::ostringstream o;
    o.precision(9);
    o << "layer,kind,weight_quantizer,input_quantizer,method,parameters,weight_bits,weight_mse,output_mse,"
         "output_sqnr_db,rtn_output_sqnr_db,input_amax,input_clipped_fraction,awq_alpha,gptq_proxy_loss,seconds\n";
    for (const PtqLayerSummary& l : s.layers)
        o << l.layer << ',' << l.kind << ',' << l.weight_quantizer << ',' << l.input_quantizer << ',' << l.method << ','
          << l.parameters << ',' << l.weight_bits << ',' << l.weight_mse << ',' << l.output_mse << ',' << l.output_sqnr_db
          << ',' << l.rtn_output_sqnr_db << ',' << l.input_amax << ',' << l.input_clipped_fraction << ','
          << (l.awq_alpha >= 0 ? std::to_string(l.awq_alpha) : "") << ','
          << (l.gptq_proxy_loss >= 0 ? std::to_string(l.gptq_proxy_loss) : "") << ',' << l.seconds << '\n';
    return o.str();
}

PtqSummary run_ptq(const PtqRequest& req, JobSink& sink, const CancellationToken& cancel) {
    if (req.recipe.empty() && req.recipe_json.empty())
        throw UserError("ptq: a recipe is required (a preset such as NVFP4_DEFAULT or a JSON file)");
    if (req.calibration.empty()) throw UserError("ptq: calibration data is required (--calib)");
    const at::Device device = torch_device(req.device);
    std::error_code ec;
    if (!req.out_dir.empty() && !req.force && std::filesystem::exists(req.out_dir, ec))
        throw UserError("ptq: " + req.out_dir + " already exists (pass --force to replace it)");
    sink.progress(0, 0, "load");
    // Everything is checked before any work: recipe syntax, the recipe against the model, data.
    Recipe recipe = req.recipe_json.empty() ? load_recipe(req.recipe)
                                            : parse_recipe(req.recipe_json, req.recipe.empty() ? "recipe" : req.recipe);
    overlay_recipe(recipe, req.kv_cache, req.rotate);
    OpenedModel opened = open_model(req.model);
    if (opened.quantization)
        throw UserError("ptq: " + opened.path + " is already quantized; quantize its source model instead");
    if (opened.gguf)  // the file's notes: its weights may already lie on a quantization grid
        for (const std::string& w : opened.gguf->warnings) sink.log(LogLevel::Warning, w);
    move_model(*opened.model, device);  // before the quantizers, which work where their weights are
    auto quantized = std::make_unique<QuantizedModel>(*opened.model, recipe);
    DataOptions data_options;
    data_options.split = DataSplit::Train;  // calibrate on training data; evaluate on held-out data
    data_options.samples = req.samples > 0 ? req.samples : recipe.calibration.samples;
    data_options.seed = req.seed;  // also draws a file's calibration rows (replicates differ)
    data_options.sequence_length = req.sequence_length > 0 ? req.sequence_length : recipe.calibration.sequence_length;
    data_options.token_dtype = req.token_dtype;
    const Dataset calibration = load_calibration_dataset(req.calibration, data_options, opened.data);
    cancel.throw_if_cancelled();

    PtqOptions options;
    options.batch_size = req.batch_size > 0 ? req.batch_size : recipe.calibration.batch_size;
    const bool streamed = !req.out_dir.empty() && streams_checkpoint(*opened.model, calibration, req.stream_checkpoint_above_bytes);
    options.release_parts = streamed;
    std::optional<ImportanceMatrix> imatrix;
    if (!req.imatrix.empty()) recipe.imatrix = req.imatrix;
    if (!recipe.imatrix.empty()) {
        imatrix = read_imatrix(recipe.imatrix);
        options.imatrix = &*imatrix;
    }
    // Large decoders are written block by block as the pipeline finishes them, and each block's
    // memory is given back (engine/ptq/ptq_pipeline.h "Layer by layer"); small models are saved
    // whole afterwards, as one file each.
    const JobEstimate estimate =
        estimate_ptq(*quantized, calibration.size(), calibration.inputs.dim() >= 2 ? calibration.inputs.size(1) : 1, options);
    if (req.dry_run) {
        PtqSummary s;
        s.model_path = opened.path;
        s.recipe_name = recipe.name;
        s.method = recipe.algorithm.method;
        s.calibration = req.calibration;
        s.recipe_json = recipe_to_json(recipe);
        s.calibration_examples = calibration.size();
        s.estimate = estimate;
        return s;
    }
    if (!req.ignore_memory_estimate) require_job_fits(estimate);
    {
        const std::string text = job_estimate_text(estimate);
        sink.log(LogLevel::Info, "estimate: " + text.substr(0, text.find('\n')));
    }
    std::unique_ptr<ModelSourceFiles> source;
    std::unique_ptr<QuantizedCheckpointWriter> writer;
    nlohmann::json done_layers = nlohmann::json::array(), done_kv = nlohmann::json::array();
    const std::string fingerprint = streamed ? run_fingerprint(opened, recipe, req, calibration, options) : "";
    if (streamed) {
        source = std::make_unique<ModelSourceFiles>(opened);  // a GGUF file's config.json and tokenizer
        // A killed run of the same job left its finished blocks: go on from the first unfinished one.
        const std::optional<ResumePoint> resume = read_resume_point(req.out_dir + ".partial", fingerprint);
        writer = std::make_unique<QuantizedCheckpointWriter>(*quantized, source->folder(), req.out_dir, req.force,
                                                             opened.model->block_count() + 1,
                                                             resume ? resume->writer_state : std::string());
        if (resume) {
            options.resume.parts_done = resume->parts_done;
            options.resume.activations = load_tensor(
                SafetensorsFile::open(writer->partial_folder() + "/" + kResumeActivations), "activations");
            options.resume.layers = resume->layers;
            options.resume.kv_cache = resume->kv_cache;
            for (const LayerPtqReport& r : resume->layers) done_layers.push_back(report_state(r));
            for (const KvCachePtqReport& k : resume->kv_cache) done_kv.push_back(kv_state(k));
        }
        options.on_part_done = [&](const PtqPart& part) {
            writer->write_part(part.index, part.parameters, part.layers, part.kv_caches);
            for (const LayerPtqReport& r : part.reports) done_layers.push_back(report_state(r));
            for (const KvCachePtqReport& k : part.kv_reports) done_kv.push_back(kv_state(k));
            if (!part.next_activations) return;
            // The resume point: activations first, then the file that names the parts done.
            const std::string dir = writer->partial_folder();
            write_safetensors(dir + "/" + kResumeActivations,
                              std::vector<std::pair<std::string, at::Tensor>>{{"activations", *part.next_activations}});
            write_file_atomically(dir + "/" + kResumeFile, nlohmann::json({{"fingerprint", fingerprint},
                                                                            {"parts_done", part.index + 1},
                                                                            {"writer", writer->state()},
                                                                            {"layers", done_layers},
                                                                            {"kv_cache", done_kv}})
                                                               .dump() + "\n");
        };
    }
    const PtqResult result = run_ptq_pipeline(*quantized, calibration, options, sink, cancel);

    PtqSummary s;
    s.estimate = estimate;
    s.model_path = opened.path;
    s.recipe_name = recipe.name;
    s.method = recipe.algorithm.method;
    s.calibration = req.calibration;
    s.out_dir = req.out_dir;
    s.recipe_json = recipe_to_json(recipe);
    s.calibration_examples = calibration.size();
    s.parameters = result.size.parameters;
    s.quantized_parameters = result.size.quantized_parameters;
    s.bits_per_parameter = result.size.bits_per_parameter();
    s.model_bytes = result.size.bytes();
    s.fp16_bytes = 2.0 * static_cast<double>(result.size.parameters);
    s.seconds = result.seconds;
    s.peak_rss_bytes = static_cast<double>(process_memory().peak_rss_bytes);
    // Run-level numbers for project files (the compare view): size and time at step 0.
    sink.metric(0, "model/bits_per_parameter", s.bits_per_parameter);
    sink.metric(0, "model/bytes", s.model_bytes);
    sink.metric(0, "time/seconds", s.seconds);
    for (const LayerPtqReport& r : result.layers) s.layers.push_back(summary_of(r));
    s.kv_cache = recipe.kv_cache.describe();
    s.rotation = recipe.rotation.describe();
    s.rotation_notes = result.rotation;
    for (const KvCachePtqReport& k : result.kv_cache)
        s.kv_cache_layers.push_back({k.attention, k.quantizer, k.key_amax, k.value_amax, k.key_scale, k.value_scale,
                                     k.key_sqnr_db, k.value_sqnr_db, k.tokens});
    s.kv_memory = kv_memory_summary(result.kv_memory);
    if (s.kv_memory.layers > 0) {
        sink.metric(0, "model/kv_cache_bytes_per_token", s.kv_memory.bytes_per_token);
        sink.metric(0, "model/kv_cache_bytes_8k", s.kv_memory.bytes_8k());
    }
    if (!req.out_dir.empty()) {
        cancel.throw_if_cancelled();
        sink.progress(0, 1, "save");
        const std::vector<std::pair<std::string, std::string>> reports = {{"ptq_report.json", ptq_report_json(s)},
                                                                          {"ptq_report.csv", ptq_report_csv(s)}};
        if (writer) {
            std::error_code ec;
            std::filesystem::remove(writer->partial_folder() + "/" + kResumeFile, ec);
            std::filesystem::remove(writer->partial_folder() + "/" + kResumeActivations, ec);
            writer->finish(reports);
        } else {
            const ModelSourceFiles files(opened);  // a GGUF file's config.json and tokenizer
            save_quantized_checkpoint(*quantized, files.folder(), req.out_dir, req.force, reports);
        }
        sink.progress(1, 1, "save");
        sink.artifact("model", req.out_dir);
    }
    return s;
}

}  // namespace ql
