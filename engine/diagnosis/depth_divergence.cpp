// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/diagnosis/depth_divergence.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "engine/core/errors.h"
#include "engine/diagnosis/hidden_error.h"
#include "engine/diagnosis/token_divergence.h"
#include "engine/eval/evaluator.h"
#include "engine/eval/metrics.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/models/model_device.h"
#include "engine/models/sentence_pooling.h"
#include "engine/formats/tensor_values.h"

namespace ql {
namespace {

constexpr size_t kNoStage = std::numeric_limits<size_t>::max();

// What one tapped forward does with the residual stream.
struct TapPlan {
    size_t replace_at = kNoStage;  // substitute `value` for the stream here
    at::Tensor value;
    std::vector<size_t> record;    // stages copied into the result
    size_t stop_after = kNoStage;  // end the forward after this stage (no output)
};

struct TapResult {
    at::Tensor output;                // undefined when stopped
    std::vector<at::Tensor> stages;   // indexed by stage; undefined where not recorded
};

TapResult tapped_forward(Model& model, const at::Tensor& inputs, const TapPlan& plan, size_t stage_count) {
    TapResult r;
    r.stages.resize(stage_count);
    ScopedResidualTap tap(model.residual_stream(), [&](size_t k, const at::Tensor& x) {
        const at::Tensor v = k == plan.replace_at ? plan.value : x;
        if (std::find(plan.record.begin(), plan.record.end(), k) != plan.record.end()) r.stages[k] = v;
        if (k == plan.stop_after) throw ResidualStreamStop();
        return v;
    });
    try {
        r.output = model.forward(inputs);
    } catch (const ResidualStreamStop&) {
    }
    return r;
}

std::vector<size_t> all_stages(size_t n) {
    std::vector<size_t> v(n);
    for (size_t k = 0; k < n; ++k) v[k] = k;
    return v;
}

std::vector<int64_t> to_ints(const at::Tensor& t) {
    const at::Tensor c = t.to(at::kCPU, at::kLong).contiguous().reshape({-1});
    return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// A quantized layer measured against itself unquantized (see the header).
struct LayerProbe {
    LayerQuantizer* quantizer = nullptr;
    int64_t block = -1;
    bool weight_on = false, input_on = false;
    HiddenErrorSums sums;
    at::Tensor token_error;  // [B, T] of the current batch
};

std::string fallback_decode(const std::vector<int64_t>& ids) {
    std::string s;
    for (int64_t id : ids) s += (s.empty() ? "#" : " #") + std::to_string(id);
    return s;
}

}  // namespace

DivergenceReport measure_divergence(Model& fp, QuantizedModel& quantized, const Dataset& data,
                                    const DepthDivergenceOptions& options, JobSink& sink,
                                    const CancellationToken& cancel) {
    const auto t0 = std::chrono::steady_clock::now();
    Model& qm = quantized.model();
    const ModelConfig& fc = fp.config();
    const ModelConfig& qc = qm.config();
    if (data.kind != Dataset::Kind::Tokens) throw UserError("divergence: " + data.name + " is image data; a transformer needs tokens");
    if (data.size() == 0) throw UserError("divergence: data '" + data.name + "' holds no examples");
    const std::vector<ResidualStage>& stages = fp.residual_stream().stages();
    if (stages.empty())
        throw UserError("divergence: the " + fc.architecture + " model has no residual stream; depth-wise error needs a transformer");
    if (qc.architecture != fc.architecture || qm.residual_stream().stages().size() != stages.size() ||
        qc.hidden_size != fc.hidden_size || qc.vocab_size != fc.vocab_size)
        throw UserError("divergence: the quantized model (" + qc.architecture + ", " + std::to_string(qc.num_layers) +
                        " layers, hidden " + std::to_string(qc.hidden_size) + ") is not the FP model's architecture (" +
                        fc.architecture + ", " + std::to_string(fc.num_layers) + " layers, hidden " +
                        std::to_string(fc.hidden_size) + ")");
    const size_t n_stages = stages.size();
    const int64_t n_blocks = fp.residual_stream().blocks();
    const size_t nb = static_cast<size_t>(n_blocks);
    const bool encoder = fc.architecture == "bert";
    using Decoder = std::function<std::string(const std::vector<int64_t>&)>;
    const Decoder decode = options.decode ? options.decode : Decoder(fallback_decode);
    c10::InferenceMode inference;

    // Quantized Linear layers and the block each belongs to.
    std::vector<LayerProbe> probes;
    for (const auto& l : quantized.layers()) {
        if (l->layer().kind() != LayerKind::Linear || !(l->weight_enabled() || l->input_enabled())) continue;
        LayerProbe p;
        p.quantizer = l.get();
        p.weight_on = l->weight_enabled();
        p.input_on = l->input_enabled();
        for (const ResidualStage& s : stages)
            if (std::find(s.layers.begin(), s.layers.end(), l->name()) != s.layers.end()) p.block = s.block;
        probes.push_back(std::move(p));
    }

    std::vector<HiddenErrorSums> propagated(n_stages), iso_attention(nb), iso_mlp(nb), iso_block(nb);
    std::vector<double> kl_prefix(n_stages, 0.0), kl_iso_attention(nb, 0.0), kl_iso_mlp(nb, 0.0), kl_iso_block(nb, 0.0);
    double kl_final = 0, scored = 0, sentence_cosine = 0;
    TokenDivergenceAccumulator token_stats;
    std::vector<TokenDivergence> worst;
    const int64_t keep = std::max<int64_t>(0, options.worst_tokens);
    const int64_t n = data.size();
    const int64_t bs = std::max<int64_t>(1, options.batch_size);
    sink.progress(0, n, "divergence");
    for (int64_t begin = 0; begin < n; begin += bs) {
        cancel.throw_if_cancelled();
        const Dataset b = batch_on_model_device(fp, slice_dataset(data, begin, bs));
        const at::Tensor in = model_input(fp, b.inputs);
        const at::Tensor targets = b.targets;
        const at::Tensor mask = scored_mask(targets);
        const double batch_scored = mask.sum().item<double>();
        if (batch_scored == 0) continue;
        scored += batch_scored;

        // FP and quantized streams at every stage.
        TapPlan record_all;
        record_all.record = all_stages(n_stages);
        const TapResult f = tapped_forward(fp, in, record_all, n_stages);
        const TapResult q = tapped_forward(qm, in, record_all, n_stages);
        for (size_t k = 0; k < n_stages; ++k) propagated[k].add(q.stages[k], f.stages[k], mask);
        at::Tensor fp_logp;
        if (!encoder) {
            if (f.output.dim() != 3 || f.output.size(-1) != fc.vocab_size)
                throw UserError("divergence: the model does not give token logits [batch, positions, vocab]");
            fp_logp = at::log_softmax(f.output.to(at::kDouble), -1);
        }
        // Sum over the scored positions of KL(FP || the FP model continued from `value` at `stage`).
        auto kl_sum_from = [&](size_t stage, const at::Tensor& value) {
            TapPlan p;
            p.replace_at = stage;
            p.value = value;
            const at::Tensor out = tapped_forward(fp, in, p, n_stages).output;
            const at::Tensor lq = at::log_softmax(out.to(at::kDouble), -1);
            return (fp_logp.exp() * (fp_logp - lq)).sum(-1).clamp_min(0.0).masked_fill(~mask, 0.0).sum().item<double>();
        };

        std::vector<at::Tensor> block_isolated(nb);
        for (int64_t i = 0; i < n_blocks; ++i) {
            cancel.throw_if_cancelled();
            const size_t in_stage = static_cast<size_t>(2 * i), attn = in_stage + 1, out = in_stage + 2;
            const size_t bi = static_cast<size_t>(i);
            TapPlan whole;  // the block on the FP stream: its attention half, then the whole block
            whole.replace_at = in_stage;
            whole.value = f.stages[in_stage];
            whole.record = {attn, out};
            whole.stop_after = out;
            const TapResult w = tapped_forward(qm, in, whole, n_stages);
            TapPlan half;  // the MLP half on the FP stream after the attention half
            half.replace_at = attn;
            half.value = f.stages[attn];
            half.record = {out};
            half.stop_after = out;
            const TapResult m = tapped_forward(qm, in, half, n_stages);
            iso_attention[bi].add(w.stages[attn], f.stages[attn], mask);
            iso_block[bi].add(w.stages[out], f.stages[out], mask);
            iso_mlp[bi].add(m.stages[out], f.stages[out], mask);
            block_isolated[bi] = w.stages[out];
            if (!encoder) {
                kl_iso_attention[bi] += kl_sum_from(attn, w.stages[attn]);
                kl_iso_mlp[bi] += kl_sum_from(out, m.stages[out]);
                kl_iso_block[bi] += kl_sum_from(out, w.stages[out]);
            }
        }
        at::Tensor rank;  // what orders the worst tokens, [B, T]
        std::optional<TokenScores> scores;
        if (!encoder) {
            for (size_t k = 0; k < n_stages; ++k) kl_prefix[k] += kl_sum_from(k, q.stages[k]);
            scores = score_tokens(f.output, q.output, targets);
            kl_final += scores->kl.sum().item<double>();
            token_stats.add(*scores);
            rank = scores->kl;
        } else {
            rank = token_relative_error(q.output, f.output).masked_fill(~mask, 0.0);
            const at::Tensor ones = at::ones(in.sizes(), in.options());
            const at::Tensor eq = pool_sentence_embeddings(q.output, ones, fc.sentence).to(at::kDouble),
                             ef = pool_sentence_embeddings(f.output, ones, fc.sentence).to(at::kDouble);
            const at::Tensor cos = (eq * ef).sum(-1) / (eq.pow(2).sum(-1) * ef.pow(2).sum(-1)).sqrt().clamp_min(1e-300);
            sentence_cosine += cos.sum().item<double>();
        }

        // Each quantized layer on the inputs of the unquantized forward.
        {
            struct Restore {
                QuantizedModel& q;
                std::vector<std::pair<bool, bool>> on;
                ~Restore() {
                    for (size_t i = 0; i < on.size(); ++i) {
                        q.layers()[i]->set_input_observer({});
                        q.layers()[i]->set_weight_enabled(on[i].first);
                        q.layers()[i]->set_input_enabled(on[i].second);
                    }
                }
            } restore{quantized, {}};
            for (const auto& l : quantized.layers()) {
                restore.on.emplace_back(l->weight_enabled(), l->input_enabled());
                l->set_enabled(false);
            }
            for (LayerProbe& p : probes) {
                p.token_error = at::Tensor();
                p.quantizer->set_input_observer([&p, &mask](const at::Tensor& v) {
                    const QuantizableLayer& layer = p.quantizer->layer();
                    const at::Tensor y = at::linear(v, layer.weight, layer.bias);
                    const at::Tensor xq = p.input_on ? fake_quantize(v, p.quantizer->input_spec_for_forward()) : v;
                    const at::Tensor wq = p.weight_on ? p.quantizer->quantized_weight() : layer.weight;
                    const at::Tensor yq = at::linear(xq, wq, layer.bias);
                    p.token_error = token_relative_error(yq, y);
                    p.sums.add(yq, y, mask);
                });
            }
            qm.forward(in);
        }

        // The worst tokens of this batch, with their curves.
        if (keep > 0) {
            const at::Tensor flat_rank = rank.masked_fill(~mask, -1.0).reshape({-1});
            const int64_t k = std::min<int64_t>(keep, static_cast<int64_t>(batch_scored));
            const at::Tensor top = std::get<1>(flat_rank.topk(k));
            const std::vector<int64_t> picks = to_ints(top);
            const std::vector<int64_t> ids = to_ints(b.inputs);
            const std::vector<int64_t> tgt = to_ints(targets);
            const int64_t T = b.inputs.size(1);
            std::vector<std::vector<double>> prop_tok(nb), iso_tok(nb);
            for (size_t i = 0; i < nb; ++i) {
                prop_tok[i] = to_doubles(token_relative_error(q.stages[2 * i + 2], f.stages[2 * i + 2]));
                iso_tok[i] = to_doubles(token_relative_error(block_isolated[i], f.stages[2 * i + 2]));
            }
            std::vector<std::vector<double>> layer_tok(probes.size());
            for (size_t p = 0; p < probes.size(); ++p)
                if (probes[p].token_error.defined()) layer_tok[p] = to_doubles(probes[p].token_error);
            const std::vector<double> rank_v = to_doubles(rank);
            std::vector<double> kl_v, pft, pqt, pf1, pq1;
            std::vector<int64_t> f1, q1;
            if (scores) {
                pft = to_doubles(scores->p_fp_target);
                pqt = to_doubles(scores->p_q_target);
                pf1 = to_doubles(scores->p_fp_top1);
                pq1 = to_doubles(scores->p_q_top1);
                f1 = to_ints(scores->fp_top1);
                q1 = to_ints(scores->q_top1);
            }
            const std::vector<int64_t> dom = b.domains.defined() ? to_ints(b.domains) : std::vector<int64_t>();
            for (int64_t flat : picks) {
                const int64_t row = flat / T, pos = flat % T;
                TokenDivergence t;
                t.example = begin + row;
                t.position = pos;
                const int64_t from = std::max<int64_t>(0, pos - 39);
                const auto at = [&](int64_t j) { return ids.begin() + row * T + j; };
                if (encoder) {
                    // An encoder's state at a position is that input token's: it is the target shown.
                    t.context = decode(std::vector<int64_t>(at(from), at(pos)));
                    t.target = decode({ids[static_cast<size_t>(flat)]});
                    t.continuation = decode(std::vector<int64_t>(at(pos + 1), at(std::min<int64_t>(T, pos + 9))));
                } else {
                    t.context = decode(std::vector<int64_t>(at(from), at(pos + 1)));
                    t.target = decode({tgt[static_cast<size_t>(flat)]});
                    // What follows the target, as far as the data scores it (up to 8 tokens).
                    std::vector<int64_t> next;
                    for (int64_t j = pos + 1; j < T && j <= pos + 8 && tgt[static_cast<size_t>(row * T + j)] != Dataset::kIgnoreIndex; ++j)
                        next.push_back(tgt[static_cast<size_t>(row * T + j)]);
                    t.continuation = decode(next);
                }
                if (!dom.empty() && dom[static_cast<size_t>(row)] >= 0 &&
                    static_cast<size_t>(dom[static_cast<size_t>(row)]) < data.domain_names.size())
                    t.domain = data.domain_names[static_cast<size_t>(dom[static_cast<size_t>(row)])];
                t.kl = rank_v[static_cast<size_t>(flat)];
                if (scores) {
                    const size_t i = static_cast<size_t>(flat);
                    t.fp_top1 = decode({f1[i]});
                    t.q_top1 = decode({q1[i]});
                    t.p_fp_top1 = pf1[i];
                    t.p_q_top1 = pq1[i];
                    t.p_fp_target = pft[i];
                    t.p_q_target = pqt[i];
                    t.delta_p = pqt[i] - pft[i];
                }
                for (size_t i = 0; i < nb; ++i) {
                    t.block_propagated.push_back(prop_tok[i][static_cast<size_t>(flat)]);
                    t.block_isolated.push_back(iso_tok[i][static_cast<size_t>(flat)]);
                }
                std::vector<std::pair<std::string, double>> layers;
                for (size_t p = 0; p < probes.size(); ++p)
                    if (!layer_tok[p].empty()) layers.emplace_back(probes[p].quantizer->name(), layer_tok[p][static_cast<size_t>(flat)]);
                std::sort(layers.begin(), layers.end(), [](const auto& a, const auto& c) { return a.second > c.second; });
                if (layers.size() > 8) layers.resize(8);
                t.worst_layers = std::move(layers);
                worst.push_back(std::move(t));
            }
            std::stable_sort(worst.begin(), worst.end(), [](const TokenDivergence& a, const TokenDivergence& c) { return a.kl > c.kl; });
            if (static_cast<int64_t>(worst.size()) > keep) worst.resize(static_cast<size_t>(keep));
        }
        sink.progress(std::min(n, begin + bs), n, "divergence");
    }
    if (scored == 0) throw UserError("divergence: data '" + data.name + "' has no scored positions");

    DivergenceReport r;
    r.encoder = encoder;
    r.examples = n;
    r.scored_tokens = static_cast<int64_t>(scored);
    r.split = split_name(data.split);
    r.data = data.name;
    r.embeddings = propagated[0].result();
    r.final_hidden = propagated[n_stages - 1].result();
    if (!encoder) r.embeddings_kl = kl_prefix[0] / scored;
    double isolated_sum = 0;
    for (size_t i = 0; i < nb; ++i) {
        BlockDivergence bd;
        const size_t in_stage = 2 * i, attn = in_stage + 1, out = in_stage + 2;
        bd.name = stages[out].block_name;
        bd.attention.propagated = propagated[attn].result();
        bd.attention.isolated = iso_attention[i].result();
        bd.mlp.propagated = propagated[out].result();
        bd.mlp.isolated = iso_mlp[i].result();
        bd.block.propagated = propagated[out].result();
        bd.block.isolated = iso_block[i].result();
        if (!encoder) {
            bd.attention.kl_propagated = kl_prefix[attn] / scored;
            bd.attention.kl_increment = (kl_prefix[attn] - kl_prefix[in_stage]) / scored;
            bd.attention.kl_isolated = kl_iso_attention[i] / scored;
            bd.mlp.kl_propagated = kl_prefix[out] / scored;
            bd.mlp.kl_increment = (kl_prefix[out] - kl_prefix[attn]) / scored;
            bd.mlp.kl_isolated = kl_iso_mlp[i] / scored;
            bd.block.kl_propagated = kl_prefix[out] / scored;
            bd.block.kl_increment = (kl_prefix[out] - kl_prefix[in_stage]) / scored;
            bd.block.kl_isolated = kl_iso_block[i] / scored;
            isolated_sum += *bd.block.kl_isolated;
        }
        r.blocks.push_back(std::move(bd));
    }
    if (!encoder) {
        r.kl = kl_final / scored;
        r.head_kl_increment = (kl_final - kl_prefix[n_stages - 1]) / scored;
        r.isolated_kl_sum = isolated_sum;
        r.tokens = token_stats.summary();
    } else {
        r.sentence_cosine = sentence_cosine / static_cast<double>(n);
    }
    for (const LayerProbe& p : probes) {
        if (p.sums.empty()) continue;
        const HiddenError e = p.sums.result();
        r.layers.push_back(LayerDivergence{p.quantizer->name(), p.block, e.rel_l2, e.sqnr_db});
    }
    r.worst_tokens = std::move(worst);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace ql
