// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF export (engine/export/gguf_export.h): names, q/k permutation, metadata, tokenizer
// metadata, values against QuantLab's own quantizers, checkpoints, errors.
#include "engine/export/gguf_export.h"

#include <ATen/Functions.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "engine/core/errors.h"
#include "engine/loading/model_source.h"
#include "engine/data/dataset.h"
#include "engine/export/gguf_names.h"
#include "engine/export/gguf_tokenizer_metadata.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/io/gguf_file.h"
#include "engine/ptq/ptq_pipeline.h"
#include "engine/quant/quantized_checkpoint.h"
#include "engine/quant/recipe.h"
#include "engine/text/tokenizer.h"
#include "tests/temp_folder.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
const std::string kData = QUANTLAB_TEST_DATA_DIR;
const std::string kLlama = kData + "/models/llama";
const std::string kGpt2 = kData + "/models/gpt2";

at::Tensor as_tensor(const std::vector<float>& v, std::vector<int64_t> shape) {
    return at::tensor(at::ArrayRef<float>(v)).reshape(shape);
}

// The GGUF tensor as a float32 tensor of the model's [out, in] shape.
at::Tensor read_tensor(const GgufFile& f, const std::string& name) {
    const GgufTensorInfo& t = f.tensor(name);
    return as_tensor(f.dequantize(t), std::vector<int64_t>(t.ne.rbegin(), t.ne.rend()));
}

// From float32 weights (--gguf-source f32), so that values compare with QuantLab's own quantizers.
GgufExportResult run(const std::string& model, const std::string& out, const std::string& type, bool force = false) {
    NullJobSink sink;
    CancellationToken cancel;
    GgufExportOptions o;
    o.type = type;
    o.force = force;
    o.source_precision = "f32";
    return export_gguf(model, out, o, sink, cancel);
}

TEST(GgufNames, LlamaQueryKeyPermutationIsConvertHfToGgufs) {
    // One head of 4 rows: halves (0,1 | 2,3) -> pairs (0,2), (1,3) adjacent.
    const at::Tensor w = at::arange(4, at::kFloat).reshape({4, 1});
    EXPECT_TRUE(at::equal(gguf_permute_rows(w, 1).flatten(), at::tensor({0.f, 2.f, 1.f, 3.f})));
    // Two heads of 4 rows each, with 2 columns, and a bias.
    const at::Tensor w2 = at::arange(16, at::kFloat).reshape({8, 2});
    const at::Tensor p = gguf_permute_rows(w2, 2);
    const std::vector<int64_t> order = {0, 2, 1, 3, 4, 6, 5, 7};
    for (int64_t r = 0; r < 8; ++r) EXPECT_TRUE(at::equal(p[r], w2[order[r]])) << r;
    EXPECT_TRUE(at::equal(gguf_unpermute_rows(p, 2), w2));
    EXPECT_TRUE(at::equal(gguf_permute_rows(at::arange(8, at::kFloat), 2), at::tensor({0.f, 2.f, 1.f, 3.f, 4.f, 6.f, 5.f, 7.f})));
    EXPECT_THROW(gguf_permute_rows(at::zeros({6, 2}), 2), UserError);
}

TEST(GgufNames, HfNamesMapToLlamaCppNames) {
    ModelConfig llama;
    llama.architecture = "llama";
    EXPECT_EQ(gguf_tensor_name(llama, "model.embed_tokens.weight")->name, "token_embd.weight");
    EXPECT_EQ(gguf_tensor_name(llama, "model.layers.3.self_attn.q_proj.weight")->name, "blk.3.attn_q.weight");
    EXPECT_EQ(gguf_tensor_name(llama, "model.layers.3.self_attn.q_proj.weight")->permutation, GgufRowPermutation::Query);
    EXPECT_EQ(gguf_tensor_name(llama, "model.layers.3.self_attn.k_proj.weight")->permutation, GgufRowPermutation::Key);
    EXPECT_EQ(gguf_tensor_name(llama, "model.layers.3.self_attn.v_proj.weight")->permutation, GgufRowPermutation::None);
    EXPECT_EQ(gguf_tensor_name(llama, "model.layers.0.self_attn.o_proj.weight")->name, "blk.0.attn_output.weight");
    EXPECT_EQ(gguf_tensor_name(llama, "model.layers.0.post_attention_layernorm.weight")->name, "blk.0.ffn_norm.weight");
    EXPECT_EQ(gguf_tensor_name(llama, "model.layers.0.mlp.gate_proj.weight")->name, "blk.0.ffn_gate.weight");
    EXPECT_EQ(gguf_tensor_name(llama, "model.norm.weight")->name, "output_norm.weight");
    EXPECT_EQ(gguf_tensor_name(llama, "lm_head.weight")->name, "output.weight");
    EXPECT_FALSE(gguf_tensor_name(llama, "model.layers.0.self_attn.rotary_emb.inv_freq"));
    ModelConfig qwen = llama;
    qwen.architecture = "qwen2";
    EXPECT_EQ(gguf_tensor_name(qwen, "model.layers.0.self_attn.q_proj.bias")->name, "blk.0.attn_q.bias");
    EXPECT_EQ(gguf_tensor_name(qwen, "model.layers.0.self_attn.q_proj.bias")->permutation, GgufRowPermutation::None);
    ModelConfig gpt2;
    gpt2.architecture = "gpt2";
    EXPECT_EQ(gguf_tensor_name(gpt2, "transformer.wpe.weight")->name, "position_embd.weight");
    EXPECT_EQ(gguf_tensor_name(gpt2, "transformer.h.1.attn.c_attn.bias")->name, "blk.1.attn_qkv.bias");
    EXPECT_EQ(gguf_tensor_name(gpt2, "transformer.h.1.mlp.c_fc.weight")->name, "blk.1.ffn_up.weight");
    EXPECT_EQ(gguf_tensor_name(gpt2, "transformer.h.1.mlp.c_proj.weight")->name, "blk.1.ffn_down.weight");
    EXPECT_EQ(gguf_tensor_name(gpt2, "transformer.ln_f.bias")->name, "output_norm.bias");
    ModelConfig mlp;  // BERT is written as llama.cpp's bert (gguf_bert_test.cpp); the teaching models are not
    mlp.architecture = "mlp";
    EXPECT_THROW(gguf_architecture(mlp), UserError);
}

