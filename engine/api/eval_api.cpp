// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/eval_api.h"

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/data/sentence_data.h"
#include "engine/loading/model_source.h"
#include "engine/lora/adapted_model.h"
#include "engine/models/model_device.h"
#include "engine/eval/encoder_evaluator.h"

namespace ql {

std::string normalise_split_name(const std::string& split) {
    if (split == "train") return "train";
    if (split == "validation" || split == "val") return "validation";
    if (split == "all") return "all";
    throw UserError("split '" + split + "' is not one of train, validation, all");
}

EvalReport run_eval(const EvalRequest& request, JobSink& sink, const CancellationToken& cancel) {
    if (request.data.empty()) throw UserError("eval: no data given (--data)");
    const at::Device device = torch_device(request.device);
    if (std::error_code ec; !request.pairs.empty() && !std::filesystem::is_regular_file(request.pairs, ec))
        throw UserError("pairs '" + request.pairs + "': no such file");
    if (request.batch_size < 0) throw UserError("eval: the batch size must be positive");
    // Cheap checks of the data before models are loaded.
    if (is_synthetic_spec(request.data)) parse_synthetic_spec(request.data);
    else if (std::error_code ec; !std::filesystem::exists(request.data, ec) && !parse_sentence_line_range(request.data))
        throw UserError("data '" + request.data + "': no such file or folder (built-in data start with 'synthetic:')");
    // A LoRA run is its base with the adapter (engine/lora/adapted_model.h): `quantlab-cli eval RUN`.
    OpenedModel student = open_model_or_lora_run(request.model, request.device, cancel);
    move_opened_model(student, device);
    OpenedModel teacher;
    if (!request.teacher.empty()) {
        cancel.throw_if_cancelled();
        teacher = open_model_or_lora_run(request.teacher, request.device, cancel);
        move_opened_model(teacher, device);
        const ModelConfig &s = student.model->config(), &t = teacher.model->config();
        if (s.vocab_size != t.vocab_size || s.num_classes != t.num_classes)
            throw UserError("teacher " + request.teacher + " has " +
                            std::to_string(t.vocab_size ? t.vocab_size : t.num_classes) + " outputs, the model " +
                            std::to_string(s.vocab_size ? s.vocab_size : s.num_classes) +
                            " (KL and agreement need the same vocabulary)");
    }
    // An encoder needs a reference (checked again by the evaluator; here to name the folder).
    if (student.model->is_encoder() && request.teacher.empty() && request.pairs.empty() && !student.model->config().mlm_head &&
        !is_pairs_file(request.data))
        throw UserError(encoder_needs_reference_message(student.path));
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
    if (!request.windows.empty()) options.windows.kind = parse_text_windows(request.windows);
    if (request.stride < 0) throw UserError("eval: the stride must be positive");
    if (request.stride > 0 && options.windows.kind != TextWindows::Kind::Fixed)
        throw UserError("eval: --stride applies to --windows hf");
    options.windows.stride = request.stride;
    const Dataset data = load_dataset(request.data, options, student.data);
    if (data.size() == 0) throw UserError("data '" + request.data + "': the " + split_name(data.split) + " split is empty");
    EvalOptions eval_options;
    eval_options.batch_size = request.batch_size;
    eval_options.mask_token_id = student.mask_token_id;
    eval_options.seed = request.seed;
    EvalReport r = evaluate(*student.model, teacher.model.get(), data, eval_options, sink, cancel);
    if (!request.pairs.empty()) {
        if (!student.model->is_encoder())
            throw UserError("eval: a pairs file (" + request.pairs + ") applies to sentence encoders; " + student.path +
                            " is a " + student.model->config().model_type + " model");
        if (!is_pairs_file(request.pairs))
            throw UserError(request.pairs + ": not a pairs file (lines sentence1<TAB>sentence2<TAB>score)");
        const Dataset pairs = load_dataset(request.pairs, DataOptions{}, student.data);
        EvalOptions pair_options = eval_options;
        pair_options.encoder_needs_reference = false;
        add_pair_metrics(r, evaluate(*student.model, teacher.model.get(), pairs, pair_options, sink, cancel));
    }
    r.model_path = student.path;
    return r;
}

void report_eval_metrics(JobSink& sink, int64_t step, const EvalReport& r) {
    const EvalMetrics& m = r.overall;
    if (m.tokens > 0) sink.metric(step, "eval/loss", m.loss);  // 0 scored tokens: an encoder without a loss
    if (m.ppl) sink.metric(step, "eval/ppl", *m.ppl);
    if (m.exact_match) sink.metric(step, "eval/exact_match", *m.exact_match);
    if (m.accuracy) sink.metric(step, "eval/accuracy", *m.accuracy);
    if (m.kl) sink.metric(step, "eval/kl", *m.kl);
    if (m.agreement) sink.metric(step, "eval/agreement", *m.agreement);
    if (m.cosine_mean) sink.metric(step, "eval/cosine_mean", *m.cosine_mean);
    if (m.cosine_p5) sink.metric(step, "eval/cosine_p5", *m.cosine_p5);
    if (m.cosine_min) sink.metric(step, "eval/cosine_min", *m.cosine_min);
    if (m.spearman) sink.metric(step, "eval/spearman", *m.spearman);
    if (m.teacher_spearman) sink.metric(step, "eval/teacher_spearman", *m.teacher_spearman);
    if (m.contrastive_loss) sink.metric(step, "eval/contrastive_loss", *m.contrastive_loss);
    for (const auto& [name, d] : r.domains)
        if (d.exact_match) sink.metric(step, "eval/exact_match/" + name, *d.exact_match);
}

}  // namespace ql
