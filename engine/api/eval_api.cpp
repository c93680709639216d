// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/eval_api.h"

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/loading/model_source.h"
#include "engine/eval/evaluator.h"

namespace ql {

std::string normalise_split_name(const std::string& split) {
    if (split == "train") return "train";
    if (split == "validation" || split == "val") return "validation";
    if (split == "all") return "all";
    throw UserError("split '" + split + "' is not one of train, validation, all");
}

EvalReport run_eval(const EvalRequest& request, JobSink& sink, const CancellationToken& cancel) {
    if (request.data.empty()) throw UserError("eval: no data given (--data)");
    if (request.batch_size < 0) throw UserError("eval: the batch size must be positive");
    // Cheap checks of the data before models are loaded.
    if (is_synthetic_spec(request.data)) parse_synthetic_spec(request.data);
    else if (std::error_code ec; !std::filesystem::exists(request.data, ec))
        throw UserError("data '" + request.data + "': no such file or folder (built-in data start with 'synthetic:')");
    OpenedModel student = open_model(request.model);
    OpenedModel teacher;
    if (!request.teacher.empty()) {
        cancel.throw_if_cancelled();
        teacher = open_model(request.teacher);
        const ModelConfig &s = student.model->config(), &t = teacher.model->config();
        if (s.vocab_size != t.vocab_size || s.num_classes != t.num_classes)
            throw UserError("teacher " + request.teacher + " has " +
                            std::to_string(t.vocab_size ? t.vocab_size : t.num_classes) + " outputs, the model " +
                            std::to_string(s.vocab_size ? s.vocab_size : s.num_classes) +
                            " (KL and agreement need the same vocabulary)");
    }
    cancel.throw_if_cancelled();
    DataOptions options;
    if (!request.split.empty()) {
        const std::string s = normalise_split_name(request.split);
        options.split = s == "train" ? DataSplit::Train : s == "validation" ? DataSplit::Validation : DataSplit::All;
    }
    options.samples = request.samples;
    options.seed = request.seed;
    options.sequence_length = request.sequence_length;
    options.token_dtype = request.token_dtype;
    const Dataset data = load_dataset(request.data, options, student.data);
    if (data.size() == 0) throw UserError("data '" + request.data + "': the " + split_name(data.split) + " split is empty");
    EvalOptions eval_options;
    eval_options.batch_size = request.batch_size;
    EvalReport r = evaluate(*student.model, teacher.model.get(), data, eval_options, sink, cancel);
    r.model_path = student.path;
    return r;
}

void report_eval_metrics(JobSink& sink, int64_t step, const EvalReport& r) {
    const EvalMetrics& m = r.overall;
    sink.metric(step, "eval/loss", m.loss);
    if (m.ppl) sink.metric(step, "eval/ppl", *m.ppl);
    if (m.exact_match) sink.metric(step, "eval/exact_match", *m.exact_match);
    if (m.accuracy) sink.metric(step, "eval/accuracy", *m.accuracy);
    if (m.kl) sink.metric(step, "eval/kl", *m.kl);
    if (m.agreement) sink.metric(step, "eval/agreement", *m.agreement);
    for (const auto& [name, d] : r.domains)
        if (d.exact_match) sink.metric(step, "eval/exact_match/" + name, *d.exact_match);
}

}  // namespace ql
