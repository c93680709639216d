// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/lora_api.h"

#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/api/eval_json.h"
#include "engine/api/evalsuite_api.h"
#include "engine/core/compute_device.h"
#include "engine/core/errors.h"
#include "engine/distributed/data_parallel.h"
#include "engine/distributed/process_group.h"
#include "engine/eval/evaluator.h"
#include "engine/evaluation/eval_suite.h"
#include "engine/evaluation/suite_runner.h"
#include "engine/export/export_doctor.h"
#include "engine/export/export_folder.h"
#include "engine/io/atomic_file.h"
#include "engine/io/safetensors_tensors.h"
#include "engine/lora/adapted_model.h"
#include "engine/lora/base_fingerprint.h"
#include "engine/lora/loftq.h"
#include "engine/lora/lora_adapters.h"
#include "engine/lora/lora_base.h"
#include "engine/lora/lora_merge.h"
#include "engine/lora/peft_adapter.h"
#include "engine/models/model_device.h"
#include "engine/quant/quant_plan.h"
#include "engine/quant/quantized_checkpoint.h"
#include "engine/quant/recipe.h"
#include "engine/train/lr_schedule.h"
#include "engine/train/quant_trainer.h"

namespace ql {
namespace fs = std::filesystem;
namespace {

using LoraClock = std::chrono::steady_clock;

LoraSettings lora_settings_of(const LoraTrainRequest& r) {
    LoraSettings s;
    s.rank = r.rank;
    s.alpha = r.alpha;
    s.dropout = r.dropout;
    s.targets = parse_lora_targets(r.targets);
    s.init = r.init;
    s.loftq_iterations = r.loftq_iterations;
    s.dtype = r.adapter_dtype;
    s.seed = r.seed;
    s.validate();
    return s;
}

// A recipe given as a preset name, a file, or JSON text ('{' first), as canonical JSON text.
std::string lora_recipe_json(const std::string& recipe) {
    const size_t first = recipe.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && recipe[first] == '{') return recipe_to_json(parse_recipe(recipe, "the --recipe JSON"));
    return recipe_to_json(load_recipe(recipe));
}

// The base's recipe as JSON text: --recipe (a preset, file or JSON), else the method's default.
std::string lora_recipe_text(const LoraTrainRequest& r, bool checkpoint) {
    if (checkpoint) return "";
    if (!r.recipe.empty()) return lora_recipe_json(r.recipe);
    return r.method == "qlora" ? kQloraRecipe : kFullPrecisionRecipe;
}

LoraBaseSource lora_source_of(const LoraTrainRequest& r) {
    LoraBaseSource s;
    s.model = r.model;
    s.recipe = lora_recipe_text(r, is_quantized_checkpoint(resolve_model_path(r.model)));
    s.calibration = r.calibration.empty() ? r.data : r.calibration;
    s.calibration_samples = r.calibration_samples;
    s.sequence_length = r.sequence_length;
    s.seed = r.seed;
    return s;
}

void validate_lora_request(const LoraTrainRequest& r) {
    if (r.method != "qlora" && r.method != "lora" && r.method != "full")
        throw UserError("lora: the method is qlora, lora or full, got '" + r.method + "'");
    if (r.model.empty()) throw UserError("lora: MODEL is required");
    if (r.data.empty()) throw UserError("lora: training data is required (--data)");
    if (r.loss != "sft" && r.loss != "kl") throw UserError("lora: --loss is sft or kl, got '" + r.loss + "'");
    if (r.steps <= 0 || r.batch_size <= 0 || r.grad_accumulation <= 0)
        throw UserError("lora: --steps, --batch-size and --grad-accum must be positive");
    if (!(r.lr > 0) || !std::isfinite(r.lr)) throw UserError("lora: --lr must be a positive number");
    if (!(r.temperature > 0)) throw UserError("lora: --temperature must be positive");
    if (r.method == "full" && !r.recipe.empty()) throw UserError("lora: full fine-tuning trains a full-precision model; drop --recipe");
    if (r.method == "full" && r.init != "default") throw UserError("lora: --init applies to adapters, not to full fine-tuning");
    parse_text_windows(r.windows);
    lora_settings_of(r);
}

int64_t count_parameters(const Model& m) {
    int64_t n = 0;
    for (const auto& [name, p] : m.named_parameters()) n += p.numel();
    return n;
}

// The memory estimate's view of a base with adapters of `settings` (no adapters: none).
TrainingMemoryEstimate memory_of(const QuantizedModel& q, const std::vector<std::string>& adapted, const LoraSettings& settings,
                                 int64_t batch, int64_t sequence) {
    MemoryShape shape;
    const Model& m = q.model();
    const ModelConfig& c = m.config();
    shape.model = c.name.empty() ? c.model_type : c.name;
    MemoryWeightGroup quantized{"quantized linear layers", 0, 0, 0};
    double quant_bits = 0, quant_scale_bits = 0;
    int64_t quantized_params = 0;
    for (const auto& l : q.layers()) {
        if (!l->weight_configured()) continue;
        const std::vector<int64_t> wshape = weight_matrix_shape(l->layer());
        const int64_t n = l->layer().weight.numel();
        const QuantSpec spec = l->weight_spec();
        const double bits = weight_storage_bits(spec, wshape);
        quant_bits += bits;
        quant_scale_bits += bits - static_cast<double>(n) * spec.info->element_bits;
        quantized_params += n;
    }
    const int64_t all = count_parameters(m);
    if (quantized_params > 0) {
        quantized.parameters = quantized_params;
        quantized.base_bits = quant_bits / static_cast<double>(quantized_params);
        quantized.scale_bits = quant_scale_bits / static_cast<double>(quantized_params);
        shape.groups.push_back(quantized);
    }
    shape.groups.push_back({"other parameters (16-bit)", all - quantized_params, 16, 0});
    for (const std::string& module : adapted) {
        const QuantizableLayer* l = m.find_layer(module);
        shape.adapter_parameters += settings.rank * (l->weight.size(0) + l->weight.size(1));
    }
    shape.adapter_rank = settings.rank;
    shape.adapted_layers = static_cast<int64_t>(adapted.size());
    shape.adapter_dtype = settings.dtype;
    shape.layers = c.num_layers;
    shape.hidden = c.hidden_size;
    shape.intermediate = c.intermediate_size;
    shape.heads = c.num_heads;
    shape.kv_heads = c.num_kv_heads > 0 ? c.num_kv_heads : c.num_heads;
    shape.head_dim = c.head_dim;
    shape.vocab = c.vocab_size;
    shape.batch = batch;
    shape.sequence = sequence > 0 ? sequence : std::min<int64_t>(c.max_positions > 0 ? c.max_positions : 256, 256);
    std::string name = "quantized base + LoRA";
    for (const auto& l : q.layers())
        if (l->weight_configured()) {
            const QuantSpec s = l->weight_spec();
            name = s.info->name == "nf4" && s.double_quant ? "QLoRA (NF4 + double quant)" : "LoRA on " + s.info->title + " base";
            break;
        }
    return estimate_training_memory(shape, name);
}

}  // namespace

