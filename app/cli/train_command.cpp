// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli train qat|qad MODEL --recipe R --data D --out DIR: quantization-aware training or
// distillation from the full-precision teacher (docs/CLI.md "train", docs/TRAINING.md).
#include <cmath>
#include <cstdio>
#include <optional>
#include <tuple>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "app/cli/cli_job_sink.h"
#include "app/cli/device_option.h"
#include "app/cli/local_ranks.h"
#include "app/cli/lora_command.h"
#include "app/cli/recorded_run_info.h"
#include "projects/project_run_recorder.h"
#include "engine/core/errors.h"
#include "engine/api/ptq_api.h"
#include "engine/api/train_api.h"

namespace ql::cli {
namespace {

const char* kUsage =
    "quantlab-cli train qat|qad MODEL --data D --out DIR [--recipe R] [--steps N] [--lr X] [--temperature T]\n"
    "    [--device cpu|cuda|cuda:N] [--precision fp32|bf16]\n"
    "    [--batch-size B] [--grad-accum K] [--schedule constant|cosine|linear|wsd] [--warmup N] [--final-lr F]\n"
    "    [--decay-steps N] [--fp-steps N]\n"
    "    [--weight-decay W] [--clip-norm C] [--ce-weight A] [--distill-positions all|scored] [--clip-gradient] [--lsq]\n"
    "    [--train-only P1,P2] [--eval-data E] [--eval-every N]\n"
    "    [--eval-samples N] [--checkpoint-every N] [--teacher T] [--calib C] [--seed S] [--seq-len L]\n"
    "    [--encoder-loss cosine|mse] [--hidden-weight W] [--eval-pairs P]\n"
    "    [--record-every N] [--keep-best] [--resume | --force] [--project P.qlab] [--json]\n"
    "    [--kv-cache K] [--rotate hadamard|rht|none] [--nproc N] [--dist-timeout S] [--threads T]\n\n"
    "MODEL: a full-precision model (HF folder or 'demo'; then --recipe R is required and PTQ runs first) or a\n"
    "quantized checkpoint written by 'quantlab-cli ptq'. qat trains on the task loss (cross-entropy); qad\n"
    "distils from the full-precision teacher (default: MODEL itself) with KL(teacher || student) at temperature\n"
    "T (default 1), mixed with --ce-weight A of cross-entropy. DIR receives model/ (the trained quantized\n"
    "checkpoint), checkpoint/ (resume state, also written every --checkpoint-every steps and when stopped) and\n"
    "train_report.json. --fp-steps N (qat, cooldown fusion): N full-precision steps first, then QAT where the LR\n"
    "decay starts, decaying linearly during QAT (the compute-optimal QAT paper's fused schedule). Ctrl-C pauses: the run stops after saving a checkpoint (exit 130); --resume continues it\n"
    "bit-exactly. --kv-cache K / --rotate R overlay a KV-cache format (as ptq) / a rotation on the recipe (FP MODEL\n"
    "only). Defaults: 300 steps, batch 64, lr 1e-4 cosine to 10 %, clip norm 1, no weight decay.\n"
    "--device D: where the model trains (docs/CLI.md \"Devices\"); --precision bf16 (with --device cuda): the forward\n"
    "passes autocast to bfloat16, weights and optimizer state stay float32.\n"
    "--record-every N: the flight recorder (docs/DIAGNOSIS.md): per quantized layer every N steps the bin flips,\n"
    "clip fraction, amax / scale drift and (qad) the teacher-student distance per block, as flight/* metrics;\n"
    "warnings when the run stagnates or diverges. --keep-best (with --eval-every): the saved model has the\n"
    "parameters of the best held-out evaluation (exact match, else accuracy, else loss). --train-only P1,P2: only the\n"
    "parameters whose name or module matches a glob pattern train (e.g. '*mlp*', 'model.layers.2?.*'), the rest stay\n"
    "at their PTQ values.\n"
    "Sentence encoders (D, E: one sentence per line): qat trains the in-batch contrastive loss of each sentence\n"
    "against a copy with 15 % of its tokens deleted (sentence-transformers' MultipleNegativesRankingLoss); for qad the\n"
    "loss is --encoder-loss cosine (1 - cos, default) or mse to the teacher's sentence embeddings, plus\n"
    "--hidden-weight W times the MSE of every layer's hidden states; --eval-pairs P adds the Spearman correlation on\n"
    "pairs file P to every evaluation.\n"
    "Several processes (data parallel over Gloo): --nproc N runs N local ranks (this process is rank 0), B\n"
    "(--batch-size) stays the global batch, split over the ranks (a multiple of N); a run whose environment has\n"
    "WORLD_SIZE > 1 (torchrun: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) joins that group. Rank 0 alone writes\n"
    "DIR, the project and the output. --dist-timeout S (default 120): a collective waits at most S seconds for\n"
    "the other ranks. --threads T: intra-op threads per process (default: the cores, divided by N with --nproc).";

void print_metrics(const char* label, const EvalMetrics& m) {
    std::printf("%-10s", label);
    if (m.tokens > 0) std::printf(" loss %.5f", m.loss);
    if (m.cosine_mean) std::printf(" cosine to teacher %.6f (p5 %.6f, min %.6f)", *m.cosine_mean, *m.cosine_p5, *m.cosine_min);
    if (m.spearman && std::isfinite(*m.spearman)) std::printf("  Spearman %.4f", *m.spearman);
    if (m.exact_match) std::printf("  exact match %.2f %%", 100 * *m.exact_match);
    if (m.accuracy) std::printf("  accuracy %.2f %%", 100 * *m.accuracy);
    if (m.kl) std::printf("  KL %.3e", *m.kl);
    if (m.agreement) std::printf("  agreement %.2f %%", 100 * *m.agreement);
    std::printf("\n");
}

int run(const std::vector<std::string>& args) {
    // Adapters (LoRA, QLoRA) and full fine-tuning have their own options (lora_command.cpp).
    if (!args.empty() && (args[0] == "lora" || args[0] == "qlora" || args[0] == "full")) return run_lora_train(args);
    ArgParser p("train",
                {"--device", "--recipe", "--data", "--out", "--steps", "--lr", "--temperature", "--batch-size", "--grad-accum",
                 "--schedule", "--warmup", "--final-lr", "--weight-decay", "--clip-norm", "--ce-weight", "--eval-data",
                 "--eval-every", "--eval-samples", "--checkpoint-every", "--teacher", "--calib", "--seed", "--seq-len",
                 "--project", "--calib-samples", "--distill-positions", "--decay-steps", "--fp-steps", "--record-every",
                 "--encoder-loss", "--hidden-weight", "--eval-pairs", "--kv-cache", "--rotate", "--nproc", "--dist-timeout",
                 "--threads", "--precision", "--train-only"},
                {"--resume", "--force", "--json", "--clip-gradient", "--lsq", "--keep-best"});
    p.parse(args);
    if (p.positional().size() != 2)
        throw UserError("train: expected 'qat' or 'qad' and MODEL (quantlab-cli train qad demo --recipe NVFP4_DEFAULT ...)");
    TrainRequest req;
    req.mode = p.positional()[0];
    if (req.mode != "qat" && req.mode != "qad") throw UserError("train: the first argument is qat or qad, got '" + req.mode + "'");
    req.model = p.positional()[1];
    req.device = device_option(p);
    req.precision = p.value("--precision").value_or(req.precision);
    req.recipe = p.value("--recipe").value_or("");
    req.kv_cache = p.value("--kv-cache").value_or("");
    req.rotate = p.value("--rotate").value_or("");
    req.data = p.required("--data");
    req.out_dir = p.required("--out");
    req.eval_data = p.value("--eval-data").value_or("");
    req.eval_pairs = p.value("--eval-pairs").value_or("");
    req.teacher = p.value("--teacher").value_or("");
    req.calibration = p.value("--calib").value_or("");
    req.resume = p.has("--resume");
    req.force = p.has("--force");
    req.clip_gradient = p.has("--clip-gradient");
    req.learned_scales = p.has("--lsq");
    req.steps = p.integer("--steps", req.steps);
    req.batch_size = p.integer("--batch-size", req.batch_size);
    req.grad_accumulation = p.integer("--grad-accum", req.grad_accumulation);
    req.eval_every = p.integer("--eval-every", 0);
    req.eval_samples = p.integer("--eval-samples", 0);
    req.checkpoint_every = p.integer("--checkpoint-every", 0);
    req.calibration_samples = p.integer("--calib-samples", 0);
    req.sequence_length = p.integer("--seq-len", 0);
    req.warmup_steps = p.integer("--warmup", 0);
    req.decay_steps = p.integer("--decay-steps", 0);
    req.fp_steps = p.integer("--fp-steps", 0);
    req.record_every = p.integer("--record-every", 0);
    req.keep_best = p.has("--keep-best");
    if (p.has("--train-only")) {
        req.train_only = split_list(*p.value("--train-only"));
        if (req.train_only.empty()) throw UserError("train: --train-only needs one or more patterns (e.g. '*mlp*')");
    }
    for (const auto& [name, v] : {std::pair<const char*, int64_t>{"--eval-every", req.eval_every},
                                  {"--eval-samples", req.eval_samples}, {"--checkpoint-every", req.checkpoint_every},
                                  {"--calib-samples", req.calibration_samples}, {"--seq-len", req.sequence_length},
                                  {"--warmup", req.warmup_steps}, {"--decay-steps", req.decay_steps},
                                  {"--fp-steps", req.fp_steps}, {"--record-every", req.record_every}})
        if (v < 0) throw UserError(std::string("train: ") + name + " must not be negative");
    req.lr = p.number("--lr", req.lr);
    req.schedule = p.value("--schedule").value_or(req.schedule);
    req.final_lr_fraction = p.number("--final-lr", req.final_lr_fraction);
    req.weight_decay = p.number("--weight-decay", req.weight_decay);
    req.clip_norm = p.number("--clip-norm", req.clip_norm);
    req.temperature = p.number("--temperature", req.temperature);
    req.ce_weight = p.number("--ce-weight", req.ce_weight);
    const std::string positions = p.value("--distill-positions").value_or("all");
    if (positions != "all" && positions != "scored")
        throw UserError("train: --distill-positions is all or scored, got '" + positions + "'");
    req.distill_all_positions = positions == "all";
    req.encoder_loss = p.value("--encoder-loss").value_or(req.encoder_loss);
    if (req.encoder_loss != "cosine" && req.encoder_loss != "mse")
        throw UserError("train: --encoder-loss is cosine or mse, got '" + req.encoder_loss + "'");
    req.hidden_weight = p.number("--hidden-weight", 0.0);
    if (!(req.hidden_weight >= 0) || !std::isfinite(req.hidden_weight))
        throw UserError("train: --hidden-weight must be a number >= 0");
    req.seed = p.seed();
    req.threads = p.integer("--threads", 0);
    if (p.has("--threads") && (req.threads < 1 || req.threads > 1024)) throw UserError("train: --threads must be in 1..1024");

    // Several processes: --nproc N launches them here; a launcher's environment joins its group.
    std::optional<LocalRanks> local_ranks;
    start_training_ranks(p, args, req.batch_size, req.device, req.distributed, req.threads, local_ranks);
    const bool main_rank = req.distributed.is_main();

    CancellationToken cancel;
    CancelOnSignal on_signal(cancel);
    CliJobSink cli_sink;
    projects::ProjectRunInfo info = recorded_run_info(
        p, req.mode, req.mode + " " + path_label(req.model) + (req.recipe.empty() ? "" : " " + req.recipe) + " on " + path_label(req.data), req.model,
        req.recipe, req.kv_cache, req.rotate);
    info.config_json = nlohmann::json({{"mode", req.mode}, {"model", req.model}, {"recipe", req.recipe},
                                       {"data", req.data}, {"steps", req.steps}, {"lr", req.lr},
                                       {"temperature", req.temperature}, {"out", req.out_dir},
                                       {"kv_cache", req.kv_cache}, {"rotate", req.rotate}, {"device", req.device},
                                       {"precision", req.precision}})
                           .dump();
    TrainReport r;
    if (!main_rank) {
        // Ranks 1..N-1 train and report nothing: rank 0 writes the project, DIR and the output;
        // their errors (main prints them) name the rank.
        NullJobSink quiet;
        r = run_training(req, quiet, cancel);
        return 0;
    }
    try {
        projects::run_recorded(p.value("--project"), info, cli_sink, [&](JobSink& sink) { r = run_training(req, sink, cancel); },
                     "paused; resume with --resume");
    } catch (const JobCancelled&) {
        cli_sink.finish_line();
        std::fprintf(stderr, "train: stopped; the checkpoint in %s/checkpoint resumes it (--resume)\n", req.out_dir.c_str());
        if (local_ranks) local_ranks->finish(10);
        throw;
    } catch (...) {
        cli_sink.finish_line();
        // The group is gone with run_training's stack, so the other ranks fail at their next
        // collective; those that never joined (rank 0 failed a check first) are stopped.
        if (local_ranks) local_ranks->finish(10);
        throw;
    }
    cli_sink.finish_line();
    if (local_ranks && !local_ranks->finish(60)) throw UserError("train: a rank failed (above); rank 0 finished the run");
    if (p.has("--json")) {
        std::printf("%s", train_report_json(r).c_str());
        return 0;
    }
    std::printf("%s %s, %lld steps%s, %.1f s\n", r.mode.c_str(), r.model_path.c_str(), static_cast<long long>(r.steps),
                r.resumed_from ? (" (resumed at " + std::to_string(r.resumed_from) + ")").c_str() : "", r.seconds);
    print_metrics("teacher", r.teacher.overall);
    print_metrics("PTQ", r.before.overall);
    print_metrics(r.mode == "qad" ? "QAD" : "QAT", r.after.overall);
    std::printf("weight codes changed  %.2f %%\nwritten    %s\n", 100 * r.codes_changed, r.out_model.c_str());
    return 0;
}

}  // namespace

Command train_command() {
    return Command{"train", std::string(kUsage) + "\n\n" + kLoraTrainUsage, "QAT or QAD: train the quantized model; LoRA / QLoRA: adapters on a frozen quantized base",
                   run};
}

}  // namespace ql::cli
