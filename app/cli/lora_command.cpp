// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli train lora|qlora|full MODEL --data D --out DIR [...]: adapters on a frozen
// (quantized) base; quantlab-cli lora preview RUN --data D: the merge-cost preview
// (docs/CLI.md "train lora|qlora", "lora preview"; docs/TRAINING.md "LoRA and QLoRA").
#include "app/cli/lora_command.h"

#include <cmath>
#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "app/cli/cli_job_sink.h"
#include "app/cli/device_option.h"
#include "app/cli/local_ranks.h"
#include "app/cli/recorded_run_info.h"
#include "engine/api/lora_api.h"
#include "engine/core/errors.h"
#include "engine/io/npy_file.h"
#include "projects/project_run_recorder.h"

namespace ql::cli {

const char* const kLoraTrainUsage =
    "quantlab-cli train lora|qlora|full MODEL --data D --out DIR [--recipe R] [--rank N] [--alpha A] [--dropout P]\n"
    "    [--targets T1,T2] [--init default|loftq] [--loftq-iters N] [--adapter-dtype fp32|bf16] [--loss sft|kl]\n"
    "    [--steps N] [--lr X] [--batch-size B] [--grad-accum K] [--schedule constant|cosine|linear|wsd] [--warmup N]\n"
    "    [--final-lr F] [--weight-decay W] [--clip-norm C] [--temperature T] [--teacher T] [--calib C]\n"
    "    [--eval-data E] [--eval-every N] [--eval-samples N] [--windows quantlab|hf|llama] [--checkpoint-every N]\n"
    "    [--seed S] [--seq-len L] [--device D] [--threads T] [--nproc N] [--dist-timeout S] [--resume | --force]\n"
    "    [--dry-run] [--project P] [--json]\n\n"
    "LoRA adapters (x A^T B^T alpha/r beside every targeted Linear layer, dropout on x) trained on a frozen base.\n"
    "qlora: the base is MODEL quantized to NF4 with double quantization (blocks of 64, lm_head kept), or --recipe's\n"
    "format; lora: the base is MODEL in full precision, or quantized by --recipe (any QuantLab weight format: INT4\n"
    "groups, NVFP4, FP8, GGUF types ...), or a quantized checkpoint as MODEL; full: full fine-tuning of every parameter\n"
    "(no adapter), for comparison. --targets: glob patterns or module names (default all-linear: every Linear layer\n"
    "but the output head). --init loftq: LoftQ alternates quantizing the base and a rank-r SVD of the residual\n"
    "(--loftq-iters times) so that Q + s B A ~ W. --loss sft: cross-entropy on the data's scored tokens; kl: LoRA-QAD,\n"
    "KL to the full-precision teacher. DIR receives adapter/ (a PEFT folder: adapter_config.json,\n"
    "adapter_model.safetensors, quantlab_lora.json with the base's fingerprint), checkpoint/ and train_report.json;\n"
    "Ctrl-C pauses, --resume continues bit-exactly. --nproc N: N data-parallel ranks over Gloo (the adapters'\n"
    "gradients averaged; B is the global batch), as train qat|qad (docs/TRAINING.md \"Several processes\"). --dry-run prints the memory estimate (base codes and constants,\n"
    "adapters, gradients, optimizer states, activations) beside full fine-tuning and QAT, and trains nothing.\n"
    "Defaults: rank 8, alpha 16, no dropout, 100 steps, batch 8, lr 2e-4 cosine to 10 %, adapters fp32.";

namespace {

void print_lora_metrics(const char* label, const EvalMetrics& m) {
    std::printf("%-12s loss %.5f", label, m.loss);
    if (m.ppl) std::printf("  ppl %.4f", *m.ppl);
    if (m.exact_match) std::printf("  exact match %.2f %%", 100 * *m.exact_match);
    if (m.kl) std::printf("  KL %.3e", *m.kl);
    if (m.agreement) std::printf("  agreement %.2f %%", 100 * *m.agreement);
    std::printf("\n");
}

}  // namespace

int run_lora_train(const std::vector<std::string>& args) {
    ArgParser p("train",
                {"--recipe", "--data", "--out", "--rank", "--alpha", "--dropout", "--targets", "--init", "--loftq-iters",
                 "--adapter-dtype", "--loss", "--steps", "--lr", "--batch-size", "--grad-accum", "--schedule", "--warmup",
                 "--final-lr", "--weight-decay", "--clip-norm", "--temperature", "--teacher", "--calib", "--calib-samples",
                 "--eval-data", "--eval-every", "--eval-samples", "--windows", "--checkpoint-every", "--seed", "--seq-len",
                 "--device", "--threads", "--project", "--nproc", "--dist-timeout"},
                {"--resume", "--force", "--dry-run", "--json"});
    p.parse(args);
    if (p.positional().size() != 2) throw UserError("train: expected lora, qlora or full and MODEL (quantlab-cli train qlora demo ...)");
    LoraTrainRequest req;
    req.method = p.positional()[0];
    req.model = p.positional()[1];
    req.recipe = p.value("--recipe").value_or("");
    req.data = p.required("--data");
    req.out_dir = p.has("--dry-run") ? p.value("--out").value_or("") : p.required("--out");
    req.rank = p.integer("--rank", req.rank);
    req.alpha = p.number("--alpha", req.alpha);
    req.dropout = p.number("--dropout", req.dropout);
    req.targets = p.value("--targets").value_or(req.targets);
    req.init = p.value("--init").value_or(req.init);
    req.loftq_iterations = p.integer("--loftq-iters", req.loftq_iterations);
    req.adapter_dtype = p.value("--adapter-dtype").value_or(req.adapter_dtype);
    req.loss = p.value("--loss").value_or(req.loss);
    req.steps = p.integer("--steps", req.steps);
    req.lr = p.number("--lr", req.lr);
    req.batch_size = p.integer("--batch-size", req.batch_size);
    req.grad_accumulation = p.integer("--grad-accum", req.grad_accumulation);
    req.schedule = p.value("--schedule").value_or(req.schedule);
    req.warmup_steps = p.integer("--warmup", 0);
    req.final_lr_fraction = p.number("--final-lr", req.final_lr_fraction);
    req.weight_decay = p.number("--weight-decay", req.weight_decay);
    req.clip_norm = p.number("--clip-norm", req.clip_norm);
    req.temperature = p.number("--temperature", req.temperature);
    req.teacher = p.value("--teacher").value_or("");
    req.calibration = p.value("--calib").value_or("");
    req.calibration_samples = p.integer("--calib-samples", 0);
    req.eval_data = p.value("--eval-data").value_or("");
    req.eval_every = p.integer("--eval-every", 0);
    req.eval_samples = p.integer("--eval-samples", 0);
    req.windows = p.value("--windows").value_or(req.windows);
    req.checkpoint_every = p.integer("--checkpoint-every", 0);
    req.seed = p.seed();
    req.sequence_length = p.integer("--seq-len", 0);
    req.device = device_option(p);
    req.threads = p.integer("--threads", 0);
    req.resume = p.has("--resume");
    req.force = p.has("--force");
    for (const auto& [name, v] : {std::pair<const char*, int64_t>{"--eval-every", req.eval_every},
                                  {"--eval-samples", req.eval_samples}, {"--checkpoint-every", req.checkpoint_every},
                                  {"--seq-len", req.sequence_length}, {"--warmup", req.warmup_steps},
                                  {"--calib-samples", req.calibration_samples}, {"--threads", req.threads}})
        if (v < 0) throw UserError(std::string("train: ") + name + " must not be negative");
    if (p.has("--dry-run")) {
        const TrainingMemoryEstimate e = lora_memory_estimate(req);
        if (p.has("--json")) {
            nlohmann::json j = nlohmann::json::array();
            for (const MethodMemory& m : e.methods) {
                nlohmann::json lines = nlohmann::json::object();
                for (const MemoryLine& l : m.lines) lines[l.item] = l.bytes;
                j.push_back({{"method", m.method}, {"total_bytes", m.total_bytes()},
                             {"trainable_parameters", m.trainable_parameters}, {"bytes", lines}});
            }
            std::printf("%s\n", nlohmann::json({{"memory", j}, {"notes", e.notes}}).dump(2).c_str());
        } else {
            std::printf("memory estimate (batch %lld, sequence %lld; nothing trained)\n%s", static_cast<long long>(req.batch_size),
                        static_cast<long long>(req.sequence_length), memory_table(e).c_str());
        }
        return 0;
    }
    // Several processes, as train qat|qad: --nproc N launches them here; a launcher's environment joins its group.
    std::optional<LocalRanks> local_ranks;
    start_training_ranks(p, args, req.batch_size, req.device, req.distributed, req.threads, local_ranks);
    CancellationToken cancel;
    CancelOnSignal on_signal(cancel);
    CliJobSink cli_sink;
    projects::ProjectRunInfo info =
        recorded_run_info(p, req.method, req.method + " " + path_label(req.model) + (req.recipe.empty() ? "" : " " + req.recipe) + " on " + path_label(req.data),
                          req.model, req.recipe);
    info.config_json = nlohmann::json({{"mode", req.method}, {"model", req.model}, {"recipe", req.recipe}, {"data", req.data},
                                       {"steps", req.steps}, {"lr", req.lr}, {"rank", req.rank}, {"alpha", req.alpha},
                                       {"targets", req.targets}, {"init", req.init}, {"loss", req.loss}, {"out", req.out_dir},
                                       {"device", req.device}})
                           .dump();
    LoraTrainReport r;
    if (!req.distributed.is_main()) {
        // Ranks 1..N-1 train and report nothing: rank 0 writes the project, DIR and the output.
        NullJobSink quiet;
        run_lora_training(req, quiet, cancel);
        return 0;
    }
    try {
        projects::run_recorded(p.value("--project"), info, cli_sink,
                               [&](JobSink& sink) { r = run_lora_training(req, sink, cancel); }, "paused; resume with --resume");
    } catch (const JobCancelled&) {
        cli_sink.finish_line();
        std::fprintf(stderr, "train: stopped; the checkpoint in %s/checkpoint resumes it (--resume)\n", req.out_dir.c_str());
        if (local_ranks) local_ranks->finish(10);
        throw;
    } catch (...) {
        cli_sink.finish_line();
        if (local_ranks) local_ranks->finish(10);  // those that never joined are stopped
        throw;
    }
    cli_sink.finish_line();
    if (local_ranks && !local_ranks->finish(60)) throw UserError("train: a rank failed (above); rank 0 finished the run");
    if (p.has("--json")) {
        std::printf("%s", lora_train_report_json(r).c_str());
        return 0;
    }
    std::printf("%s %s, %lld steps%s, %.1f s (init %.1f s)\nbase       %s\n", r.method.c_str(), r.model_path.c_str(),
                static_cast<long long>(r.steps),
                r.resumed_from ? (" (resumed at " + std::to_string(r.resumed_from) + ")").c_str() : "", r.seconds, r.init_seconds,
                r.base_summary.c_str());
    std::printf("trainable  %lld of %lld parameters (%lld layers)\n", static_cast<long long>(r.trainable_parameters),
                static_cast<long long>(r.model_parameters), static_cast<long long>(r.adapted_layers));
    if (r.loftq_error)
        std::printf("LoftQ      ||W - Q|| / ||W|| %.5f -> ||W - (Q + sBA)|| / ||W|| %.5f (mean over layers)\n", *r.loftq_base_error,
                    *r.loftq_error);
    print_lora_metrics("full prec.", r.teacher.overall);
    print_lora_metrics("before", r.before.overall);
    print_lora_metrics("after", r.after.overall);
    std::printf("written    %s\n", r.adapter_dir.c_str());
    return 0;
}

namespace {

std::string lora_usage() {
    return "quantlab-cli lora preview RUN --data D [--samples N] [--seq-len L] [--windows quantlab|hf|llama]\n"
           "    [--suite FILE|default [--limit N] [--max-tokens N]] [--device D] [--json]\n\n"
           "The merge-cost preview of a LoRA run (DIR of 'train lora|qlora', or its adapter folder): the quantized base with\n"
           "the adapter (what was trained), the merged model quantized again in the base's format, and the merged model in\n"
           "full precision, side by side on D (loss, perplexity; KL and top-1 agreement against the adapted model), with the\n"
           "fraction of each adapted layer's codes that the re-quantized merge changes. --suite: each form also answers the eval\n"
           "suite (greedy; its first N items with --limit; docs/EVAL_SUITES.md), and the items whose verdict the merge flips\n"
           "are listed.\n"
           "quantlab-cli lora logits RUN --ids IDS.npy --out LOGITS.npy [--base-only] [--device D]: the logits of the base with\n"
           "its adapter (or alone), for comparison with PEFT.";
}

int run_lora_logits(const std::vector<std::string>& args) {
    ArgParser p("lora logits", {"--ids", "--out", "--device"}, {"--base-only"});
    p.parse(args);
    if (p.positional().size() != 1) throw UserError("lora logits: expected RUN (a LoRA run folder)");
    const NdArray logits = lora_logits(p.positional()[0], read_npy(p.required("--ids")), !p.has("--base-only"), device_option(p));
    write_npy(p.required("--out"), logits);
    std::printf("wrote %s\n", p.required("--out").c_str());
    return 0;
}

int run_lora(const std::vector<std::string>& args) {
    if (!args.empty() && args[0] == "logits") return run_lora_logits(std::vector<std::string>(args.begin() + 1, args.end()));
    if (args.empty() || args[0] != "preview") throw UserError("lora: expected 'preview' or 'logits' (quantlab-cli lora preview RUN --data D)");
    ArgParser p("lora preview", {"--data", "--samples", "--seq-len", "--windows", "--device", "--suite", "--limit", "--max-tokens"}, {"--json"});
    p.parse(std::vector<std::string>(args.begin() + 1, args.end()));
    if (p.positional().size() != 1) throw UserError("lora preview: expected RUN (a LoRA run folder)");
    LoraPreviewRequest req;
    req.run = p.positional()[0];
    req.data = p.required("--data");
    req.samples = p.integer("--samples", 0);
    req.sequence_length = p.integer("--seq-len", 0);
    req.windows = p.value("--windows").value_or(req.windows);
    req.device = device_option(p);
    req.suite = p.value("--suite").value_or("");
    if (req.suite.empty() && (p.has("--limit") || p.has("--max-tokens"))) throw UserError("lora preview: --limit and --max-tokens need --suite");
    req.suite_limit = p.integer("--limit", 0);
    req.suite_max_tokens = p.integer("--max-tokens", req.suite_max_tokens);
    CancellationToken cancel;
    CancelOnSignal on_signal(cancel);
    CliJobSink sink;
    const LoraMergePreview r = run_lora_preview(req, sink, cancel);
    sink.finish_line();
    if (p.has("--json")) {
        std::printf("%s", lora_preview_json(r).c_str());
        return 0;
    }
    std::printf("merge preview of %s on %s\nbase: %s\n", r.run.c_str(), r.data.c_str(), r.base_summary.c_str());
    std::printf("%-26s %10s %10s %12s %10s\n", "", "loss", "ppl", "KL vs adapted", "agreement");
    const auto row = [](const char* label, const EvalMetrics& m) {
        std::printf("%-26s %10.5f %10.4f", label, m.loss, m.ppl.value_or(std::nan("")));
        if (m.kl)
            std::printf(" %12.3e %9.2f %%\n", *m.kl, 100 * m.agreement.value_or(0));
        else
            std::printf(" %12s %10s\n", "-", "-");
    };
    row("base + adapter", r.adapted);
    row("merged, re-quantized", r.merged_requantized);
    row("merged, full precision", r.merged_fp);
    std::printf("codes changed by the re-quantized merge: %.3f %% of the adapted layers' weights\n", 100 * r.codes_changed);
    if (r.suite) {
        const MergeSuiteResult& s = *r.suite;
        const auto flips = [](const std::vector<std::string>& ids) {
            std::string t;
            for (const std::string& id : ids) t += (t.empty() ? "" : ", ") + id;
            return ids.empty() ? std::string("no verdict flips") : std::to_string(ids.size()) + " flipped: " + t;
        };
        std::printf("eval suite %s, %lld items passed: base + adapter %lld, merged re-quantized %lld (%s), merged full precision %lld (%s)\n",
                    s.suite.c_str(), static_cast<long long>(s.items), static_cast<long long>(s.passed_adapted),
                    static_cast<long long>(s.passed_merged_requantized), flips(s.flips_merged_requantized).c_str(),
                    static_cast<long long>(s.passed_merged_fp), flips(s.flips_merged_fp).c_str());
    }
    if (r.base_quantizes_inputs)
        std::printf("(the base quantizes activations: the full-precision merge runs them in full precision too)\n");
    std::printf("%-48s %8s %10s %12s %12s\n", "layer", "format", "codes", "||sBA||/||W||", "lost/||sBA||");
    for (const MergeLayerCost& l : r.layers)
        std::printf("%-48s %8s %9.3f%% %12.3e %12.3f\n", l.module.c_str(), l.format.c_str(), 100 * l.codes_changed, l.update_norm,
                    l.requant_error);
    return 0;
}

}  // namespace

Command lora_command() {
    return Command{"lora", lora_usage(), "LoRA runs: the merge-cost preview (train them with 'train lora|qlora')", run_lora};
}

}  // namespace ql::cli