TrainingMemoryEstimate lora_memory_estimate(const LoraTrainRequest& req) {
    validate_lora_request(req);
    LoraBaseSource source = lora_source_of(req);
    source.calibration.clear();  // nothing is calibrated: only shapes and formats matter
    OpenedModel m = open_model(source.model);
    std::unique_ptr<QuantizedModel> own;
    QuantizedModel* q = m.quantization.get();
    if (!q) {
        own = std::make_unique<QuantizedModel>(*m.model, parse_recipe(source.recipe, "the base's recipe"));
        q = own.get();
    }
    const LoraSettings settings = lora_settings_of(req);
    const std::vector<std::string> adapted = req.method == "full" ? std::vector<std::string>{} : resolve_lora_targets(*m.model, settings);
    return memory_of(*q, adapted, settings, req.batch_size, req.sequence_length);
}

std::string lora_train_report_json(const LoraTrainReport& r) {
    nlohmann::json memory = nlohmann::json::array();
    for (const MethodMemory& m : r.memory.methods) {
        nlohmann::json lines = nlohmann::json::object();
        for (const MemoryLine& l : m.lines) lines[l.item] = l.bytes;
        memory.push_back({{"method", m.method}, {"total_bytes", m.total_bytes()}, {"trainable_parameters", m.trainable_parameters},
                          {"bytes", lines}});
    }
    const auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
    const nlohmann::json j = {{"method", r.method},
                              {"model", r.model_path},
                              {"adapter", r.adapter_dir},
                              {"base", r.base_summary},
                              {"base_sha256", r.base_sha256},
                              {"steps", r.steps},
                              {"resumed_from", r.resumed_from},
                              {"tokens", r.tokens},
                              {"trainable_parameters", r.trainable_parameters},
                              {"model_parameters", r.model_parameters},
                              {"adapted_layers", r.adapted_layers},
                              {"seconds", r.seconds},
                              {"init_seconds", r.init_seconds},
                              {"final_loss", r.final_loss},
                              {"loftq_base_error", opt(r.loftq_base_error)},
                              {"loftq_error", opt(r.loftq_error)},
                              {"teacher", eval_report_json(r.teacher)},
                              {"before", eval_report_json(r.before)},
                              {"after", eval_report_json(r.after)},
                              {"memory", memory}};
    return j.dump(2) + "\n";
}

