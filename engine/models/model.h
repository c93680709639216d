// SPDX-License-Identifier: GPL-3.0-or-later
// A model: its config, its parameters under HF names, and a forward pass built from ATen
// operators (so autograd works for QAT/QAD without the LibTorch C++ frontend's heavy headers).
//
// Names: a model reports the names of the HF class QuantLab mirrors — GPT2LMHeadModel
// ("transformer.h.0.attn.c_attn", "lm_head"), LlamaForCausalLM / MistralForCausalLM /
// Qwen2ForCausalLM ("model.layers.0.self_attn.q_proj", "lm_head"), BertModel
// ("encoder.layer.0.attention.self.query", no "bert." prefix). Checkpoints written by the
// related classes are accepted too (GPT2Model without "transformer.", BertFor* with "bert.").
//
// Tied embeddings (tie_embeddings): lm_head is a LinearLayer of its own (own quantizer hooks)
// whose weight is the same at::Tensor as the input embedding's; the parameter is listed once,
// under the embedding's name, and checkpoints need not (but may) hold "lm_head.weight", which
// is then ignored as transformers ignores it.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/models/attention_site.h"
#include "engine/models/kv_cache.h"
#include "engine/models/model_config.h"
#include "engine/models/quantizable_layer.h"
#include "engine/models/residual_stream.h"
#include "engine/models/transformer_ops.h"

namespace ql {

class Model {
public:
    virtual ~Model() = default;
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;

    const ModelConfig& config() const { return config_; }

    // Decoders: input_ids [B, T] int64 -> logits [B, T, vocab] float32 (causal, full sequence,
    // no KV cache). BERT: -> last hidden state [B, T, hidden] with every token attended and
    // token type 0 (BertModel::encode takes a mask and types; sentence_pooling.h for embeddings).
    // MLP: inputs [B, input_size] float32 -> logits [B, classes]; CNN: [B, C, S, S] -> [B, classes].
    // Bad inputs (dtype, shape, ids out of range, too long) throw UserError.
    virtual at::Tensor forward(const at::Tensor& inputs) = 0;

    // Decoders (text generation): the logits [B, T, vocab] of input_ids [B, T] that follow the
    // cache's length() positions already stored, reading and extending `cache` (one entry per
    // attention site); forward(ids) equals forward_cached over any split of ids into consecutive
    // parts with one cache. With last_only, the logits of the last position alone [B, 1, vocab]
    // (generation needs no others: the output projection of a long prompt is skipped). Other
    // models: UserError (generates_text() is false).
    virtual at::Tensor forward_cached(const at::Tensor& input_ids, KvCache& cache, bool last_only = false);
    virtual bool generates_text() const { return false; }

    // Token models on a padded batch: input_ids [B, T] with attention_mask [B, T] (non-zero =
    // real token; undefined = all real). Decoders ignore the mask (their attention is causal, so
    // right padding does not change the outputs at real positions); encoders attend only to real
    // tokens. Same outputs as forward().
    virtual at::Tensor forward_padded(const at::Tensor& input_ids, const at::Tensor& attention_mask) {
        (void)attention_mask;
        return forward(input_ids);
    }

    // Sentence encoders (BERT): forward() gives the last hidden state (or MLM logits with an
    // MLM head), sentence_pooling.h the embeddings; the data they read are sentences.
    virtual bool is_encoder() const { return false; }

    // Every parameter under its HF state-dict name ("model.layers.0.self_attn.q_proj.weight"),
    // as the model uses it (GPT-2 Conv1D weights already [out, in]); tied weights once. The
    // tensors are the model's own (shared storage, no copies).
    std::vector<std::pair<std::string, at::Tensor>> named_parameters() const;

    // The parameters as an HF checkpoint of this model holds them: same names, GPT-2 Conv1D
    // weights as [in, out] (contiguous copies), tied lm_head omitted. What an export writes.
    // Names in `skip` are left out without being copied (exports that write those tensors in
    // another form, e.g. packed quantized weights).
    std::vector<std::pair<std::string, at::Tensor>> file_state(const std::set<std::string>& skip = {}) const;

    // The quantizable layers (Linear, Conv2d, Embedding), by HF module name, in forward order.
    // Pointers stay valid for the model's lifetime.
    const std::vector<QuantizableLayer*>& quantizable_layers() const { return layers_; }
    std::vector<LinearLayer*> linear_layers() const;
    std::vector<Conv2dLayer*> conv_layers() const;
    std::vector<EmbeddingLayer*> embedding_layers() const;
    QuantizableLayer* find_layer(const std::string& name) const;  // nullptr when absent

