// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/demo_api.h"

#include <ATen/Parallel.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/core/engine_runtime.h"
#include "engine/core/errors.h"
#include "engine/data/dataset.h"
#include "engine/eval/evaluator.h"
#include "engine/io/atomic_file.h"
#include "engine/io/sha256.h"
#include "engine/models/model_device.h"
#include "engine/io/safetensors_file.h"
#include "engine/train/demo_trainer.h"

namespace ql {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kRecordFile = kDemoRecordFile;
constexpr const char* kVocabularyId = "quantlab-synthetic-v1";
constexpr int64_t kValidationProblems = 3000;  // 1000 per operation
constexpr uint64_t kValidationSeed = 20261129;

// The HF LlamaConfig of the demo decoder, so the folder also loads in transformers.
json llama_config_json(const ModelConfig& c) {
    return json{{"architectures", {"LlamaForCausalLM"}},
                {"model_type", "llama"},
                {"_name_or_path", "quantlab-demo"},
                {"vocab_size", c.vocab_size},
                {"hidden_size", c.hidden_size},
                {"intermediate_size", c.intermediate_size},
                {"num_hidden_layers", c.num_layers},
                {"num_attention_heads", c.num_heads},
                {"num_key_value_heads", c.num_kv_heads},
                {"head_dim", c.head_dim},
                {"max_position_embeddings", c.max_positions},
                {"rms_norm_eps", c.norm_eps},
                {"rope_theta", c.rope_theta},
                {"hidden_act", c.activation},
                {"tie_word_embeddings", c.tie_embeddings},
                {"attention_bias", false},
                {"mlp_bias", false},
                {"bos_token_id", synthetic_vocab::kBos},
                {"eos_token_id", synthetic_vocab::kEos},
                {"pad_token_id", synthetic_vocab::kPad},
                {"torch_dtype", "float32"}};
}

void save_model_folder(Model& model, const std::string& folder, json record) {
    fs::create_directories(folder);
    write_file_atomically(folder + "/config.json", llama_config_json(model.config()).dump(2) + "\n");
    std::vector<at::Tensor> keep;
    std::vector<SafetensorsWriteEntry> entries;
    for (auto& [name, t] : model.file_state()) {
        keep.push_back(t.to(at::kFloat).contiguous());
        const at::Tensor& c = keep.back();
        SafetensorsWriteEntry e;
        e.name = name;
        e.dtype = SafetensorsDtype::F32;
        e.shape.assign(c.sizes().begin(), c.sizes().end());
        e.data = c.data_ptr();
        e.size = static_cast<uint64_t>(c.numel()) * sizeof(float);
        entries.push_back(std::move(e));
    }
    write_safetensors(folder + "/model.safetensors", std::move(entries), {{"format", "pt"}});
    // What a reader checks the folder against (verify_demo_files).
    json files = json::object();
    for (const char* name : {"config.json", "model.safetensors"}) {
        const std::string path = folder + "/" + name;
        files[name] = {{"bytes", static_cast<uint64_t>(fs::file_size(path))}, {"sha256", sha256_file_hex(path)}};
    }
    record["files"] = files;
    // Written last: its presence marks a complete folder.
    write_file_atomically(folder + "/" + kRecordFile, record.dump(2) + "\n");
}

json vocabulary_json() {
    json v = json::array();
    for (int64_t id = 0; id < synthetic_vocab::kSize; ++id) v.push_back(synthetic_vocab::token_text(id));
    return v;
}

// The quantlab-cli command that trains the same model into the same folder.
std::string demo_command(const DemoRequest& request, const std::string& out, int64_t steps, uint64_t seed) {
    std::string c = "quantlab-cli demo --retrain";
    if (!request.out_dir.empty()) c += " --out " + out;
    if (request.steps > 0) c += " --steps " + std::to_string(steps);
    if (seed != 0) c += " --seed " + std::to_string(seed);
    if (request.threads > 0) c += " --threads " + std::to_string(request.threads);
    if (request.device != "cpu") c += " --device " + request.device;
    return c;
}

// The build and the machine a demo was trained on: BLAS kernels differ between CPUs, so the
// same command gives another model elsewhere (docs/DATA.md "The demo model").
json trained_on_json() {
    const RuntimeInfo rt = initialise_engine_runtime();
    return json{{"quantlab_version", rt.quantlab_version},
                {"source_commit", quantlab_source_commit()},
                {"libtorch", rt.torch_version},
                {"blas", rt.blas},
                {"blas_config", rt.blas_config},
                {"cpu", rt.cpu_model},
                {"hardware_threads", rt.hardware_threads}};
}

// Swaps a finished folder into place: the previous one is only removed once the new one is there.
void replace_folder(const std::string& partial, const std::string& out) {
    std::error_code ec;
    const std::string old = out + ".old";
    fs::remove_all(old, ec);
    if (fs::exists(out)) fs::rename(out, old);
    fs::rename(partial, out);
    fs::remove_all(old, ec);
}

}  // namespace