LoraTrainReport run_lora_training(const LoraTrainRequest& req, JobSink& sink, const CancellationToken& cancel) {
    validate_lora_request(req);
    if (req.out_dir.empty()) throw UserError("lora: an output folder is required (--out)");
    const LoraSettings settings = lora_settings_of(req);
    const DistributedOptions& dist = req.distributed;
    const bool main_rank = dist.is_main();
    std::error_code ec;
    const bool exists = main_rank && fs::exists(req.out_dir, ec);
    if (req.resume && req.force) throw UserError("lora: --resume and --force exclude each other");
    if (main_rank && exists && !req.resume && !req.force)
        throw UserError("lora: " + req.out_dir + " already exists (--resume to continue its run, --force to start over)");
    if (main_rank && req.resume && !exists) throw UserError("lora: nothing to resume in " + req.out_dir);
    if (dist.enabled() && req.device != "cpu") throw UserError("lora: several processes need --device cpu");
    if (dist.enabled() && req.batch_size % dist.world_size != 0)
        throw UserError("lora: --batch-size " + std::to_string(req.batch_size) + " does not split over " +
                        std::to_string(dist.world_size) + " ranks");
    if (req.threads < 0) throw UserError("lora: the thread count must not be negative");
    if (req.threads > 0) at::set_num_threads(static_cast<int>(req.threads));
    LrScheduleSpec lr;
    lr.kind = parse_lr_schedule_kind(req.schedule);
    lr.peak = req.lr;
    lr.warmup_steps = req.warmup_steps;
    lr.total_steps = req.steps;
    lr.final_fraction = req.final_lr_fraction;
    lr.decay_steps = std::max<int64_t>(1, (req.steps + 2) / 5);
    lr.validate();
    std::unique_ptr<ProcessGroup> group;
    std::unique_ptr<DataParallel> data_parallel;
    if (dist.enabled()) {
        sink.progress(0, 0, "connect");
        group = std::make_unique<ProcessGroup>(dist);
        data_parallel = std::make_unique<DataParallel>(*group);
    }

    sink.progress(0, 0, "load");
    const LoraBaseSource source = lora_source_of(req);
    // Full fine-tuning trains the model's own weights, and LoftQ writes float32 base weights off
    // the model's grid: owned float32 copies for both, not the mapped file.
    LoraBase base = open_lora_base(source, req.device, cancel,
                                   req.method == "full" || req.init == "loftq" ? WeightStorage::Float32Copy : WeightStorage::AsStored);
    QuantizedModel& q = *base.quantized;
    Model& model = base.model();
    if (req.method == "full" && q.size().quantized_parameters > 0)
        throw UserError("lora: full fine-tuning needs a full-precision MODEL, not a quantized checkpoint");
    OpenedModel teacher = open_model(req.teacher.empty() ? req.model : req.teacher);
    move_opened_model(teacher, torch_device(req.device));
    if (teacher.quantization) teacher.quantization->set_enabled(false);
    if (teacher.model->config().vocab_size != model.config().vocab_size)
        throw UserError("lora: the teacher's vocabulary differs from the model's");
    const TrainingBatches batches(req.data, base.opened.data, req.batch_size, req.seed, req.sequence_length);
    DataOptions eo;
    eo.split = DataSplit::Validation;
    eo.samples = req.eval_samples;
    eo.seed = req.seed;
    eo.sequence_length = req.sequence_length;
    eo.windows.kind = parse_text_windows(req.windows);
    const Dataset eval_data = load_dataset(req.eval_data.empty() ? req.data : req.eval_data, eo, base.opened.data);
    if (main_rank) {
        if (req.force && exists) fs::remove_all(req.out_dir, ec);
        fs::create_directories(req.out_dir, ec);
        if (ec) throw UserError("lora: cannot create " + req.out_dir + ": " + ec.message());
    }

    LoraTrainReport report;
    report.method = req.method;
    report.model_path = base.opened.path;
    report.model_parameters = count_parameters(model);
    const auto t_init = LoraClock::now();
    std::unique_ptr<LoraAdapters> adapters;
    std::vector<std::string> adapted;
    if (req.method != "full") {
        adapters = std::make_unique<LoraAdapters>(model, settings);
        for (const LoraLayer& l : adapters->layers()) adapted.push_back(l.module);
        if (settings.init == "loftq") {
            const LoftqReport lr_report = loftq_initialise(q, *adapters, settings.loftq_iterations);
            double base_error = 0, loftq_error = 0;
            for (const LoftqLayer& l : lr_report.layers) {
                base_error += l.base_error;
                loftq_error += l.loftq_error;
            }
            if (!lr_report.layers.empty()) {
                report.loftq_base_error = base_error / static_cast<double>(lr_report.layers.size());
                report.loftq_error = loftq_error / static_cast<double>(lr_report.layers.size());
            } else {
                sink.log(LogLevel::Warning, "loftq: no adapted layer has a weight quantizer; the default init is kept");
            }
        }
        report.trainable_parameters = adapters->parameter_count();
        report.adapted_layers = static_cast<int64_t>(adapted.size());
    } else {
        report.trainable_parameters = report.model_parameters;
    }
    report.init_seconds = std::chrono::duration<double>(LoraClock::now() - t_init).count();
    const BaseFingerprint fingerprint = fingerprint_base(q);
    report.base_summary = fingerprint.summary();
    report.base_sha256 = fingerprint.sha256;
    report.memory = memory_of(q, adapted, settings, req.batch_size, req.sequence_length);

    EvalOptions eval_options;
    eval_options.seed = req.seed;
    NullJobSink quiet;
    if (main_rank) {
        report.teacher = evaluate(*teacher.model, nullptr, eval_data, eval_options, quiet, cancel);
        report.before = evaluate(model, teacher.model.get(), eval_data, eval_options, quiet, cancel);
        report_eval_metrics(sink, 0, report.before);
    }

    QuantTrainingConfig config;
    config.mode = req.loss == "kl" ? "qad" : "qat";
    config.steps = req.steps;
    config.grad_accumulation = req.grad_accumulation;
    config.lr_at = [lr](int64_t step) { return lr.at(step); };
    config.optimizer.weight_decay = req.weight_decay;
    config.clip_norm = req.clip_norm;
    config.temperature = req.temperature;
    config.eval_every = req.eval_every;
    config.checkpoint_every = req.checkpoint_every;
    config.checkpoint_dir = main_rank ? req.out_dir : "";
    config.data_parallel = data_parallel.get();
    if (adapters) {
        config.trainable = adapters->named_parameters();
        LoraAdapters* a = adapters.get();
        config.before_micro_batch = [a](int64_t micro) {
            a->set_training(true);
            a->set_micro_batch(micro);
        };
        config.after_optimizer_step = [a] { a->round_to_storage(); };
    }
    const nlohmann::json identity = {{"lora", req.method}, {"model", req.model}, {"recipe", source.recipe},
                                     {"data", req.data}, {"loss", req.loss}, {"teacher", req.teacher},
                                     {"steps", req.steps}, {"batch_size", req.batch_size},
                                     {"grad_accumulation", req.grad_accumulation}, {"lr", req.lr},
                                     {"schedule", req.schedule}, {"warmup", req.warmup_steps},
                                     {"final_lr_fraction", req.final_lr_fraction}, {"weight_decay", req.weight_decay},
                                     {"clip_norm", req.clip_norm}, {"temperature", req.temperature},
                                     {"rank", settings.rank}, {"alpha", settings.alpha}, {"dropout", settings.dropout},
                                     {"targets", settings.targets}, {"init", settings.init},
                                     {"loftq_iters", settings.loftq_iterations}, {"adapter_dtype", settings.dtype},
                                     {"seed", req.seed}, {"seq_len", req.sequence_length}};
    config.config_json = identity.dump();
    Model* teacher_model = teacher.model.get();
    auto evaluator = [&](int64_t step, JobSink& s, const CancellationToken& c) {
        if (adapters) adapters->set_training(false);
        report.after = evaluate(model, teacher_model, eval_data, eval_options, quiet, c);
        report_eval_metrics(s, step, report.after);
    };
    struct AdaptersToInference {
        LoraAdapters* a;
        ~AdaptersToInference() {
            if (a) a->set_training(false);
        }
    } inference{adapters.get()};
    const QuantTrainingResult r = train_quantized(q, req.loss == "kl" ? teacher_model : nullptr, batches, config,
                                                  main_rank ? TrainingEvaluator(evaluator) : TrainingEvaluator(), sink, cancel);
    report.steps = r.steps;
    report.resumed_from = r.resumed_from;
    report.final_loss = r.final_loss;
    report.tokens = r.tokens;
    report.seconds = r.seconds;
    if (!main_rank) return report;

    sink.progress(0, 1, "save");
    const ModelSourceFiles files(base.opened);
    if (adapters) {
        nlohmann::json base_json = lora_base_source_json(source);
        if (settings.init == "loftq") {
            // LoftQ changed the base: its adapted layers' weights travel with the run.
            std::vector<std::pair<std::string, at::Tensor>> loftq;
            for (const LoraLayer& l : adapters->layers()) loftq.emplace_back(l.module + ".weight", l.layer->weight.detach());
            const std::string path = (fs::path(req.out_dir) / "loftq_base.safetensors").string();
            write_safetensors(path, loftq);
            base_json["loftq_weights"] = "../loftq_base.safetensors";
        }
        const nlohmann::json record = {{"format", "quantlab-lora-1"},
                                       {"method", req.method},
                                       {"loss", req.loss},
                                       {"init", settings.init},
                                       {"loftq_iters", settings.loftq_iterations},
                                       {"adapter_dtype", settings.dtype},
                                       {"seed", req.seed},
                                       {"steps", r.steps},
                                       {"data", req.data},
                                       {"base", base_json},
                                       {"base_fingerprint", fingerprint_json(fingerprint)}};
        report.adapter_dir = (fs::path(req.out_dir) / "adapter").string();
        write_peft_adapter(report.adapter_dir, *adapters, base.opened.path, record, /*force=*/true);
        sink.artifact("adapter", report.adapter_dir);
    } else {
        // Full fine-tuning: the trained model as an HF folder.
        report.adapter_dir = (fs::path(req.out_dir) / "model").string();
        ExportFolder out(report.adapter_dir, /*force=*/true);
        out.copy_from(files.folder(), [](const std::string& name) {
            return !is_hf_weights_file(name) && name.rfind("quantlab_", 0) != 0;
        });
        write_safetensors(out.file("model.safetensors"), full_precision_state(q), {{"format", "pt"}});
        out.commit();
        sink.artifact("model", report.adapter_dir);
    }
    sink.metric(r.steps, "model/trainable_parameters", static_cast<double>(report.trainable_parameters));
    sink.metric(r.steps, "time/seconds", r.seconds);
    write_file_atomically((fs::path(req.out_dir) / "train_report.json").string(), lora_train_report_json(report));
    sink.progress(1, 1, "save");
    return report;
}