TEST(GgufExport, LlamaQ8_0HoldsMetadataNamesAndQuantLabsQuantizedValues) {
    const std::string dir = test::temp_dir("gguf-export");
    const GgufExportResult r = run(kLlama, dir + "/m.gguf", "q8_0");
    EXPECT_EQ(r.architecture, "llama");
    EXPECT_EQ(r.tokenizer_source, "placeholder");
    EXPECT_FALSE(fs::exists(dir + "/m.gguf.partial"));
    const GgufFile f = GgufFile::open(dir + "/m.gguf");
    EXPECT_EQ(f.get("general.architecture").as_string("a"), "llama");
    EXPECT_EQ(f.get("general.file_type").as_uint("t"), 7u);
    EXPECT_EQ(f.get("llama.block_count").as_uint("b"), 2u);
    EXPECT_EQ(f.get("llama.context_length").as_uint("c"), 64u);
    EXPECT_EQ(f.get("llama.embedding_length").as_uint("e"), 64u);
    EXPECT_EQ(f.get("llama.feed_forward_length").as_uint("f"), 96u);
    EXPECT_EQ(f.get("llama.attention.head_count").as_uint("h"), 4u);
    EXPECT_EQ(f.get("llama.attention.head_count_kv").as_uint("h"), 4u);
    EXPECT_EQ(f.get("llama.rope.dimension_count").as_uint("r"), 16u);
    EXPECT_EQ(f.get("llama.rope.freq_base").as_float("r"), 10000.0);
    EXPECT_EQ(f.get("llama.attention.layer_norm_rms_epsilon").as_float("e"), 1e-6f);
    EXPECT_EQ(f.get("tokenizer.ggml.model").as_string("m"), "gpt2");
    EXPECT_EQ(f.get("tokenizer.ggml.tokens").as_strings("t").size(), 128u);
    EXPECT_EQ(f.get("tokenizer.ggml.bos_token_id").as_uint("b"), 1u);
    EXPECT_EQ(f.get("tokenizer.ggml.eos_token_id").as_uint("e"), 2u);
    // 1 + 9 per layer x 2 + norm + output.
    EXPECT_EQ(f.tensors().size(), 21u);
    EXPECT_EQ(f.tensor("blk.1.attn_norm.weight").type, GgmlType::F32);
    EXPECT_EQ(f.tensor("token_embd.weight").type, GgmlType::Q8_0);
    EXPECT_EQ(f.tensor("token_embd.weight").ne, (std::vector<int64_t>{64, 128}));
    EXPECT_EQ(f.tensor("output.weight").type, GgmlType::Q8_0);

    // Values: QuantLab's own gguf_q8_0 fake quantization of the HF weight, rows permuted.
    OpenedModel m = open_model(kLlama);
    std::map<std::string, at::Tensor> p;
    for (const auto& [n, t] : m.model->named_parameters()) p[n] = t;
    QuantOptions q8;
    q8.format = "gguf_q8_0";
    const at::Tensor q = fake_quantize(p["model.layers.0.self_attn.q_proj.weight"], q8);
    EXPECT_TRUE(at::equal(gguf_unpermute_rows(read_tensor(f, "blk.0.attn_q.weight"), 4), q));
    const at::Tensor k = fake_quantize(p["model.layers.1.self_attn.k_proj.weight"], q8);
    EXPECT_TRUE(at::equal(read_tensor(f, "blk.1.attn_k.weight"), gguf_permute_rows(k, 4)));
    EXPECT_TRUE(at::equal(read_tensor(f, "blk.1.ffn_down.weight"), fake_quantize(p["model.layers.1.mlp.down_proj.weight"], q8)));
    EXPECT_TRUE(at::equal(read_tensor(f, "output_norm.weight"), p["model.norm.weight"]));
    fs::remove_all(dir);
}

