// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/api/divergence_api.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>

#include "engine/api/eval_api.h"
#include "engine/core/errors.h"
#include "engine/data/synthetic_tasks.h"
#include "engine/diagnosis/depth_divergence.h"
#include "engine/loading/model_source.h"
#include "engine/models/model_device.h"
#include "engine/ptq/ptq_pipeline.h"
#include "engine/quant/recipe.h"
#include "engine/text/tokenizer.h"

namespace ql {
namespace {

// Readable text of token ids: the demo's characters, a tokenizer.json's decoder, or ids.
std::function<std::string(const std::vector<int64_t>&)> text_decoder(const OpenedModel& m) {
    if (m.is_demo) return [](const std::vector<int64_t>& ids) { return synthetic_vocab::decode(ids); };
    if (std::error_code ec; std::filesystem::exists(m.path + "/tokenizer.json", ec)) {
        auto tokenizer = std::make_shared<Tokenizer>(Tokenizer::from_file(m.path + "/tokenizer.json"));
        return [tokenizer](const std::vector<int64_t>& ids) {
            return tokenizer->decode(std::vector<int32_t>(ids.begin(), ids.end()));
        };
    }
    return {};
}

DataSplit split_of(const std::string& split) {
    const std::string s = normalise_split_name(split);
    return s == "train" ? DataSplit::Train : s == "validation" ? DataSplit::Validation : DataSplit::All;
}

void check_data_spec(const std::string& spec, const char* option) {
    if (spec.empty()) return;
    if (is_synthetic_spec(spec)) {
        parse_synthetic_spec(spec);
        return;
    }
    if (std::error_code ec; !std::filesystem::exists(spec, ec))
        throw UserError(std::string("divergence: ") + option + " '" + spec +
                        "': no such file or folder (built-in data start with 'synthetic:')");
}

}  // namespace

DivergenceReport run_divergence(const DivergenceRequest& req, JobSink& sink, const CancellationToken& cancel) {
    if (req.model.empty()) throw UserError("divergence: the FP model is required (MODEL)");
    if (req.recipe.empty() == req.quantized.empty())
        throw UserError("divergence: give exactly one of --recipe R (quantize MODEL now) and --quantized CKPT");
    if (req.data.empty()) throw UserError("divergence: data is required (--data)");
    if (req.batch_size < 0) throw UserError("divergence: --batch-size must be positive");
    if (req.worst_tokens < 0) throw UserError("divergence: --worst-tokens must not be negative");
    if (req.samples < 0 || req.calibration_samples < 0) throw UserError("divergence: sample counts must not be negative");
    const at::Device device = torch_device(req.device);
    check_data_spec(req.data, "--data");
    check_data_spec(req.calibration, "--calib");
    std::optional<Recipe> recipe;
    if (!req.recipe.empty()) recipe = load_recipe(req.recipe);
    std::optional<DataSplit> split;
    if (!req.split.empty()) split = split_of(req.split);

    sink.progress(0, 0, "load");
    OpenedModel fp = open_model(req.model);
    if (fp.quantization)
        throw UserError("divergence: " + fp.path + " is a quantized checkpoint; MODEL is the full-precision model (give the "
                        "checkpoint with --quantized)");
    move_opened_model(fp, device);
    OpenedModel other = open_model(recipe ? req.model : req.quantized);
    move_opened_model(other, device);  // before a recipe's quantizers, which work where their weights are
    std::unique_ptr<QuantizedModel> own;
    QuantizedModel* q = other.quantization.get();
    if (recipe) {
        own = std::make_unique<QuantizedModel>(*other.model, *recipe);  // checks the recipe against the model
        q = own.get();
    } else if (!q) {
        throw UserError("divergence: " + other.path + " is not a quantized checkpoint (--quantized takes the output of "
                        "ptq, train or an hf-modelopt export)");
    }
    DataOptions o;
    o.split = split;
    o.samples = req.samples;
    o.seed = req.seed;
    o.sequence_length = req.sequence_length;
    o.token_dtype = req.token_dtype;
    const Dataset data = load_dataset(req.data, o, fp.data);
    if (data.size() == 0) throw UserError("divergence: data '" + req.data + "': the " + split_name(data.split) + " split is empty");
    if (recipe) {
        DataOptions co;
        co.split = DataSplit::Train;
        co.samples = req.calibration_samples > 0 ? req.calibration_samples : recipe->calibration.samples;
        co.seed = req.seed;
        co.sequence_length = req.sequence_length;
        co.token_dtype = req.token_dtype;
        const Dataset calibration = load_dataset(req.calibration.empty() ? req.data : req.calibration, co, fp.data);
        PtqOptions po;
        po.batch_size = recipe->calibration.batch_size;
        run_ptq_pipeline(*q, calibration, po, sink, cancel);
    }
    cancel.throw_if_cancelled();
    DepthDivergenceOptions options;
    // Every stage of a batch is kept for the isolated runs: bound the positions, not the examples.
    const int64_t positions = std::max<int64_t>(1, data.inputs.size(1));
    options.batch_size = req.batch_size > 0 ? req.batch_size : std::clamp<int64_t>(4096 / positions, 1, 64);
    options.worst_tokens = req.worst_tokens;
    options.decode = text_decoder(fp);
    DivergenceReport r = measure_divergence(*fp.model, *q, data, options, sink, cancel);
    r.model = fp.path;
    r.quantized = recipe ? recipe->name : other.path;
    r.recipe = q->recipe().name;
    r.data = req.data;
    return r;
}

void report_divergence_metrics(JobSink& sink, const DivergenceReport& r) {
    if (r.kl) sink.metric(0, "divergence/kl", *r.kl);
    if (r.tokens) {
        sink.metric(0, "divergence/kl_p99", r.tokens->kl_p99);
        sink.metric(0, "divergence/same_top1", r.tokens->same_top1);
        sink.metric(0, "divergence/rms_delta_p", r.tokens->rms_delta_p);
        sink.metric(0, "divergence/delta_ppl", r.tokens->delta_ppl);
    }
    sink.metric(0, "divergence/final_rel_l2", r.final_hidden.rel_l2);
    if (r.sentence_cosine) sink.metric(0, "divergence/sentence_cosine", *r.sentence_cosine);
    for (size_t i = 0; i < r.blocks.size(); ++i) {
        const int64_t step = static_cast<int64_t>(i);
        sink.metric(step, "depth/propagated_rel_l2", r.blocks[i].block.propagated.rel_l2);
        sink.metric(step, "depth/isolated_rel_l2", r.blocks[i].block.isolated.rel_l2);
        if (r.blocks[i].block.kl_propagated) sink.metric(step, "depth/kl", *r.blocks[i].block.kl_propagated);
    }
}

}  // namespace ql
