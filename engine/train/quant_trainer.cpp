// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/quant_trainer.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "engine/core/errors.h"
#include "engine/data/synthetic_tasks.h"
#include "engine/distributed/data_parallel.h"
#include "engine/eval/evaluator.h"
#include "engine/models/bert_model.h"
#include "engine/models/model_device.h"
#include "engine/models/sentence_pooling.h"
#include "engine/quant/quant_plan.h"
#include "engine/train/bf16_autocast.h"
#include "engine/eval/contrastive_loss.h"
#include "engine/train/distillation_loss.h"
#include "engine/train/flight_recorder.h"
#include "engine/train/embedding_distillation.h"
#include "engine/train/training_checkpoint.h"

namespace ql {
namespace {

using Clock = std::chrono::steady_clock;

// The element codes of every active weight quantizer, for codes_changed. Codes, not values:
// with NVFP4 the global scale follows the weight's amax, so every dequantized value moves a
// little whenever the amax does, while most codes stay.
std::vector<std::vector<uint8_t>> weight_codes(QuantizedModel& q) {
    c10::NoGradGuard no_grad;
    std::vector<std::vector<uint8_t>> out;
    for (const auto& l : q.layers())
        if (l->weight_enabled()) out.push_back(l->encode_weight().codes.bytes);
    return out;
}

double fraction_changed(const std::vector<std::vector<uint8_t>>& a, const std::vector<std::vector<uint8_t>>& b) {
    double changed = 0, total = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
        for (size_t k = 0; k < a[i].size() && k < b[i].size(); ++k) changed += a[i][k] != b[i][k];
        total += static_cast<double>(a[i].size());
    }
    return total > 0 ? changed / total : 0.0;
}

// One micro-batch of encoder QAD: the student's and teacher's sentence embeddings (and layer
// outputs when hidden states are distilled) on the batch's sentences.
struct EncoderStep {
    at::Tensor loss;
    double cosine = 0;  // QAD: mean cosine to the teacher; QAT: the in-batch top-1 accuracy
    double hidden_mse = 0;
    int64_t tokens = 0;
};

EncoderStep encoder_distillation_step(Model& model, Model& teacher, const Dataset& b, const QuantTrainingConfig& config) {
    if (!b.attention_mask.defined())
        throw UserError("training data '" + b.name + "': a sentence encoder trains on sentences (a text file, one per line)");
    auto& student = dynamic_cast<BertModel&>(model);
    auto& frozen = dynamic_cast<BertModel&>(teacher);
    const bool hidden = config.hidden_weight > 0;
    std::vector<at::Tensor> s_layers, t_layers;
    const at::Tensor s_hidden = student.encode(b.inputs, b.attention_mask, at::Tensor(), hidden ? &s_layers : nullptr);
    const at::Tensor s_emb = pool_sentence_embeddings(s_hidden, b.attention_mask, model.config().sentence);
    at::Tensor t_emb;
    {
        c10::NoGradGuard no_grad;
        const at::Tensor t_hidden = frozen.encode(b.inputs, b.attention_mask, at::Tensor(), hidden ? &t_layers : nullptr);
        t_emb = pool_sentence_embeddings(t_hidden, b.attention_mask, teacher.config().sentence);
    }
    EncoderStep e;
    e.loss = embedding_distillation_loss(s_emb, t_emb, config.encoder_loss);
    if (hidden) {
        const at::Tensor h = hidden_state_mse(s_layers, t_layers, b.attention_mask);
        e.hidden_mse = h.item<double>();
        e.loss = e.loss + h * config.hidden_weight;
    }
    {
        c10::NoGradGuard no_grad;
        e.cosine = at::cosine_similarity(s_emb.detach(), t_emb, 1, 1e-8).mean().item<double>();
    }
    e.tokens = b.attention_mask.ne(0).sum().item<int64_t>();
    return e;
}

// One micro-batch of encoder QAT: the sentences and a deletion view of each, in one padded
// batch through the quantized student, scored by the in-batch contrastive loss.
EncoderStep encoder_contrastive_step(Model& model, const Dataset& b, uint64_t view_seed) {
    if (!b.attention_mask.defined())
        throw UserError("training data '" + b.name + "': a sentence encoder trains on sentences (a text file, one per line)");
    auto& student = dynamic_cast<BertModel&>(model);
    const Dataset view = token_deletion_view(b, view_seed);
    const int64_t n = b.size(), t = std::max(b.inputs.size(1), view.inputs.size(1));
    const auto pad_to = [t](const at::Tensor& x) {
        return x.size(1) == t ? x : at::constant_pad_nd(x, {0, t - x.size(1)}, 0);
    };
    const at::Tensor ids = at::cat({pad_to(b.inputs), pad_to(view.inputs)}, 0);
    const at::Tensor mask = at::cat({pad_to(b.attention_mask), pad_to(view.attention_mask)}, 0);
    const at::Tensor hidden = student.encode(ids, mask, at::Tensor());
    const at::Tensor emb = pool_sentence_embeddings(hidden, mask, model.config().sentence);
    EncoderStep e;
    const at::Tensor anchors = emb.slice(0, 0, n), positives = emb.slice(0, n, 2 * n);
    e.loss = in_batch_contrastive_loss(anchors, positives);
    e.cosine = in_batch_top1(anchors, positives);
    e.tokens = mask.ne(0).sum().item<int64_t>();
    return e;
}

}  // namespace

