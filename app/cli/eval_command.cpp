// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli eval MODEL --data D [--teacher T] [--json]: loss, perplexity, exact match,
// accuracy, KL and agreement against a teacher (docs/CLI.md "eval").
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "app/cli/cli_job_sink.h"
#include "app/cli/device_option.h"
#include "engine/core/errors.h"
#include "engine/api/eval_api.h"
#include "engine/api/eval_json.h"

namespace ql::cli {
namespace {

const char* kUsage =
    "quantlab-cli eval MODEL --data D [--teacher T] [--pairs P] [--json]\n"
    "    [--device cpu|cuda|cuda:N]\n"
    "    [--split train|validation|all] [--samples N] [--seed S] [--seq-len T] [--batch-size B] [--dtype uint16|uint32]\n"
    "    [--windows quantlab|hf|llama] [--stride S]\n\n"
    "MODEL, T: an HF model folder, a GGUF file, a quantized checkpoint, 'demo' (the built-in demo model, see\n"
    "'quantlab-cli demo'), or a LoRA run (DIR of 'train lora|qlora': its base with the adapter, unmerged).\n"
    "D: a text file or folder of .txt files, a token file (.npy, nanoGPT .bin), an IDX image file, or a\n"
    "built-in spec: synthetic:arith, synthetic:arith:+ / :- / :*, synthetic:copy, synthetic:reverse,\n"
    "synthetic:random-tokens (docs/DATA.md). Synthetic tasks are scored on held-out problems unless --split\n"
    "says otherwise; files are evaluated whole.\n"
    "Text is cut into windows of --seq-len T tokens (docs/DATA.md \"Perplexity windows\"): quantlab (default) T + 1\n"
    "tokens every T, each token predicted once; hf: transformers' fixed-length windows of T every --stride S (default\n"
    "T), later windows scoring their last S; llama: llama-perplexity's chunks of T, BOS first when the model adds one,\n"
    "the second half scored.\n"
    "Encoders (BERT, sentence-transformers folders): D holds sentences, one per line, or is a pairs file\n"
    "(sentence1<TAB>sentence2<TAB>score); with --teacher the embeddings' cosine to the teacher's, with a pairs file the\n"
    "Spearman correlation of the pairs' cosine with their scores, with an MLM head the masked-LM loss; --pairs P adds\n"
    "the Spearman correlations on pairs file P to the metrics on D.\n"
    "--json prints loss, ppl, exact_match, accuracy, kl, agreement, cosine_mean, cosine_p5, cosine_min, spearman,\n"
    "teacher_spearman, tokens, pairs, seconds and per-domain results.\n"
    "Ctrl-C cancels (exit code 130).";

std::string percent(const std::optional<double>& v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f %%", 100.0 * *v);
    return buf;
}

void print_text(const EvalRequest& req, const EvalReport& r) {
    const EvalMetrics& m = r.overall;
    std::printf("model        %s\n", r.model_path.c_str());
    if (!req.teacher.empty()) std::printf("teacher      %s\n", req.teacher.c_str());
    if (!r.pooling.empty()) {
        std::printf("data         %s (%s, %lld sentences", req.data.c_str(), r.split.c_str(), static_cast<long long>(m.examples));
        if (m.pairs) std::printf(", %lld pairs", static_cast<long long>(m.pairs));
        std::printf(")\nembedding    %s\n", r.pooling.c_str());
    } else {
        std::printf("data         %s (%s, %lld examples, %lld scored tokens)\n", req.data.c_str(), r.split.c_str(),
                    static_cast<long long>(m.examples), static_cast<long long>(m.tokens));
    }
    if (m.tokens > 0) std::printf("%s %.6g\n", r.pooling.empty() ? "loss        " : "MLM loss    ", m.loss);
    if (m.ppl) std::printf("perplexity   %.6g\n", *m.ppl);
    if (m.exact_match) std::printf("exact match  %s\n", percent(m.exact_match).c_str());
    if (m.accuracy) std::printf("accuracy     %s\n", percent(m.accuracy).c_str());
    if (m.kl) std::printf("KL(teacher||model)  %.6g nats/token\n", *m.kl);
    if (m.agreement) std::printf("top-1 agreement     %s\n", percent(m.agreement).c_str());
    if (m.cosine_mean)
        std::printf("cosine to teacher   mean %.6f, p5 %.6f, min %.6f\n", *m.cosine_mean, *m.cosine_p5, *m.cosine_min);
    auto rho = [](const std::optional<double>& v) {
        char buf[32];
        if (!v || !std::isfinite(*v)) return std::string("-");
        std::snprintf(buf, sizeof buf, "%.4f", *v);
        return std::string(buf);
    };
    if (m.pairs) std::printf("Spearman            %s (teacher %s)\n", rho(m.spearman).c_str(), rho(m.teacher_spearman).c_str());
    if (!r.domains.empty()) {
        std::printf("\n%-14s %10s %12s%s\n", "domain", "loss", "exact match", m.kl ? "           KL   agreement" : "");
        for (const auto& [name, d] : r.domains) {
            std::printf("%-14s %10.4g %12s", name.c_str(), d.loss, d.exact_match ? percent(d.exact_match).c_str() : "-");
            if (d.kl) std::printf(" %12.4g %11s", *d.kl, percent(d.agreement).c_str());
            std::printf("\n");
        }
    }
    std::printf("\nseconds      %.2f\n", r.seconds);
}

int run(const std::vector<std::string>& args) {
    ArgParser p("eval",
                {"--data", "--teacher", "--split", "--samples", "--seed", "--seq-len", "--batch-size", "--dtype", "--pairs", "--device",
                 "--windows", "--stride"},
                {"--json"});
    p.parse(args);
    if (p.positional().empty()) throw UserError("eval: missing MODEL (an HF model folder or 'demo')");
    if (p.positional().size() > 1) throw UserError("eval: unexpected argument '" + p.positional()[1] + "'");
    EvalRequest req;
    req.model = p.positional()[0];
    req.device = device_option(p);
    req.data = p.required("--data");
    req.teacher = p.value("--teacher").value_or("");
    req.pairs = p.value("--pairs").value_or("");
    req.split = p.value("--split").value_or("");
    if (!req.split.empty()) req.split = normalise_split_name(req.split);
    req.samples = p.positive_integer("--samples");
    req.seed = p.seed();
    req.sequence_length = p.positive_integer("--seq-len");
    req.batch_size = p.positive_integer("--batch-size");
    req.token_dtype = p.value("--dtype").value_or("");
    req.windows = p.value("--windows").value_or("");
    req.stride = p.positive_integer("--stride");
    if (!req.token_dtype.empty() && req.token_dtype != "uint16" && req.token_dtype != "uint32")
        throw UserError("eval: --dtype must be uint16 or uint32, got '" + req.token_dtype + "'");

    CancellationToken cancel;
    CancelOnSignal on_signal(cancel);
    CliJobSink sink;
    const EvalReport r = run_eval(req, sink, cancel);
    sink.finish_line();
    if (p.has("--json")) {
        nlohmann::json j = eval_report_json(r);
        j["seconds"] = r.seconds;
        j["model"] = r.model_path;
        j["teacher"] = req.teacher.empty() ? nlohmann::json(nullptr) : nlohmann::json(req.teacher);
        j["data"] = req.data;
        j["split"] = r.split;
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        print_text(req, r);
    }
    return 0;
}

}  // namespace

Command eval_command() {
    return Command{"eval", kUsage,
                   "evaluate a model on data: loss, perplexity, exact match, accuracy, KL to a teacher; encoders: cosine, Spearman",
                   run};
}

}  // namespace ql::cli