std::vector<std::string> lora_export_kinds() {
    return {"peft", "merged-fp", "merged-hf-modelopt", "merged-compressed-tensors", "merged-gguf", "merged-fakequant"};
}

ExportReport run_lora_export(const LoraExportRequest& req, JobSink& sink, const CancellationToken& cancel) {
    const auto t0 = LoraClock::now();
    const std::vector<std::string> kinds = lora_export_kinds();
    if (std::find(kinds.begin(), kinds.end(), req.as) == kinds.end())
        throw UserError("export: a LoRA run exports as peft, merged-fp or merged-<kind> (hf-modelopt, compressed-tensors, gguf, "
                        "fakequant), not '" + req.as + "'");
    if (req.out.empty()) throw UserError("export: an output path is required (--out)");
    std::error_code ec;
    if (!req.force && fs::exists(req.out, ec)) throw UserError("export: " + req.out + " already exists (pass --force to replace it)");
    sink.progress(0, 0, "load");
    AdaptedModel o = open_adapted_model(req.run, req.device, cancel);
    ExportReport rep;
    rep.as = req.as;
    rep.out = req.out;
    const ModelSourceFiles files(o.base.opened);
    if (req.as == "peft") {
        rep.files = write_peft_adapter(req.out, *o.adapters, o.base.opened.path, o.files.record, req.force);
        if (!o.source.loftq_weights.empty()) {
            // PEFT's LoftQ workflow loads the adapter onto the base LoftQ chose: written beside it.
            ExportFolder base_out((fs::path(req.out) / "base_model").string(), /*force=*/true);
            base_out.copy_from(files.folder(), [](const std::string& name) {
                return !is_hf_weights_file(name) && name.rfind("quantlab_", 0) != 0;
            });
            write_safetensors(base_out.file("model.safetensors"), o.base.model().file_state(), {{"format", "pt"}});
            base_out.commit();
            for (const std::string& f : base_out.files()) rep.files.push_back(f);
            rep.warnings.push_back("LoftQ: the adapter belongs to the base in base_model/ (the LoftQ-chosen weights, quantized "
                                   "again where loaded), not to the original model");
        }
    } else if (req.as == "merged-fp") {
        merge_adapters(*o.base.quantized, *o.adapters);
        dequantize_unmerged(*o.base.quantized, *o.adapters);
        ExportFolder out(req.out, req.force);
        out.copy_from(files.folder(), [](const std::string& name) {
            return !is_hf_weights_file(name) && name.rfind("quantlab_", 0) != 0 && name != "hf_quant_config.json";
        });
        sink.progress(0, 1, "write");
        write_safetensors(out.file("model.safetensors"), full_precision_state(*o.base.quantized), {{"format", "pt"}});
        rep.doctor = run_export_doctor(out.partial_path(), req.out);
        if (!rep.doctor.ok()) throw UserError("export: the Export Doctor found errors in the merged folder (quantlab-cli doctor)");
        out.commit();
        rep.files = out.files();
    } else {
        // Merged, re-quantized in the base's recipe, and written by the existing exporter.
        merge_adapters(*o.base.quantized, *o.adapters);
        const std::string staging = req.out + ".merged-checkpoint";
        struct RemoveStaging {
            std::string path;
            ~RemoveStaging() {
                std::error_code e;
                fs::remove_all(path, e);
            }
        } cleanup{staging};
        save_quantized_checkpoint(*o.base.quantized, files.folder(), staging, /*force=*/true);
        ExportRequest e;
        e.model = staging;
        e.as = req.as.substr(std::string("merged-").size());
        e.out = req.out;
        e.force = req.force;
        e.gguf_type = req.gguf_type;
        e.device = req.device;
        rep = run_export(e, sink, cancel);
        rep.as = req.as;
    }
    for (const std::string& f : rep.files) {
        std::error_code e;
        if (fs::is_regular_file(f, e)) rep.bytes += static_cast<int64_t>(fs::file_size(f, e));
    }
    rep.seconds = std::chrono::duration<double>(LoraClock::now() - t0).count();
    sink.artifact(req.as, req.out);
    return rep;
}