DemoReport read_demo_record(const std::string& folder) {
    const std::string path = folder + "/" + kRecordFile;
    std::ifstream in(path);
    if (!in) throw UserError(path + ": cannot open (not a QuantLab demo folder)");
    json j;
    try {
        j = json::parse(in);
    } catch (const json::exception& e) {
        throw UserError(path + ": malformed JSON: " + e.what());
    }
    DemoReport r;
    r.out_dir = folder;
    try {
        const json& t = j.at("training");
        r.steps = t.at("steps").get<int64_t>();
        r.batch_size = t.at("batch_size").get<int64_t>();
        r.threads = t.at("threads").get<int>();
        r.train_seconds = t.at("seconds").get<double>();
        r.parameter_count = j.at("parameter_count").get<int64_t>();
        const json& v = j.at("validation");
        r.exact_match = v.at("exact_match").get<double>();
        r.validation_examples = v.at("examples").get<int64_t>();
        for (const auto& [name, value] : v.at("domains").items())
            r.domain_exact_match.emplace_back(name, value.at("exact_match").get<double>());
        r.command = t.value("command", "");
        if (const auto on = j.find("trained_on"); on != j.end() && on->is_object()) {
            r.trained_on = on->value("cpu", "unknown CPU") + ", " + std::to_string(on->value("hardware_threads", 0)) +
                           " hardware threads, LibTorch " + on->value("libtorch", "?");
            const std::string blas = on->value("blas_config", "");
            if (!blas.empty()) r.trained_on += ", " + blas;
        }
    } catch (const json::exception& e) {
        throw UserError(path + ": missing or malformed field: " + e.what());
    }
    // items() iterates keys sorted; restore the operation order.
    std::vector<std::pair<std::string, double>> ordered;
    for (const char* op : {"+", "-", "*"})
        for (const auto& d : r.domain_exact_match)
            if (d.first == op) ordered.push_back(d);
    if (ordered.size() == r.domain_exact_match.size()) r.domain_exact_match = ordered;
    return r;
}

void verify_demo_files(const std::string& folder) {
    const std::string record_path = folder + "/" + kRecordFile;
    std::ifstream in(record_path);
    if (!in) throw UserError(record_path + ": cannot open (not a QuantLab demo folder)");
    const json j = json::parse(in, nullptr, false);
    if (!j.is_object()) throw UserError(record_path + ": malformed JSON");
    const auto files = j.find("files");
    if (files == j.end()) return;
    if (!files->is_object()) throw UserError(record_path + ": field 'files': expected an object");
    for (const auto& [name, entry] : files->items()) {
        const std::string path = folder + "/" + name;
        std::error_code ec;
        if (name.find('/') != std::string::npos || !fs::is_regular_file(path, ec))
            throw UserError(path + ": missing (" + record_path + " lists it)");
        if (!entry.is_object() || !entry.contains("bytes") || !entry["bytes"].is_number_unsigned() ||
            !entry.contains("sha256") || !entry["sha256"].is_string())
            throw UserError(record_path + ": field 'files." + name + "': expected {\"bytes\": N, \"sha256\": \"...\"}");
        const uint64_t bytes = entry["bytes"].get<uint64_t>();
        const uint64_t size = fs::file_size(path, ec);
        if (size != bytes)
            throw UserError(path + ": " + std::to_string(size) + " bytes, but " + record_path + " records " +
                            std::to_string(bytes) + " (damaged or replaced; a git LFS pointer?)");
        const std::string want = entry["sha256"].get<std::string>(), got = sha256_file_hex(path);
        if (got != want)
            throw UserError(path + ": SHA-256 " + got + ", but " + record_path + " records " + want + " (damaged or replaced)");
    }
}

DemoReport shipped_demo_report() {
    const std::string dir = shipped_demo_dir();
    if (!demo_model_complete(dir))
        throw UserError("demo: the shipped demo model is missing from " + dir +
                        " (config.json, model.safetensors, quantlab.json); restore it from the QuantLab sources, "
                        "or train one with 'quantlab-cli demo --retrain' and open it by its path");
    verify_demo_files(dir);
    DemoReport r = read_demo_record(dir);
    r.cached = true;
    r.shipped = true;
    return r;
}