TEST(GgufExport, Gpt2UsesLlamaCppNamesAndOutInLayout) {
    const std::string dir = test::temp_dir("gguf-export");
    const GgufExportResult r = run(kGpt2, dir + "/g.gguf", "f32");
    EXPECT_EQ(r.architecture, "gpt2");
    const GgufFile f = GgufFile::open(dir + "/g.gguf");
    EXPECT_EQ(f.get("general.architecture").as_string("a"), "gpt2");
    EXPECT_EQ(f.get("gpt2.context_length").as_uint("c"), 32u);
    EXPECT_EQ(f.get("gpt2.feed_forward_length").as_uint("f"), 128u);
    EXPECT_EQ(f.get("gpt2.attention.layer_norm_epsilon").as_float("e"), 1e-5f);
    EXPECT_FALSE(f.find_tensor("output.weight"));  // tied: llama.cpp reuses token_embd
    // c_attn: HF Conv1D [in 32, out 96] -> GGUF ne {32, 96} = the model's [out, in].
    EXPECT_EQ(f.tensor("blk.0.attn_qkv.weight").ne, (std::vector<int64_t>{32, 96}));
    OpenedModel m = open_model(kGpt2);
    std::map<std::string, at::Tensor> p;
    for (const auto& [n, t] : m.model->named_parameters()) p[n] = t;
    EXPECT_TRUE(at::equal(read_tensor(f, "blk.0.attn_qkv.weight"), p["transformer.h.0.attn.c_attn.weight"]));
    EXPECT_TRUE(at::equal(read_tensor(f, "blk.1.ffn_down.weight"), p["transformer.h.1.mlp.c_proj.weight"]));
    EXPECT_TRUE(at::equal(read_tensor(f, "blk.1.attn_norm.bias"), p["transformer.h.1.ln_1.bias"]));
    EXPECT_TRUE(at::equal(read_tensor(f, "position_embd.weight"), p["transformer.wpe.weight"]));
    EXPECT_EQ(f.tensors().size(), 2u + 12u * 2u + 2u);
    fs::remove_all(dir);
}

TEST(GgufExport, CheckpointInAGgufFormatGivesIdenticalValues) {
    const std::string dir = test::temp_dir("gguf-export");
    for (const std::string fmt : {"q4_0", "mxfp4"}) {
        OpenedModel m = open_model(kLlama);
        QuantizedModel q(*m.model, parse_recipe(R"({"algorithm": "max", "quant_cfg": [
            {"quantizer_name": "*weight_quantizer", "cfg": {"format": "gguf_)" + fmt + R"("}}]})", "gguf"));
        DataOptions o;
        o.split = DataSplit::Train;
        o.samples = 4;
        o.sequence_length = 16;
        NullJobSink sink;
        CancellationToken cancel;
        run_ptq_pipeline(q, load_dataset("synthetic:random-tokens", o, m.data), PtqOptions{}, sink, cancel);
        save_quantized_checkpoint(q, kLlama, dir + "/ckpt-" + fmt, false);
        const GgufExportResult r = run(dir + "/ckpt-" + fmt, dir + "/" + fmt + ".gguf", fmt);
        EXPECT_TRUE(r.from_checkpoint);
        for (const auto& w : r.warnings) EXPECT_EQ(w.find("re-quantized"), std::string::npos) << w;
        const GgufFile f = GgufFile::open(dir + "/" + fmt + ".gguf");
        EXPECT_EQ(f.tensor("blk.0.ffn_up.weight").type, *ggml_type_from_name(fmt));
        EXPECT_TRUE(at::equal(read_tensor(f, "blk.0.ffn_up.weight"), q.find("model.layers.0.mlp.up_proj")->quantized_weight()));
        EXPECT_TRUE(at::equal(gguf_unpermute_rows(read_tensor(f, "blk.1.attn_q.weight"), 4),
                              q.find("model.layers.1.self_attn.q_proj")->quantized_weight()));
        EXPECT_TRUE(at::equal(read_tensor(f, "output.weight"), q.find("lm_head")->quantized_weight()));
        // Embeddings, which recipes never quantize, follow llama.cpp's rules for the file type.
        EXPECT_EQ(f.tensor("token_embd.weight").type, *ggml_type_from_name(fmt));
        for (const GgufExportTensor& t : r.tensors)
            if (t.name == "blk.0.ffn_up.weight") EXPECT_EQ(t.rule, "recipe gguf_" + fmt) << t.rule;
    }
    fs::remove_all(dir);
}