LoraMergePreview run_lora_preview(const LoraPreviewRequest& req, JobSink& sink, const CancellationToken& cancel) {
    const auto t0 = LoraClock::now();
    if (req.data.empty()) throw UserError("lora preview: evaluation data are required (--data)");
    sink.progress(0, 0, "load");
    AdaptedModel reference = open_adapted_model(req.run, req.device, cancel);
    AdaptedModel merged = open_adapted_model(req.run, req.device, cancel, /*check_base=*/false);
    DataOptions eo;
    eo.samples = req.samples;
    eo.sequence_length = req.sequence_length;
    eo.windows.kind = parse_text_windows(req.windows);
    const Dataset data = load_dataset(req.data, eo, reference.base.opened.data);
    EvalOptions options;
    NullJobSink quiet;
    LoraMergePreview p;
    p.run = req.run;
    p.data = req.data;
    p.base_summary = reference.trained_on.summary();
    for (const auto& l : reference.base.quantized->layers()) p.base_quantizes_inputs = p.base_quantizes_inputs || l->input_enabled();
    // The suite's items, when one is asked for: each form answers them greedily after its metrics.
    std::optional<evaluation::EvalSuite> suite;
    evaluation::SuiteRunSettings suite_settings;
    if (!req.suite.empty()) {
        if (req.suite_limit < 0) throw UserError("lora preview: the suite limit must not be negative");
        suite = evaluation::load_eval_suite(resolve_suite_path(req.suite));
        for (const auto& item : suite->items)
            if (req.suite_limit == 0 || static_cast<int64_t>(suite_settings.item_ids.size()) < req.suite_limit)
                suite_settings.item_ids.push_back(item.id);
        suite_settings.max_tokens = req.suite_max_tokens;
        suite_settings.device = req.device;
        evaluation::validate_suite_run(suite_settings, *suite);
        p.suite.emplace();
        p.suite->suite = suite->source;
        p.suite->items = static_cast<int64_t>(suite_settings.item_ids.size());
    }
    const int64_t stages = suite ? 6 : 3;
    std::vector<bool> adapted_verdicts;
    // Runs the suite on `form` (its adapters hooked, or merged): items passed, verdict flips against the adapted model.
    const auto answer_suite = [&](AdaptedModel& form, const std::string& label, int64_t& passed, std::vector<std::string>* flips) {
        suite_settings.label = label;
        const evaluation::EvaluationRun run = evaluation::run_suite(form.base.opened, req.run, *suite, suite_settings, quiet, cancel);
        const std::vector<evaluation::ItemOutcome>& items = run.replicates.front().items;
        passed = 0;
        for (size_t i = 0; i < items.size(); ++i) {
            passed += items[i].passed ? 1 : 0;
            if (!flips) adapted_verdicts.push_back(items[i].passed);
            else if (items[i].passed != adapted_verdicts[i]) flips->push_back(items[i].id);
        }
    };
    int64_t stage = 0;
    sink.progress(stage, stages, "evaluate");
    p.adapted = evaluate(reference.base.model(), nullptr, data, options, quiet, cancel).overall;
    sink.progress(++stage, stages, "evaluate");
    if (suite) {
        answer_suite(reference, "base + adapter", p.suite->passed_adapted, nullptr);
        sink.progress(++stage, stages, "suite");
    }
    const std::vector<MergedLayer> rows = merge_adapters(*merged.base.quantized, *merged.adapters);
    p.merged_requantized = evaluate(merged.base.model(), &reference.base.model(), data, options, quiet, cancel).overall;
    sink.progress(++stage, stages, "evaluate");
    if (suite) {
        answer_suite(merged, "merged, re-quantized", p.suite->passed_merged_requantized, &p.suite->flips_merged_requantized);
        sink.progress(++stage, stages, "suite");
    }
    // The full-precision merge: the other quantized layers dequantized, every quantizer off.
    dequantize_unmerged(*merged.base.quantized, *merged.adapters);
    p.merged_fp = evaluate(merged.base.model(), &reference.base.model(), data, options, quiet, cancel).overall;
    sink.progress(++stage, stages, "evaluate");
    if (suite) {
        answer_suite(merged, "merged, full precision", p.suite->passed_merged_fp, &p.suite->flips_merged_fp);
        sink.progress(++stage, stages, "suite");
    }
    double changed = 0, elements = 0;
    for (const MergedLayer& r : rows) {
        p.layers.push_back({r.module, r.format, r.elements, r.codes_changed, r.update_norm, r.requant_error});
        sink.layer_metric(r.module, "merge/codes_changed", r.codes_changed);
        if (r.format != "fp32") {
            changed += r.codes_changed * static_cast<double>(r.elements);
            elements += static_cast<double>(r.elements);
        }
    }
    p.codes_changed = elements > 0 ? changed / elements : 0.0;
    p.seconds = std::chrono::duration<double>(LoraClock::now() - t0).count();
    return p;
}