QuantTrainingResult train_quantized(QuantizedModel& q, Model* teacher, const TrainingBatches& data,
                                    const QuantTrainingConfig& config, const TrainingEvaluator& evaluate, JobSink& sink,
                                    const CancellationToken& cancel) {
    if (config.mode != "qat" && config.mode != "qad") throw UserError("training mode must be qat or qad, got '" + config.mode + "'");
    if (config.mode == "qad" && !teacher) throw UserError("QAD needs a teacher model");
    if (config.steps <= 0) throw UserError("training: --steps must be positive");
    if (config.grad_accumulation <= 0) throw UserError("training: gradient accumulation must be positive");
    if (config.ce_weight < 0 || config.ce_weight > 1) throw UserError("training: the CE weight must be in [0, 1]");
    if (config.fp_steps < 0 || config.fp_steps >= config.steps)
        throw UserError("training: the full-precision steps must be fewer than all steps");
    if (config.fp_steps > 0 && config.mode != "qat")
        throw UserError("training: a full-precision phase (cooldown fusion) applies to QAT only");
    const bool qad = config.mode == "qad";
    Model& model = q.model();
    const bool encoder = model.is_encoder();
    if (encoder && qad && !teacher->is_encoder()) throw UserError("training: the teacher of a sentence encoder must be an encoder");
    if (config.hidden_weight < 0) throw UserError("training: the hidden-state weight must not be negative");
    QuantTrainingResult result;
    const auto t0 = Clock::now();

    // GPTQ's pinned weights become the master weights QAT continues from.
    {
        c10::NoGradGuard no_grad;
        for (const auto& l : q.layers())
            if (l->weight_pinned()) {
                const at::Tensor pinned = l->quantized_weight().clone();
                l->layer().weight.copy_(pinned);
            }
    }
    for (const auto& l : q.layers()) l->set_clip_gradient(config.clip_gradient);
    q.set_enabled(true);
    if (teacher) teacher->set_requires_grad(false);

    const bool adapters = !config.trainable.empty();
    std::vector<std::pair<std::string, at::Tensor>> named = adapters ? config.trainable : model.named_parameters();
    std::vector<at::Tensor> params;
    std::vector<bool> decay;
    for (const auto& [name, p] : named) {
        params.push_back(p);
        decay.push_back(p.dim() >= 2);  // matrices decay; norms and biases do not
    }
    // LSQ step sizes train with the weights (no decay) and are checkpointed with them.
    struct DropLearnedScales {
        QuantizedModel& q;
        bool done = false;
        ~DropLearnedScales() {
            if (!done)
                for (const auto& l : q.layers()) l->finish_learned_scales();
        }
    } learned{q};
    if (config.learned_scales) {
        int64_t count = 0;
        for (const auto& l : q.layers()) {
            if (!l->weight_enabled()) continue;
            const QuantSpec& w = l->weight_spec();
            if (w.info->family != "int" || w.asymmetric) {
                sink.log(LogLevel::Warning, l->name() + ": learned scales apply to symmetric integer weights; " +
                                                w.info->name + " keeps its rule");
                continue;
            }
            l->enable_learned_scales();
            named.emplace_back(l->name() + ".lsq_scale", *l->learned_scales());
            params.push_back(*l->learned_scales());
            decay.push_back(false);
            ++count;
        }
        if (count == 0) throw UserError("training: --lsq needs symmetric integer weight quantizers (int2-int8)");
    }
    AdamW optimizer(params, config.optimizer, decay);
    int64_t start = 0;
    if (!config.checkpoint_dir.empty())
        if (auto info = load_training_checkpoint(config.checkpoint_dir, named, optimizer, config.config_json)) {
            start = info->step;
            result.resumed_from = start;
            sink.log(LogLevel::Info, "resuming from step " + std::to_string(start));
        }
    DataParallel* const dp = config.data_parallel;
    if (dp) {
        // Every rank starts from rank 0's state: its parameters and, when it resumed, its step and
        // optimizer (only rank 0 reads the checkpoint, so the others need no shared folder).
        std::vector<at::Tensor> where{at::tensor(std::vector<int64_t>{start, optimizer.steps_taken()}, at::kLong)};
        dp->broadcast_from_main(where, "broadcast of the resume step");
        start = where[0][0].item<int64_t>();
        const int64_t taken = where[0][1].item<int64_t>();
        result.resumed_from = start;
        std::vector<at::Tensor> state;
        for (const auto& [name, p] : named) state.push_back(p);
        dp->broadcast_from_main(state, "broadcast of the parameters");
        if (start > 0) {
            state = optimizer.first_moments();
            for (const at::Tensor& v : optimizer.second_moments()) state.push_back(v);
            dp->broadcast_from_main(state, "broadcast of the optimizer state");
            optimizer.restore(optimizer.first_moments(), optimizer.second_moments(), taken);
        }
    }
    // A run resumed inside its QAT phase recalibrates as it did at the switch (deterministic).
    if (config.fp_steps > 0 && start >= config.fp_steps && config.before_quantized_steps) config.before_quantized_steps();
    const std::vector<std::vector<uint8_t>> initial_codes = weight_codes(q);
    LrSchedule schedule = config.schedule;
    schedule.total_steps = config.steps;
    // What trains gets requires_grad for the run: the model, or only the adapters (frozen base).
    const auto set_trainable = [&model, adapters, &named](bool on) {
        if (!adapters) return model.set_requires_grad(on);
        for (auto& [name, p] : named) p.requires_grad_(on);
    };
    set_trainable(true);
    struct NoGradAfter {
        std::function<void(bool)> set;
        ~NoGradAfter() { set(false); }
    } restore{set_trainable};

    auto save = [&](int64_t steps_done) {
        if (config.checkpoint_dir.empty()) return;
        sink.progress(0, 1, "checkpoint");
        save_training_checkpoint(config.checkpoint_dir, named, optimizer, TrainingCheckpointInfo{steps_done, config.config_json});
        sink.artifact("checkpoint", config.checkpoint_dir + "/checkpoint");
    };
    std::vector<at::Tensor> best_parameters;  // keep_best: a copy of `named` at the best evaluation
    auto report_eval = [&](int64_t step) {
        result.codes_changed = fraction_changed(initial_codes, weight_codes(q));
        sink.metric(step, "train/codes_changed", result.codes_changed);
        if (evaluate) {
            c10::NoGradGuard no_grad;
            evaluate(step, sink, cancel);
            if (config.keep_best && config.held_out_score)
                if (const std::optional<double> score = config.held_out_score();
                    score && std::isfinite(*score) && (!result.best_score || *score > *result.best_score)) {
                    result.best_score = score;
                    result.best_step = step;
                    best_parameters.clear();
                    for (const auto& [name, p] : named) best_parameters.push_back(p.detach().clone());
                }
        }
    };
    std::optional<FlightRecorder> recorder;
    if (config.record_every > 0) {
        recorder.emplace(q, qad ? teacher : nullptr, config.record_every);
        recorder->record(start, sink);
    }

    int64_t step = start;
    try {
        for (; step < config.steps; ++step) {
            const auto ts = Clock::now();
            if (config.fp_steps > 0) {
                if (step == config.fp_steps) {
                    set_trainable(false);
                    if (config.before_quantized_steps) config.before_quantized_steps();
                    set_trainable(true);
                    sink.log(LogLevel::Info, "step " + std::to_string(step) + ": quantization on (QAT phase)");
                }
                q.set_enabled(step >= config.fp_steps);
            }
            optimizer.zero_grad();
            double loss_sum = 0, ce_sum = 0, kl_sum = 0, cosine_sum = 0, hidden_sum = 0;
            int64_t tokens = 0;
            double allreduce_seconds = 0;
            for (int64_t micro = 0; micro < config.grad_accumulation; ++micro) {
                cancel.throw_if_cancelled();
                // The flight recorder reads the block outputs of a recorded step's first micro-batch.
                std::optional<FlightRecorder::Capture> capture;
                if (recorder && micro == 0 && recorder->due(step + 1, config.steps)) capture.emplace(*recorder, true);
                if (config.before_micro_batch) config.before_micro_batch(step * config.grad_accumulation + micro);
                // On the model's device (--device): the loss compares its logits with the targets there.
                const Dataset b = batch_on_model_device(
                    model, dp ? dp->shard(data.batch(step * config.grad_accumulation + micro))
                              : data.batch(step * config.grad_accumulation + micro));
                // --precision bf16: forward and loss autocast, backward outside (as torch.autocast).
                std::optional<CudaBf16Autocast> autocast;
                if (config.bf16_autocast) autocast.emplace();
                if (encoder) {
                    const uint64_t micro_index = static_cast<uint64_t>(step * config.grad_accumulation + micro);
                    const EncoderStep e = qad ? encoder_distillation_step(model, *teacher, b, config)
                                              : encoder_contrastive_step(model, b, mix64(config.view_seed ^ mix64(micro_index + 1)));
                    autocast.reset();
                    (e.loss / static_cast<double>(config.grad_accumulation)).backward();
                    loss_sum += e.loss.item<double>();
                    cosine_sum += e.cosine;
                    hidden_sum += e.hidden_mse;
                    tokens += e.tokens;
                    continue;
                }
                const at::Tensor inputs = model_input(model, b.inputs);
                const at::Tensor logits = model.forward(inputs);
                const at::Tensor flat_logits = logits.reshape({-1, logits.size(-1)});
                const at::Tensor ce = at::cross_entropy_loss(flat_logits, b.targets.reshape({-1}), {}, at::Reduction::Mean,
                                                             Dataset::kIgnoreIndex);
                at::Tensor mask;
                at::Tensor t_logits;
                if (qad) {
                    c10::NoGradGuard no_grad;
                    t_logits = teacher->forward(inputs);  // the teacher's logits on this rank's shard
                    mask = config.distill_all_positions ? at::ones_like(b.targets, at::kBool)
                                                        : b.targets.ne(Dataset::kIgnoreIndex);
                }
                // Several ranks: each loss is a mean over the shard's scored positions, so it is
                // weighted by N * (shard's positions) / (global batch's positions); the average of
                // the ranks' gradients is then the gradient of the global batch's mean.
                double ce_share = 1, kl_share = 1;
                if (dp) {
                    const double ce_n = b.targets.ne(Dataset::kIgnoreIndex).sum().item<double>();
                    const double kl_n = qad ? mask.sum().item<double>() : 0.0;
                    const auto t_count = Clock::now();
                    const std::vector<double> total =
                        dp->sum({ce_n, kl_n}, "all-reduce of the scored positions at step " + std::to_string(step));
                    allreduce_seconds += std::chrono::duration<double>(Clock::now() - t_count).count();
                    const double n_ranks = dp->world_size();
                    if (total[0] > 0) ce_share = n_ranks * ce_n / total[0];
                    if (total[1] > 0) kl_share = n_ranks * kl_n / total[1];
                }
                const at::Tensor ce_part = dp ? ce * ce_share : ce;
                at::Tensor loss = ce_part;
                if (qad) {
                    const at::Tensor kl = distillation_kl(t_logits, logits, mask, config.temperature);
                    const at::Tensor kl_part = dp ? kl * kl_share : kl;
                    loss = kl_part * (1.0 - config.ce_weight) + ce_part * config.ce_weight;
                    kl_sum += kl_part.item<double>();
                }
                autocast.reset();
                (loss / static_cast<double>(config.grad_accumulation)).backward();
                loss_sum += loss.item<double>();
                ce_sum += ce_part.item<double>();
                tokens += b.inputs.numel();
            }
            double n = static_cast<double>(config.grad_accumulation);
            std::vector<double> rank_tokens_per_s;
            if (dp) {
                // The global step's numbers: losses are the mean of the ranks' weighted ones.
                const int world = dp->world_size();
                const double own_rate =
                    static_cast<double>(tokens) / std::max(std::chrono::duration<double>(Clock::now() - ts).count(), 1e-9);
                std::vector<double> v = {loss_sum, ce_sum, kl_sum, cosine_sum, hidden_sum, static_cast<double>(tokens)};
                v.resize(6 + static_cast<size_t>(world), 0.0);
                v[6 + static_cast<size_t>(dp->rank())] = own_rate;
                const auto t_reduce = Clock::now();
                v = dp->sum(v, "all-reduce of the losses at step " + std::to_string(step));
                allreduce_seconds += std::chrono::duration<double>(Clock::now() - t_reduce).count();
                loss_sum = v[0];
                ce_sum = v[1];
                kl_sum = v[2];
                cosine_sum = v[3];
                hidden_sum = v[4];
                tokens = static_cast<int64_t>(v[5]);
                rank_tokens_per_s.assign(v.begin() + 6, v.end());
                n *= world;
                allreduce_seconds += dp->average_gradients(params, step);
            }
            const double loss_value = loss_sum / n;
            if (!std::isfinite(loss_value)) {
                sink.metric(step, "train/loss", loss_value);
                throw UserError("training diverged: loss " + std::to_string(loss_value) + " at step " + std::to_string(step) +
                                " (lower the learning rate)");
            }
            const double grad_norm = config.clip_norm > 0 ? clip_grad_norm(params, config.clip_norm)
                                                          : clip_grad_norm(params, std::numeric_limits<double>::infinity());
            const double lr = config.lr_at ? config.lr_at(step) : schedule.at(step);
            optimizer.step(lr);
            if (config.after_optimizer_step) config.after_optimizer_step();
            const double seconds = std::chrono::duration<double>(Clock::now() - ts).count();
            sink.metric(step, "train/loss", loss_value);
            if (encoder && !qad) {
                sink.metric(step, "train/top1", cosine_sum / n);
            } else if (encoder) {
                sink.metric(step, "train/cosine", cosine_sum / n);
                if (config.hidden_weight > 0) sink.metric(step, "train/hidden_mse", hidden_sum / n);
            } else {
                sink.metric(step, "train/ce", ce_sum / n);
                if (qad) sink.metric(step, "train/kl", kl_sum / n);
            }
            sink.metric(step, "train/lr", lr);
            sink.metric(step, "train/grad_norm", grad_norm);
            sink.metric(step, "train/tokens_per_s", static_cast<double>(tokens) / std::max(seconds, 1e-9));
            if (dp) {
                sink.metric(step, "train/allreduce_s", allreduce_seconds);
                for (size_t r = 0; r < rank_tokens_per_s.size(); ++r)
                    sink.metric(step, "train/rank" + std::to_string(r) + "/tokens_per_s", rank_tokens_per_s[r]);
            }
            result.final_loss = loss_value;
            result.tokens += tokens;
            if (recorder) {
                recorder->note_step(qad ? config.ce_weight * ce_sum / n : ce_sum / n, qad ? (1.0 - config.ce_weight) * kl_sum / n : 0.0);
                if (recorder->due(step + 1, config.steps)) recorder->record(step + 1, sink);
            }
            sink.progress(step + 1, config.steps, "train");
            if (config.eval_every > 0 && (step + 1) % config.eval_every == 0 && step + 1 < config.steps) report_eval(step + 1);
            if (config.checkpoint_every > 0 && (step + 1) % config.checkpoint_every == 0 && step + 1 < config.steps)
                save(step + 1);
        }
    } catch (const JobCancelled&) {
        // Pause = stop + resume: keep what the completed steps did.
        save(step);
        throw;
    } catch (const UserError&) {
        // Ctrl-C reaches every rank; one that stopped first closes its connections, and a rank
        // waiting for it in a collective sees that before its own cancellation check.
        if (!dp || !cancel.cancelled()) throw;
        save(step);
        throw JobCancelled();
    }
    result.steps = config.steps;
    report_eval(config.steps);
    save(config.steps);
    if (config.keep_best && result.best_step >= 0) {
        if (result.best_step != config.steps) {
            c10::NoGradGuard no_grad;
            for (size_t i = 0; i < named.size() && i < best_parameters.size(); ++i) named[i].second.copy_(best_parameters[i]);
            sink.log(LogLevel::Info, "keep-best: restored the parameters of step " + std::to_string(result.best_step) +
                                         " (held-out score " + std::to_string(*result.best_score) + ")");
            result.codes_changed = fraction_changed(initial_codes, weight_codes(q));
        }
        sink.metric(config.steps, "train/best_step", static_cast<double>(result.best_step));
    }
    for (const auto& l : q.layers()) l->finish_learned_scales();
    learned.done = true;
    result.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return result;
}

}  // namespace ql
