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

    // Layer-by-layer execution (the sequential PTQ pipeline, engine/ptq/ptq_pipeline.h): a
    // decoder's forward in three parts, so that calibration data can pass one transformer block
    // at a time, with the block's activations and nothing else in memory:
    //   forward(ids) == head(run_block(n - 1, ... run_block(0, embed(ids)))), bit for bit
    // (the same operations, residual stream stages and quantizer hooks included; positions start
    // at 0, no KV cache). embed: ids [B, T] int64 -> hidden [B, T, hidden] float32; run_block:
    // hidden -> hidden (block i = residual stream stages 2i+1, 2i+2); head: the final norm and
    // lm_head, hidden -> logits [B, T, vocab]. block_count() is 0 for models that are not split
    // (BERT, MLP, CNN), whose parts throw std::logic_error.
    virtual int64_t block_count() const { return 0; }
    virtual at::Tensor embed(const at::Tensor& input_ids);
    virtual at::Tensor run_block(int64_t block, const at::Tensor& hidden);
    virtual at::Tensor head(const at::Tensor& hidden);
    // HF names of block i's parameters and quantizable layers ("model.layers.3." prefix), in
    // registration order; the parameters outside every block (embeddings, final norm, lm_head).
    std::vector<std::string> block_parameter_names(int64_t block) const;
    std::vector<std::string> block_layer_names(int64_t block) const;
    std::vector<std::string> unblocked_parameter_names() const;

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
    // file_state() of the named parameters only (in registration order; unknown names ignored).
    std::vector<std::pair<std::string, at::Tensor>> file_state_of(const std::vector<std::string>& names) const;

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
    // Bytes the parameters take as held (stored dtypes; tied weights once).
    int64_t parameter_bytes() const;

    // requires_grad on every parameter (QAT / QAD training). Training needs owned float32
    // parameters: requires_grad = true on a model that keeps weights as stored (below) is a
    // std::logic_error; open such models with WeightStorage::Float32Copy.
    void set_requires_grad(bool requires_grad);

    // Weights as stored (load_state with WeightStorage::AsStored): matrices may be BF16 / F16 /
    // F32 tensors over a copy-on-write file mapping (a write gets private pages; the file is
    // never changed; engine/io/file_bytes.h). Forwards convert
    // them per use (QuantizableLayer::compute_weight). Code that changes a weight in place
    // first makes it an owned float32 tensor here (tied uses follow); layers whose weight is
    // already owned float32 are left as they are. Quantizer caches keyed on the old tensor are
    // invalidated by the new storage, so call these before pinning anything.
    void make_weight_float32(QuantizableLayer& layer);
    void make_parameters_float32();
    // Whether every parameter is an owned float32 tensor (what training and in-place edits need).
    bool parameters_float32() const;
    // Gives back the resident pages of the named parameters (HF names) that still lie in a
    // file mapping (engine/io/file_bytes.h release_mapped_pages): their memory then
    // costs nothing until the next read, which faults them in again from the page cache or the
    // file. Other parameters are untouched. Layer-by-layer jobs call it for finished blocks.
    // Returns the bytes released.
    uint64_t release_parameter_pages(const std::vector<std::string>& names) const;

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
        std::vector<int64_t> shape;  // as the model uses it (the slot may still be unallocated)
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
    void add_norm(NormParams& norm, const std::string& name, int64_t dim, bool bias, Init weight_init = Init::Ones);
    void add_attention_site(AttentionSite& site, const std::string& name);  // sizes from config_
    // std::logic_error unless 0 <= block < block_count().
    void check_block_index(int64_t block) const;

    ModelConfig config_;
    ResidualStream residual_;

private:
    // Registers the parameter; storage comes from allocate_parameters() or load_state.
    void add_parameter(at::Tensor& slot, const std::string& name, std::vector<int64_t> shape, Init init,
                       int64_t fan_in, bool transposed_in_file = false);
    // Owned float32 storage (uninitialised) for every parameter.
    void allocate_parameters();
    // Tied layers share their embedding's tensor again after it was replaced.
    void retie();
    friend class ModelStateLoader;
    friend std::unique_ptr<Model> create_model_uninitialised(const ModelConfig& config);
    std::vector<Parameter> parameters_;
    std::vector<std::pair<QuantizableLayer*, const EmbeddingLayer*>> ties_;
    std::vector<QuantizableLayer*> layers_;
    std::vector<AttentionSite*> sites_;
};

// A model with random weights (seeded, deterministic), e.g. for the built-in models.
// The config is validated (UserError naming the field).
std::unique_ptr<Model> create_model(const ModelConfig& config, uint64_t seed);
// The same with parameters allocated but not initialised: for load_state to fill.
std::unique_ptr<Model> create_model_uninitialised(const ModelConfig& config);

// The same without storage: load_state fills every parameter (WeightStorage::AsStored keeps
// the file's tensors; nothing of the model's size is allocated, so no memory check is made).
std::unique_ptr<Model> create_model_unallocated(const ModelConfig& config);

// How load_state gives parameters their values.
enum class WeightStorage {
    // Owned float32 copies of everything (training, code that edits weights in place).
    Float32Copy,
    // Matrices (Linear / Embedding / Conv weights) in F32, BF16 or F16 keep the given tensor
    // itself, dtype and storage (a zero-copy view of a mapped file stays one; GPT-2 Conv1D
    // weights become a transposed copy in the same dtype); vectors (norms, biases) and other
    // dtypes (F64, FP8 decoded) become owned float32. Inspecting, evaluating, PTQ and exports
    // then cost little beyond the mapping (docs/MODELS.md "Weights as stored").
    AsStored,
};

// An HF model folder: config.json + model.safetensors (or model.safetensors.index.json and its
// shards; engine/io/safetensors_checkpoint.h), weights as `storage` says (AsStored: memory-
// mapped; F64 and FP8 become float32). Missing or extra tensors and shape mismatches are
// UserErrors naming the file and tensor (load_state).
std::unique_ptr<Model> load_hf_model(const std::string& folder, WeightStorage storage = WeightStorage::AsStored);

// What load_state did besides filling every parameter.
struct LoadReport {
    std::vector<std::string> ignored;  // file names skipped as buffers / unused heads / tied
};

// Replaces parameters from a name -> tensor map (HF names and file layouts, e.g. GPT-2 Conv1D
// [in, out]; any floating dtype, stored as `storage` says); every parameter must be present with
// the right shape; tied weights may be absent. A name that is neither a parameter nor
// ignorable, a missing parameter, a shape mismatch, two file names for one parameter, or a
// non-finite value are UserErrors naming `source_name` and the tensor. All checks run before
// any parameter is changed (the finiteness check reads each tensor once and gives a mapped
// tensor's pages back afterwards, so checking a large file does not keep it resident).
LoadReport load_state(Model& model, const std::map<std::string, at::Tensor>& state, const std::string& source_name,
                      WeightStorage storage = WeightStorage::Float32Copy);

}  // namespace ql
