// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/train_api.h"

#include <cmath>
#include <filesystem>

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/api/eval_json.h"
#include "engine/loading/model_source.h"
#include "engine/models/model_device.h"
#include "engine/data/sentence_data.h"
#include "engine/distributed/data_parallel.h"
#include "engine/eval/encoder_evaluator.h"
#include "engine/io/atomic_file.h"
#include "engine/ptq/ptq_pipeline.h"
#include "engine/quant/quantized_checkpoint.h"
#include "engine/quant/recipe.h"
#include "engine/train/qat_lr_schedule.h"
#include "engine/train/quant_trainer.h"
#include "engine/train/trained_parameters.h"

namespace ql {
namespace fs = std::filesystem;
namespace {

// The LR at every step: a cooldown-fused run (fp_steps > 0), warmup-stable-decay, or warm-up
// then constant / cosine / linear decay.
std::function<double(int64_t)> lr_schedule_for(const TrainRequest& req) {
    if (req.fp_steps > 0) {
        QatLrScheduleConfig c;
        c.layout = QatScheduleLayout::Fused;
        c.total_steps = req.steps;
        c.qat_fraction = static_cast<double>(req.steps - req.fp_steps) / static_cast<double>(req.steps);
        c.peak = req.lr;
        c.warmup_steps = req.warmup_steps;
        c.final_fraction = req.final_lr_fraction;
        const QatLrSchedule s(c);
        if (s.qat_start_step() != req.fp_steps) throw std::logic_error("fused schedule: QAT start differs from --fp-steps");
        return [s](int64_t step) { return s.at(step); };
    }
    LrScheduleSpec spec;
    spec.kind = parse_lr_schedule_kind(req.schedule);
    spec.peak = req.lr;
    spec.warmup_steps = req.warmup_steps;
    spec.total_steps = req.steps;
    spec.final_fraction = req.final_lr_fraction;
    spec.decay_steps = req.decay_steps > 0 ? req.decay_steps : std::max<int64_t>(1, (req.steps + 2) / 5);
    spec.validate();
    return [spec](int64_t step) { return spec.at(step); };
}

}  // namespace

std::string train_report_json(const TrainReport& r) {
    const nlohmann::json j = {{"mode", r.mode},
                              {"model", r.model_path},
                              {"out_model", r.out_model},
                              {"steps", r.steps},
                              {"resumed_from", r.resumed_from},
                              {"seconds", r.seconds},
                              {"final_loss", r.final_loss},
                              {"codes_changed", r.codes_changed},
                              {"tokens", r.tokens},
                              {"parameters", r.parameters},
                              {"best_step", r.best_step >= 0 ? nlohmann::json(r.best_step) : nlohmann::json(nullptr)},
                              {"teacher", eval_report_json(r.teacher)},
                              {"before", eval_report_json(r.before)},
                              {"after", eval_report_json(r.after)}};
    return j.dump(2) + "\n";
}

TrainReport run_training(const TrainRequest& req, JobSink& sink, const CancellationToken& cancel) {
    // Everything is checked before any work.
    if (req.mode != "qat" && req.mode != "qad") throw UserError("train: the mode is qat or qad, got '" + req.mode + "'");
    if (req.data.empty()) throw UserError("train: training data is required (--data)");
    if (req.out_dir.empty()) throw UserError("train: an output folder is required (--out)");
    if (req.steps <= 0 || req.batch_size <= 0 || req.grad_accumulation <= 0)
        throw UserError("train: --steps, --batch-size and --grad-accum must be positive");
    if (!(req.lr > 0) || !std::isfinite(req.lr)) throw UserError("train: --lr must be a positive number");
    if (!(req.temperature > 0)) throw UserError("train: --temperature must be positive");
    if (req.ce_weight < 0 || req.ce_weight > 1) throw UserError("train: --ce-weight must be in [0, 1]");
    if (req.fp_steps < 0 || req.fp_steps >= req.steps) throw UserError("train: --fp-steps must be below --steps");
    if (req.fp_steps > 0 && req.mode != "qat") throw UserError("train: --fp-steps (cooldown fusion) applies to qat only");
    if (req.record_every < 0) throw UserError("train: --record-every must not be negative");
    if (const std::string s = normalise_split_name(req.eval_split); s != "validation" && s != "all")
        throw UserError("train: the held-out data is scored on its validation split or all of it, not '" + req.eval_split + "'");
    if (req.keep_best && req.eval_every <= 0)
        throw UserError("train: --keep-best needs --eval-every N (the held-out evaluations it chooses among)");
    const std::function<double(int64_t)> lr_at = lr_schedule_for(req);
    const DistributedOptions& dist = req.distributed;
    if (req.precision != "fp32" && req.precision != "bf16")
        throw UserError("train: --precision is fp32 or bf16, got '" + req.precision + "'");
    if (req.precision == "bf16" && parse_compute_device(req.device).kind != ComputeDevice::Kind::Cuda)
        throw UserError("train: --precision bf16 needs --device cuda (bfloat16 autocast is a CUDA feature here)");
    const at::Device device = torch_device(req.device);
    // The process group is Gloo's, which reduces CPU tensors (engine/distributed/process_group.cpp).
    if (dist.enabled() && !device.is_cpu())
        throw UserError("train: --device " + req.device + " with several processes is not supported (the process group "
                        "reduces CPU tensors); use --device cpu");
    if (dist.enabled() && req.batch_size % dist.world_size != 0)
        throw UserError("train: --batch-size " + std::to_string(req.batch_size) + " (the global batch) does not split over " +
                        std::to_string(dist.world_size) + " ranks; use a multiple of " + std::to_string(dist.world_size));
    // Rank 0 owns DIR; the other ranks neither read nor write it (rank 0's state reaches them by
    // broadcast), so they skip its checks, which would race with rank 0 creating it.
    const bool main_rank = dist.is_main();
    std::error_code ec;
    const bool exists = main_rank && fs::exists(req.out_dir, ec);
    if (req.resume && req.force) throw UserError("train: --resume and --force exclude each other");
    if (main_rank && exists && !req.resume && !req.force)
        throw UserError("train: " + req.out_dir + " already exists (--resume to continue its run, --force to start over)");
    if (main_rank && req.resume && !exists) throw UserError("train: nothing to resume in " + req.out_dir);
    // The group forms after the checks and before any work; a rank that failed them never joins,
    // and the others give up after the timeout with an error naming the store's address.
    if (req.threads < 0) throw UserError("train: the thread count must not be negative");
    if (req.threads > 0) at::set_num_threads(static_cast<int>(req.threads));
    std::unique_ptr<ProcessGroup> group;
    std::unique_ptr<DataParallel> data_parallel;
    if (dist.enabled()) {
        sink.progress(0, 0, "connect");
        group = std::make_unique<ProcessGroup>(dist);
        data_parallel = std::make_unique<DataParallel>(*group);
    }

    sink.progress(0, 0, "load");
    OpenedModel student = open_model(req.model, WeightStorage::Float32Copy);  // trained in place
    move_opened_model(student, device);  // before the recipe's quantizers and the optimizer
    std::unique_ptr<QuantizedModel> own_quantization;
    QuantizedModel* q = student.quantization.get();
    if (q && !req.recipe.empty())
        throw UserError("train: " + student.path + " is already quantized with its own recipe; drop --recipe");
    if (q && req.fp_steps > 0) throw UserError("train: --fp-steps needs a full-precision MODEL and a --recipe");
    if (q && (!req.kv_cache.empty() || !req.rotate.empty()))
        throw UserError("train: " + student.path + " is already quantized; --kv-cache and --rotate apply to a full-precision MODEL");
    std::optional<Recipe> recipe;
    if (!q) {
        if (req.recipe.empty()) throw UserError("train: --recipe is required for a full-precision model");
        recipe = load_recipe(req.recipe);
        overlay_recipe(*recipe, req.kv_cache, req.rotate);
        if (req.fp_steps > 0 && recipe->algorithm.method != "max")
            throw UserError("train: --fp-steps recalibrates at the switch and needs a recipe with the max algorithm, not " +
                            recipe->algorithm.method);
        own_quantization = std::make_unique<QuantizedModel>(*student.model, *recipe);
        q = own_quantization.get();
    }
    // --train-only is checked before anything is written.
    const std::vector<std::pair<std::string, at::Tensor>> trained_only =
        req.train_only.empty() ? std::vector<std::pair<std::string, at::Tensor>>{}
                               : select_trained_parameters(*student.model, req.train_only, req.model);
    // The teacher: the given model, else the student's own full-precision weights.
    OpenedModel teacher = open_model(req.teacher.empty() ? req.model : req.teacher);
    move_opened_model(teacher, device);
    if (teacher.quantization) teacher.quantization->set_enabled(false);
    if (teacher.model->config().vocab_size != student.model->config().vocab_size)
        throw UserError("train: the teacher's vocabulary (" + std::to_string(teacher.model->config().vocab_size) +
                        ") differs from the student's (" + std::to_string(student.model->config().vocab_size) + ")");
    const TrainingBatches batches(req.data, student.data, req.batch_size, req.seed, req.sequence_length);
    DataOptions eo;
    eo.split = normalise_split_name(req.eval_split) == "all" ? DataSplit::All : DataSplit::Validation;
    eo.samples = req.eval_samples;
    eo.seed = req.seed;
    eo.sequence_length = req.sequence_length;
    const Dataset eval_data = load_dataset(req.eval_data.empty() ? req.data : req.eval_data, eo, student.data);
    std::optional<Dataset> eval_pairs;
    if (!req.eval_pairs.empty()) {
        if (!student.model->is_encoder()) throw UserError("train: --eval-pairs applies to sentence encoders");
        if (!is_pairs_file(req.eval_pairs))
            throw UserError(req.eval_pairs + ": not a pairs file (lines sentence1<TAB>sentence2<TAB>score)");
        eval_pairs = load_dataset(req.eval_pairs, DataOptions{}, student.data);
    }
    std::optional<Dataset> calibration;
    if (recipe) {
        DataOptions co;
        co.split = DataSplit::Train;
        co.samples = req.calibration_samples > 0 ? req.calibration_samples : recipe->calibration.samples;
        co.seed = req.seed;
        co.sequence_length = req.sequence_length;
        calibration = load_calibration_dataset(req.calibration.empty() ? req.data : req.calibration, co, student.data);
    }
    if (main_rank) {
        if (req.force && exists) fs::remove_all(req.out_dir, ec);
        fs::create_directories(req.out_dir, ec);
        if (ec) throw UserError("train: cannot create " + req.out_dir + ": " + ec.message());
    }

    // PTQ first: the run starts from the recipe's calibrated model (QAT.md). With several ranks
    // every rank calibrates on the same (whole) calibration set, so their quantizers agree
    // without a reduction.
    if (calibration) {
        PtqOptions po;
        po.batch_size = recipe->calibration.batch_size;
        NullJobSink quiet;
        run_ptq_pipeline(*q, *calibration, po, quiet, cancel);
    }
    TrainReport report;
    report.mode = req.mode;
    report.model_path = student.path;
    EvalOptions eval_options;
    eval_options.mask_token_id = student.mask_token_id;
    eval_options.seed = req.seed;
    NullJobSink quiet;
    EvalOptions pair_options = eval_options;
    pair_options.encoder_needs_reference = false;
    // The model on the eval data, plus the Spearman correlations on the pairs file if any.
    auto evaluate_all = [&](Model& m, Model* t, const CancellationToken& c) {
        EvalReport r = evaluate(m, t, eval_data, t ? eval_options : pair_options, quiet, c);
        if (eval_pairs) add_pair_metrics(r, evaluate(m, t, *eval_pairs, pair_options, quiet, c));
        return r;
    };
    // The teacher alone: an encoder has no reference for itself (only its pairs Spearman, if any).
    if (main_rank) {
        report.teacher = evaluate_all(*teacher.model, nullptr, cancel);
        report.before = evaluate_all(*student.model, teacher.model.get(), cancel);
        report_eval_metrics(sink, 0, report.before);
    }

    QuantTrainingConfig config;
    config.mode = req.mode;
    config.steps = req.steps;
    config.grad_accumulation = req.grad_accumulation;
    config.lr_at = lr_at;
    config.fp_steps = req.fp_steps;
    if (req.fp_steps > 0)
        config.before_quantized_steps = [&] {
            PtqOptions po;
            po.batch_size = recipe->calibration.batch_size;
            NullJobSink silent;
            run_ptq_pipeline(*q, *calibration, po, silent, cancel);
        };
    config.optimizer.weight_decay = req.weight_decay;
    config.clip_norm = req.clip_norm;
    config.temperature = req.temperature;
    config.ce_weight = req.ce_weight;
    config.distill_all_positions = req.distill_all_positions;
    config.encoder_loss = req.encoder_loss;
    config.hidden_weight = req.hidden_weight;
    config.view_seed = req.seed;
    config.learned_scales = req.learned_scales;
    config.bf16_autocast = req.precision == "bf16";
    config.clip_gradient = req.clip_gradient;
    config.eval_every = req.eval_every;
    config.checkpoint_every = req.checkpoint_every;
    config.checkpoint_dir = main_rank ? req.out_dir : "";
    config.record_every = main_rank ? req.record_every : 0;
    config.keep_best = main_rank && req.keep_best;
    config.data_parallel = data_parallel.get();
    if (!req.train_only.empty()) {
        // Only these train (and are checkpointed, broadcast and averaged); the rest keep no gradient.
        config.trainable = trained_only;
        student.model->set_requires_grad(false);
    }
    config.held_out_score = [&report]() -> std::optional<double> {
        const EvalMetrics& m = report.after.overall;
        if (m.exact_match) return *m.exact_match;
        if (m.accuracy) return *m.accuracy;
        return -m.loss;
    };
    nlohmann::json run_identity = nlohmann::json({{"mode", req.mode}, {"model", req.model}, {"recipe", req.recipe},
                                         {"data", req.data}, {"teacher", req.teacher}, {"steps", req.steps},
                                         {"batch_size", req.batch_size}, {"grad_accumulation", req.grad_accumulation},
                                         {"lr", req.lr}, {"schedule", req.schedule}, {"warmup", req.warmup_steps},
                                         {"decay_steps", req.decay_steps}, {"fp_steps", req.fp_steps},
                                         {"final_lr_fraction", req.final_lr_fraction}, {"weight_decay", req.weight_decay},
                                         {"clip_norm", req.clip_norm}, {"temperature", req.temperature},
                                         {"ce_weight", req.ce_weight}, {"clip_gradient", req.clip_gradient},
                                         {"distill_all_positions", req.distill_all_positions}, {"lsq", req.learned_scales},
                                         {"seed", req.seed}, {"seq_len", req.sequence_length}});
    if (student.model->is_encoder()) {  // only there, so that existing decoder checkpoints still resume
        run_identity["encoder_loss"] = req.encoder_loss;
        run_identity["hidden_weight"] = req.hidden_weight;
    }
    // The overlays join the identity only when given, so runs without them resume as before.
    if (!req.kv_cache.empty()) run_identity["kv_cache"] = req.kv_cache;
    if (!req.rotate.empty()) run_identity["rotate"] = req.rotate;
    if (req.precision != "fp32") run_identity["precision"] = req.precision;  // likewise; the device is not part of it
    if (!req.train_only.empty()) run_identity["train_only"] = req.train_only;  // likewise
    config.config_json = run_identity.dump();
    Model* teacher_model = teacher.model.get();
    auto evaluator = [&](int64_t step, JobSink& s, const CancellationToken& c) {
        report.after = evaluate_all(*student.model, teacher_model, c);
        report_eval_metrics(s, step, report.after);
    };
    const QuantTrainingResult r = train_quantized(*q, req.mode == "qad" ? teacher_model : nullptr, batches, config,
                                                  main_rank ? TrainingEvaluator(evaluator) : TrainingEvaluator(), sink,
                                                  cancel);
    report.steps = r.steps;
    if (!main_rank) {
        report.resumed_from = r.resumed_from;
        report.final_loss = r.final_loss;
        report.seconds = r.seconds;
        return report;
    }
    report.resumed_from = r.resumed_from;
    report.final_loss = r.final_loss;
    report.codes_changed = r.codes_changed;
    report.tokens = r.tokens;
    for (const auto& [name, p] : req.train_only.empty() ? student.model->named_parameters() : config.trainable)
        report.parameters += p.numel();
    if (req.keep_best) {
        report.best_step = r.best_step;
        // The kept parameters are evaluated again: `after` describes the saved model.
        if (r.best_step >= 0 && r.best_step != r.steps) {
            report.after = evaluate(*student.model, teacher_model, eval_data, eval_options, quiet, cancel);
            report_eval_metrics(sink, r.steps, report.after);
        }
    }

    sink.progress(0, 1, "save");
    report.out_model = (fs::path(req.out_dir) / "model").string();
    const ModelSourceFiles source(student);  // a GGUF file's config.json and tokenizer
    save_quantized_checkpoint(*q, source.folder(), report.out_model, /*force=*/true);
    sink.artifact("model", report.out_model);
    report.seconds = r.seconds;
    // Run-level numbers for project files (the compare view).
    const ModelSize size = q->size();
    sink.metric(r.steps, "model/bits_per_parameter", size.bits_per_parameter());
    sink.metric(r.steps, "model/bytes", size.bytes());
    sink.metric(r.steps, "time/seconds", r.seconds);
    write_file_atomically((fs::path(req.out_dir) / "train_report.json").string(), train_report_json(report));
    sink.progress(1, 1, "save");
    return report;
}

}  // namespace ql
