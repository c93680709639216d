// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli embed MODEL --data D --out emb.npy [--json]: sentence embeddings of every line of
// a text file, as sentence-transformers computes them (docs/CLI.md "embed").
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "app/cli/cli_job_sink.h"
#include "app/cli/device_option.h"
#include "engine/api/embed_api.h"
#include "engine/core/errors.h"

namespace ql::cli {
namespace {

const char* kUsage =
    "quantlab-cli embed MODEL --data D --out EMB.npy [--force] [--json] [--batch-size B] [--seq-len T]\n\n"
    "    [--device cpu|cuda|cuda:N]\n"
    "MODEL: a sentence encoder (a sentence-transformers folder such as all-MiniLM-L6-v2, a plain BERT folder, or a\n"
    "quantized checkpoint of one). D: a text file (or folder of .txt files); every line is one sentence and one row\n"
    "of EMB.npy (float32 [lines, dimension]), pooled and normalised as the folder's modules.json and\n"
    "1_Pooling/config.json say (mean pooling without normalisation for a plain BERT folder).\n"
    "--seq-len: tokens per sentence including [CLS] and [SEP] (default: max_seq_length of sentence_bert_config.json).\n"
    "--json prints model, data, out, sentences, dimension, pooling, normalize, config_source, max_tokens,\n"
    "longest_tokens and seconds. Ctrl-C cancels (exit code 130) and writes nothing.";

int run(const std::vector<std::string>& args) {
    ArgParser p("embed", {"--device", "--data", "--out", "--batch-size", "--seq-len"}, {"--json", "--force"});
    p.parse(args);
    if (p.positional().empty()) throw UserError("embed: missing MODEL (a sentence encoder's folder)");
    if (p.positional().size() > 1) throw UserError("embed: unexpected argument '" + p.positional()[1] + "'");
    EmbedRequest req;
    req.model = p.positional()[0];
    req.device = device_option(p);
    req.data = p.required("--data");
    req.out = p.required("--out");
    req.force = p.has("--force");
    req.batch_size = p.positive_integer("--batch-size");
    req.sequence_length = p.positive_integer("--seq-len");

    CancellationToken cancel;
    CancelOnSignal on_signal(cancel);
    CliJobSink sink;
    const EmbedSummary s = run_embed(req, sink, cancel);
    sink.finish_line();
    if (p.has("--json")) {
        const nlohmann::json j = {{"model", s.model_path},   {"data", s.data},
                                  {"out", s.out},            {"sentences", s.sentences},
                                  {"dimension", s.dimension}, {"pooling", s.pooling},
                                  {"normalize", s.normalize}, {"config_source", s.config_source},
                                  {"max_tokens", s.max_tokens}, {"longest_tokens", s.longest_tokens},
                                  {"seconds", s.seconds}};
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("model        %s\n", s.model_path.c_str());
        std::printf("pooling      %s%s (%s)\n", s.pooling.c_str(), s.normalize ? ", L2-normalised" : "", s.config_source.c_str());
        std::printf("sentences    %lld from %s (longest %lld of at most %lld tokens)\n", static_cast<long long>(s.sentences),
                    s.data.c_str(), static_cast<long long>(s.longest_tokens), static_cast<long long>(s.max_tokens));
        std::printf("written      %s (float32 [%lld, %lld])\n", s.out.c_str(), static_cast<long long>(s.sentences),
                    static_cast<long long>(s.dimension));
        std::printf("seconds      %.2f\n", s.seconds);
    }
    return 0;
}

}  // namespace

Command embed_command() {
    return Command{"embed", kUsage, "sentence embeddings of a text file's lines (encoders, as sentence-transformers)", run};
}

}  // namespace ql::cli