DemoReport build_demo(const DemoRequest& request, JobSink& sink, const CancellationToken& cancel) {
    const auto start = std::chrono::steady_clock::now();
    const std::string out = request.out_dir.empty() ? retrained_demo_dir() : request.out_dir;
    torch_device(request.device);  // a device this build or machine lacks is refused before anything is read
    if (!request.force && demo_model_complete(out)) {
        DemoReport r = read_demo_record(out);
        r.cached = true;
        sink.log(LogLevel::Info, "demo model cached in " + out);
        sink.artifact("model", out);
        return r;
    }
    if (request.steps < 0) throw UserError("demo: the number of steps must be positive");
    if (request.threads < 0) throw UserError("demo: the number of threads must be positive");

    DemoTrainingConfig config = demo_training_config();
    if (request.steps > 0) config.steps = request.steps;
    config.seed = request.seed;
    config.device = request.device;
    if (config.eval_every >= config.steps) config.eval_every = 0;
    // One intra-op thread by default: on two cores shared with other work, two OpenMP threads
    // spin-wait for each other on every small op and train ~3x slower (docs/BENCHMARKS.md).
    const int threads = request.threads > 0 ? request.threads : 1;
    const int previous_threads = at::get_num_threads();
    at::set_num_threads(threads);
    struct RestoreThreads {
        int n;
        ~RestoreThreads() { at::set_num_threads(n); }
    } restore{previous_threads};

    sink.log(LogLevel::Info, "training the demo decoder on " + std::to_string(config.steps) + " steps of " +
                                 std::to_string(config.batch_size) + " problems");
    DemoTrainingResult trained = train_demo_model(config, sink, cancel);

    const Dataset validation =
        make_synthetic_dataset(config.eval_domains, DataSplit::Validation, kValidationSeed, kValidationProblems);
    const EvalReport eval = evaluate(*trained.model, nullptr, validation, EvalOptions{}, sink, cancel);
    sink.metric(trained.steps, "eval/exact_match", eval.overall.exact_match.value_or(0));
    for (const auto& [name, m] : eval.domains)
        sink.metric(trained.steps, "eval/exact_match/" + name, m.exact_match.value_or(0));

    DemoReport r;
    r.out_dir = out;
    r.steps = trained.steps;
    r.batch_size = config.batch_size;
    r.threads = threads;
    r.train_seconds = trained.seconds;
    r.parameter_count = trained.model->parameter_count();
    r.exact_match = eval.overall.exact_match.value_or(0);
    r.validation_examples = eval.overall.examples;
    json domains = json::object();
    for (const auto& [name, m] : eval.domains) {
        r.domain_exact_match.emplace_back(name, m.exact_match.value_or(0));
        domains[name] = {{"exact_match", m.exact_match.value_or(0)}, {"examples", m.examples}, {"loss", m.loss}};
    }

    sink.progress(0, 1, "save");
    cancel.throw_if_cancelled();
    json record = {
        {"format", "quantlab-demo"},
        {"version", 1},
        {"vocabulary", kVocabularyId},
        {"tokens", vocabulary_json()},
        {"tasks", "synthetic:arith"},
        {"task_definition", "docs/DATA.md: 3-digit operands and 4-digit answers, least significant digit first"},
        {"parameter_count", r.parameter_count},
        {"training",
         {{"command", request.command.empty() ? demo_command(request, out, r.steps, config.seed) : request.command},
          {"steps", r.steps},
          {"batch_size", r.batch_size},
          {"seed", config.seed},
          {"threads", threads},
          {"peak_lr", config.schedule.peak},
          {"seconds", r.train_seconds},
          {"final_loss", trained.final_loss}}},
        {"validation",
         {{"seed", kValidationSeed}, {"examples", r.validation_examples}, {"exact_match", r.exact_match}, {"domains", domains}}},
        {"trained_on", trained_on_json()},
    };
    const std::string partial = out + ".partial";
    std::error_code ec;
    fs::remove_all(partial, ec);
    try {
        save_model_folder(*trained.model, partial, record);
        replace_folder(partial, out);
    } catch (const fs::filesystem_error& e) {
        fs::remove_all(partial, ec);
        throw UserError(out + ": cannot save the demo model: " + e.what());
    }
    sink.progress(1, 1, "save");
    sink.artifact("model", out);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
}

}  // namespace ql