TEST(GgufExport, RefusesOverwriteUnknownTypesAndCancelsWithoutAFile) {
    const std::string dir = test::temp_dir("gguf-export");
    std::ofstream(dir + "/x.gguf") << "keep";
    EXPECT_THROW(run(kLlama, dir + "/x.gguf", "q4_0"), UserError);
    EXPECT_THROW(run(kLlama, dir + "/y.gguf", "q9_k"), UserError);
    EXPECT_NO_THROW(run(kLlama, dir + "/x.gguf", "f16", true));
    EXPECT_EQ(GgufFile::open(dir + "/x.gguf").tensor("blk.0.attn_v.weight").type, GgmlType::F16);
    NullJobSink sink;
    CancellationToken cancel;
    cancel.cancel();
    EXPECT_THROW(export_gguf(kLlama, dir + "/c.gguf", GgufExportOptions{}, sink, cancel), JobCancelled);
    EXPECT_FALSE(fs::exists(dir + "/c.gguf"));
    EXPECT_FALSE(fs::exists(dir + "/c.gguf.partial"));
    fs::remove_all(dir);
}

TEST(GgufTokenizerMetadata, ByteLevelBpeIsGpt2WithMergesAndKnownPreTokenizer) {
    const std::string folder = kData + "/tokenizers/llama3-style";
    const Tokenizer tok = Tokenizer::from_file(folder + "/tokenizer.json");
    const int64_t n = static_cast<int64_t>(tok.vocab_size()) + 3;  // embedding padded beyond the tokenizer
    const GgufTokenizerMetadata md = gguf_tokenizer_metadata(folder, n);
    std::map<std::string, GgufValue> kv(md.metadata.begin(), md.metadata.end());
    EXPECT_EQ(kv["tokenizer.ggml.model"].s, "gpt2");
    EXPECT_EQ(kv["tokenizer.ggml.pre"].s, "llama-bpe");
    const auto& tokens = kv["tokenizer.ggml.tokens"].strings;
    ASSERT_EQ(static_cast<int64_t>(tokens.size()), n);
    for (int32_t id = 0; id < static_cast<int32_t>(tok.vocab_size()); ++id) EXPECT_EQ(tokens[id], *tok.id_to_token(id)) << id;
    EXPECT_EQ(tokens[n - 1], "[PAD" + std::to_string(n - 1) + "]");
    const auto types = kv["tokenizer.ggml.token_type"].as_i32s("t");
    EXPECT_EQ(types[n - 1], static_cast<int32_t>(GgufTokenType::Unused));
    EXPECT_EQ(kv["tokenizer.ggml.merges"].strings.size(), tok.description().merges);
    if (tok.special_ids().bos) {
        EXPECT_EQ(kv["tokenizer.ggml.bos_token_id"].u, static_cast<uint64_t>(*tok.special_ids().bos));
        EXPECT_EQ(types[*tok.special_ids().bos], static_cast<int32_t>(GgufTokenType::Control));
    }
    const GgufTokenizerMetadata qwen = gguf_tokenizer_metadata(kData + "/tokenizers/qwen2-style", 1000);
    std::map<std::string, GgufValue> qkv(qwen.metadata.begin(), qwen.metadata.end());
    EXPECT_EQ(qkv["tokenizer.ggml.pre"].s, "qwen2");
    EXPECT_THROW(gguf_tokenizer_metadata(folder, 10), UserError);  // more tokens than embedding rows
}

TEST(GgufTokenizerMetadata, ByteFallbackBpeIsSentencePieceStyleWithByteTokens) {
    const std::string folder = kData + "/tokenizers/llama2-style";
    const Tokenizer tok = Tokenizer::from_file(folder + "/tokenizer.json");
    const GgufTokenizerMetadata md = gguf_tokenizer_metadata(folder, static_cast<int64_t>(tok.vocab_size()));
    std::map<std::string, GgufValue> kv(md.metadata.begin(), md.metadata.end());
    EXPECT_EQ(kv["tokenizer.ggml.model"].s, "llama");
    EXPECT_EQ(kv.count("tokenizer.ggml.merges"), 0u);
    EXPECT_EQ(kv["tokenizer.ggml.scores"].count, tok.vocab_size());
    const auto types = kv["tokenizer.ggml.token_type"].as_i32s("t");
    const auto byte = tok.token_to_id("<0x0A>");
    ASSERT_TRUE(byte);
    EXPECT_EQ(types[*byte], static_cast<int32_t>(GgufTokenType::Byte));
}

}  // namespace
}  // namespace ql