std::string lora_preview_json(const LoraMergePreview& p) {
    const auto metrics = [](const EvalMetrics& m) {
        nlohmann::json j = {{"loss", m.loss}, {"tokens", m.tokens}};
        if (m.ppl) j["ppl"] = *m.ppl;
        if (m.kl) j["kl"] = *m.kl;
        if (m.agreement) j["agreement"] = *m.agreement;
        return j;
    };
    nlohmann::json suite = nullptr;
    if (p.suite)
        suite = {{"suite", p.suite->suite},
                 {"items", p.suite->items},
                 {"passed", {{"adapted", p.suite->passed_adapted},
                             {"merged_requantized", p.suite->passed_merged_requantized},
                             {"merged_fp", p.suite->passed_merged_fp}}},
                 {"flips", {{"merged_requantized", p.suite->flips_merged_requantized}, {"merged_fp", p.suite->flips_merged_fp}}}};
    nlohmann::json layers = nlohmann::json::array();
    for (const MergeLayerCost& l : p.layers)
        layers.push_back({{"module", l.module}, {"format", l.format}, {"elements", l.elements},
                          {"codes_changed", l.codes_changed}, {"update_norm", l.update_norm},
                          {"requant_error", l.requant_error}});
    return nlohmann::json({{"run", p.run},
                           {"base", p.base_summary},
                           {"data", p.data},
                           {"adapted", metrics(p.adapted)},
                           {"merged_requantized", metrics(p.merged_requantized)},
                           {"merged_fp", metrics(p.merged_fp)},
                           {"codes_changed", p.codes_changed},
                           {"base_quantizes_inputs", p.base_quantizes_inputs},
                           {"seconds", p.seconds},
                           {"suite", suite},
                           {"layers", layers}})
               .dump(2) +
           "\n";
}

