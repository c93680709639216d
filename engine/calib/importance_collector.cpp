// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/calib/importance_collector.h"

#include <ATen/Functions.h>

#include <map>

#include "engine/calib/calibration_forward.h"
#include "engine/core/errors.h"
#include "engine/export/gguf_names.h"

namespace ql {

std::string importance_entry_name(const ModelConfig& config, const std::string& layer, bool process_output) {
    const std::string& a = config.architecture;
    if (a == "llama" || a == "qwen2" || a == "gpt2" || a == "bert") {  // the architectures GGUF files hold
        const auto mapped = gguf_tensor_name(config, layer + ".weight");
        if (!mapped) return "";
        if (mapped->name == "output.weight") return process_output && !config.tie_embeddings ? mapped->name : "";
        return mapped->name.rfind("blk.", 0) == 0 ? mapped->name : "";
    }
    return layer + ".weight";
}

namespace {

struct Accumulator {
    std::string layer;
    at::Tensor sum_sq, sum;  // float64 [in]
    int64_t count = 0;
};

// Puts a hook in front of every collected layer's input quantizer and restores the old hooks on
// destruction (also when the collection throws or is cancelled).
class InputTaps {
public:
    InputTaps(Model& model, std::map<std::string, Accumulator>& acc, const ImportanceCollection& o) {
        for (LinearLayer* l : model.linear_layers()) {
            const std::string name = importance_entry_name(model.config(), l->name, o.process_output);
            if (name.empty()) continue;
            Accumulator& a = acc[name];
            a.layer = l->name;
            saved_.emplace_back(l, l->input_quantizer);
            TensorHook previous = l->input_quantizer;
            l->input_quantizer = [&a, previous](const at::Tensor& x) {
                const int64_t in = x.size(-1);
                const at::Tensor rows = x.detach().reshape({-1, in}).to(at::kDouble);
                if (rows.size(0) >= 16) {  // llama-imatrix: src1->ne[1] < 16 is not collected
                    if (!at::isfinite(rows).all().item<bool>())
                        throw UserError("imatrix: non-finite input to layer " + a.layer);
                    const at::Tensor s2 = (rows * rows).sum(0), s = rows.sum(0);
                    if (!a.sum_sq.defined()) {
                        a.sum_sq = s2;
                        a.sum = s;
                    } else {
                        a.sum_sq.add_(s2);
                        a.sum.add_(s);
                    }
                    a.count += rows.size(0);
                }
                return previous ? previous(x) : x;
            };
        }
    }
    ~InputTaps() {
        for (auto& [layer, hook] : saved_) layer->input_quantizer = hook;
    }
    InputTaps(const InputTaps&) = delete;
    InputTaps& operator=(const InputTaps&) = delete;

private:
    std::vector<std::pair<LinearLayer*, TensorHook>> saved_;
};

std::vector<double> to_vector(const at::Tensor& t) {
    const at::Tensor c = t.to(at::kCPU).contiguous();
    return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

}  // namespace

ImportanceMatrix collect_importance(Model& model, const Dataset& data, const ImportanceCollection& options, JobSink& sink,
                                    const CancellationToken& cancel) {
    if (data.kind != Dataset::Kind::Tokens && model.config().architecture != "mlp" && model.config().architecture != "cnn")
        throw UserError("imatrix: " + data.name + " is not token data");
    std::map<std::string, Accumulator> acc;
    {
        InputTaps taps(model, acc, options);
        if (acc.empty()) throw UserError("imatrix: the model has no Linear layers llama-imatrix would collect");
        run_calibration_forward(model, data, options.batch_size, "imatrix", sink, cancel);
    }
    ImportanceMatrix m;
    for (auto& [name, a] : acc) {
        if (!a.sum_sq.defined()) continue;  // never saw 16 rows at once
        ImportanceEntry e;
        e.name = name;
        e.columns = a.sum_sq.numel();
        // Stored in float32, as llama.cpp's collector accumulates and saves them.
        for (double v : to_vector(a.sum_sq)) e.sum_sq.push_back(static_cast<float>(v));
        for (double v : to_vector(a.sum)) e.sum.push_back(static_cast<float>(v));
        e.counts = {a.count};
        m.entries.push_back(std::move(e));
    }
    if (m.entries.empty())
        throw UserError("imatrix: no layer saw a batch of 16 or more token rows (llama-imatrix ignores smaller ones); use "
                        "longer sequences or larger batches");
    m.sort();
    m.datasets = {options.dataset_name.empty() ? data.name : options.dataset_name};
    m.chunk_size = data.inputs.dim() >= 2 ? data.inputs.size(1) : 1;
    m.chunk_count = data.size();
    return m;
}

}  // namespace ql