    // Transformers' residual stream between sub-layers (residual_stream.h); no stages for the
    // MLP and CNN.
    ResidualStream& residual_stream() { return residual_; }
    const ResidualStream& residual_stream() const { return residual_; }
    // The attention sites of a decoder (attention_site.h), in forward order; empty for models
    // without a KV cache (BERT, MLP, CNN). Pointers stay valid for the model's lifetime.
    const std::vector<AttentionSite*>& attention_sites() const { return sites_; }

    // Parameter count (tied weights once).
    int64_t parameter_count() const;

    // requires_grad on every parameter (QAT / QAD training).
    void set_requires_grad(bool requires_grad);

    // Checkpoint name handling (load_state): the model's name for a name found in a file
    // (prefix variants), and whether an unknown name may be skipped (buffers such as GPT-2's
    // attn.bias mask, BERT's position_ids and pooler/MLM heads, a tied lm_head).
    virtual std::string canonical_name(const std::string& file_name) const { return file_name; }
    virtual bool ignorable(const std::string& canonical_name) const;

    // Fills every parameter with seeded random values (transformers-style: normal(0, 0.02) for
    // Linear/Embedding weights of transformers, ones/zeros for norms and biases; PyTorch's
    // default U(+-1/sqrt(fan_in)) for the MLP and CNN). Deterministic for a seed.
    void initialise(uint64_t seed);

protected:
    explicit Model(ModelConfig config) : config_(std::move(config)) {}

    enum class Init { Normal002, Ones, Zeros, FanInUniform };
    struct Parameter {
        std::string name;
        at::Tensor* tensor = nullptr;
        Init init = Init::Normal002;
        int64_t fan_in = 0;
        bool transposed_in_file = false;
    };

    // Registration, in forward order; each allocates the tensors (uninitialised) and records
    // the parameters under "<name>.weight" / "<name>.bias". Members must not move afterwards.
    void add_linear(LinearLayer& layer, const std::string& name, int64_t in, int64_t out, bool bias,
                    Init init = Init::Normal002, bool file_layout_in_out = false);
    // A Linear whose weight is `embedding`'s tensor; with a bias_name, a bias parameter [count]
    // of its own under that name (BERT's cls.predictions.bias).
    void add_tied_linear(LinearLayer& layer, const std::string& name, const EmbeddingLayer& embedding,
                         const std::string& bias_name = "");
    void add_embedding(EmbeddingLayer& layer, const std::string& name, int64_t count, int64_t dim);
    void add_conv(Conv2dLayer& layer, const std::string& name, int64_t in, int64_t out, int64_t kernel,
                  int64_t stride, int64_t padding);
    void add_norm(NormParams& norm, const std::string& name, int64_t dim, bool bias);
    void add_attention_site(AttentionSite& site, const std::string& name);  // sizes from config_

    ModelConfig config_;
    ResidualStream residual_;

private:
    at::Tensor& add_parameter(at::Tensor& slot, const std::string& name, std::vector<int64_t> shape, Init init,
                              int64_t fan_in, bool transposed_in_file = false);
    friend class ModelStateLoader;
    std::vector<Parameter> parameters_;
    std::vector<QuantizableLayer*> layers_;
    std::vector<AttentionSite*> sites_;
};

// A model with random weights (seeded, deterministic), e.g. for the built-in models.
// The config is validated (UserError naming the field).
std::unique_ptr<Model> create_model(const ModelConfig& config, uint64_t seed);
// The same with parameters allocated but not initialised: for load_state to fill.
std::unique_ptr<Model> create_model_uninitialised(const ModelConfig& config);

// An HF model folder: config.json + model.safetensors (or model.safetensors.index.json and its
// shards; engine/io/safetensors_checkpoint.h). Weights of any floating dtype (F32, BF16, F16,
// F64, FP8) become float32 parameters. Missing or extra tensors and shape mismatches are
// UserErrors naming the file and tensor (load_state).
std::unique_ptr<Model> load_hf_model(const std::string& folder);

// What load_state did besides filling every parameter.
struct LoadReport {
    std::vector<std::string> ignored;  // file names skipped as buffers / unused heads / tied
};

// Replaces parameters from a name -> tensor map (HF names and file layouts, e.g. GPT-2 Conv1D
// [in, out]; any floating dtype, converted to float32); every parameter must be present with
// the right shape; tied weights may be absent. A name that is neither a parameter nor
// ignorable, a missing parameter, a shape mismatch, two file names for one parameter, or a
// non-finite value are UserErrors naming `source_name` and the tensor. All checks run before
// any parameter is changed.
LoadReport load_state(Model& model, const std::map<std::string, at::Tensor>& state, const std::string& source_name);

}  // namespace ql