NdArray lora_logits(const std::string& run, const NdArray& ids, bool adapter, const std::string& device) {
    if (ids.shape.size() != 2) throw UserError("lora logits: token ids must be [batch, tokens]");
    if (ids.dtype != DType::Int64 && ids.dtype != DType::Int32) throw UserError("lora logits: token ids must be int64 or int32");
    CancellationToken cancel;
    AdaptedModel o = open_adapted_model(run, device, cancel);
    o.adapters->set_enabled(adapter);
    std::vector<int64_t> values(static_cast<size_t>(ids.numel()));
    for (size_t i = 0; i < values.size(); ++i) values[i] = ids.dtype == DType::Int64 ? ids.as<int64_t>()[i] : ids.as<int32_t>()[i];
    c10::NoGradGuard no_grad;
    const at::Tensor input =
        at::tensor(values, at::kLong).reshape({ids.shape[0], ids.shape[1]}).to(o.base.model().named_parameters().front().second.device());
    const at::Tensor logits = o.base.model().forward(input).to(at::kCPU, at::kFloat).contiguous();
    NdArray out = NdArray::zeros(DType::Float32, {logits.sizes().begin(), logits.sizes().end()});
    std::memcpy(out.bytes.data(), logits.data_ptr<float>(), out.bytes.size());
    return out;
}

DoctorReport run_adapter_doctor(const AdapterDoctorRequest& req, const CancellationToken& cancel) {
    DoctorReport report;
    report.path = req.adapter;
    report.layout = "peft";
    report.consumer = "PEFT (PeftModel.from_pretrained on the given base)";
    DoctorCheck check{"adapter-base", "the adapter's base is the base it was trained on", false, ""};
    AdaptedModel trained = open_adapted_model(req.adapter, req.device, cancel, /*check_base=*/false);
    LoraBaseSource given_source = trained.source;
    given_source.model = req.base.empty() ? trained.source.model : req.base;
    if (!req.recipe.empty()) given_source.recipe = lora_recipe_json(req.recipe);
    if (is_quantized_checkpoint(resolve_model_path(given_source.model))) given_source.recipe.clear();
    given_source.loftq_weights = trained.source.loftq_weights;
    LoraBase given = open_lora_base(given_source, req.device, cancel);
    const BaseFingerprint now = fingerprint_base(*given.quantized);
    const std::vector<FingerprintDifference> diff = compare_fingerprints(trained.trained_on, now);
    report.layers = static_cast<int64_t>(now.layers.size());
    check.ran = true;
    check.note = "trained on: " + trained.trained_on.summary() + "; given: " + now.summary();
    report.checks.push_back(check);
    if (diff.empty()) return report;
    // Measured drift: the adapter on the base it was trained on (made again from its record) and
    // on the given base, compared on the data.
    LoraAdapters on_given(given.model(), trained.files.settings);
    on_given.load(trained.files.tensors, trained.folder);
    DataOptions o;
    o.samples = 8;
    o.sequence_length = 64;
    o.seed = 1;
    const std::string data = req.data.empty() ? "synthetic:random-tokens" : req.data;
    if (!req.data.empty()) o.samples = 0;
    const Dataset d = load_dataset(data, o, given.opened.data);
    NullJobSink quiet;
    const EvalMetrics m = evaluate(given.model(), &trained.base.model(), d, EvalOptions{}, quiet, cancel).overall;
    std::ostringstream problem;
    problem << diff.size() << " of " << now.layers.size() << " layers differ from the base the adapter was trained on (first: "
            << diff.front().module << ": " << diff.front().what << "); measured drift on " << data << ": KL "
            << (m.kl ? *m.kl : 0.0) << " nats per token against the adapter on its own base, top-1 agreement "
            << 100.0 * (m.agreement ? *m.agreement : 0.0) << " %";
    DoctorFinding f;
    f.severity = DoctorSeverity::Error;
    f.check = "adapter-base";
    f.where = diff.front().module;
    f.problem = problem.str();
    f.consumer = "PEFT loads it without complaint and the adapter corrects a quantization error the base no longer has";
    f.fix = "apply the adapter to the base it was trained on (" + trained.trained_on.summary() +
            "), or retrain / re-fit it on this base";
    report.findings.push_back(f);
    return report;
}

}  // namespace ql
