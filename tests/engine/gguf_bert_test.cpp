// SPDX-License-Identifier: GPL-3.0-or-later
// BERT encoders (all-MiniLM-L6-v2) as llama.cpp's `bert` GGUF architecture: the names, metadata
// and WordPiece vocabulary conversion/bert.py writes (scripts/check-gguf-bert compares whole files
// with convert_hf_to_gguf.py's and runs llama.cpp on them), read back as the same sentence encoder,
// and lying bert files refused with the file and field named.
#include <ATen/Functions.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "engine/core/errors.h"
#include "engine/export/gguf_export.h"
#include "engine/export/gguf_names.h"
#include "engine/io/gguf_file.h"
#include "engine/loading/model_source.h"
#include "engine/models/model_config.h"
#include "tests/engine/user_error_text.h"
#include "tests/peer_paths.h"
#include "tests/temp_folder.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
using test::user_error_text;
const std::string kBertTestData = QUANTLAB_TEST_DATA_DIR;

GgufExportResult export_bert_to(const std::string& model, const std::string& out, const std::string& type) {
    NullJobSink sink;
    CancellationToken cancel;
    GgufExportOptions o;
    o.type = type;
    o.force = true;
    return export_gguf(model, out, o, sink, cancel);
}

const GgufValue& value(const GgufFile& f, const std::string& key) {
    const GgufValue* v = f.find(key);
    if (!v) throw std::runtime_error("missing metadata " + key);
    return *v;
}

// A copy of `src` with its metadata edited and tensors optionally dropped.
void rewrite_gguf(const std::string& src, const std::string& dst, const std::function<void(GgufMetadata&)>& edit,
             const std::string& drop_tensor = "") {
    const GgufFile f = GgufFile::open(src);
    GgufMetadata md = f.metadata();
    edit(md);
    GgufWriter w(dst, true);
    for (const auto& [k, v] : md)
        if (k != "general.alignment") w.add_metadata(k, v);
    std::vector<const GgufTensorInfo*> kept;
    for (const GgufTensorInfo& t : f.tensors())
        if (t.name != drop_tensor) kept.push_back(&t);
    for (const GgufTensorInfo* t : kept) w.add_tensor(t->name, t->ne, t->type);
    for (const GgufTensorInfo* t : kept) w.write_tensor_data(f.tensor_data(*t), t->size);
    w.commit();
}

TEST(GgufBert, TensorNamesAreConvertHfToGgufs) {
    ModelConfig c;
    c.architecture = "bert";
    EXPECT_EQ(gguf_architecture(c), "bert");
    const std::vector<std::pair<std::string, std::string>> want = {
        {"embeddings.word_embeddings.weight", "token_embd.weight"},
        {"embeddings.position_embeddings.weight", "position_embd.weight"},
        {"embeddings.token_type_embeddings.weight", "token_types.weight"},
        {"embeddings.LayerNorm.weight", "token_embd_norm.weight"},
        {"embeddings.LayerNorm.bias", "token_embd_norm.bias"},
        {"encoder.layer.3.attention.self.query.weight", "blk.3.attn_q.weight"},
        {"encoder.layer.3.attention.self.key.bias", "blk.3.attn_k.bias"},
        {"encoder.layer.3.attention.self.value.weight", "blk.3.attn_v.weight"},
        {"encoder.layer.3.attention.output.dense.weight", "blk.3.attn_output.weight"},
        {"encoder.layer.3.attention.output.LayerNorm.bias", "blk.3.attn_output_norm.bias"},
        {"encoder.layer.3.intermediate.dense.weight", "blk.3.ffn_up.weight"},
        {"encoder.layer.3.output.dense.bias", "blk.3.ffn_down.bias"},
        {"encoder.layer.3.output.LayerNorm.weight", "blk.3.layer_output_norm.weight"},
    };
    for (const auto& [hf, gguf] : want) {
        const auto got = gguf_tensor_name(c, hf);
        ASSERT_TRUE(got) << hf;
        EXPECT_EQ(got->name, gguf) << hf;
        EXPECT_EQ(got->permutation, GgufRowPermutation::None) << hf;  // no RoPE: nothing permuted
    }
    // The pooler and the MLM head are not written (BertModel.filter_tensors).
    EXPECT_FALSE(gguf_tensor_name(c, "pooler.dense.weight"));
    EXPECT_FALSE(gguf_tensor_name(c, "cls.predictions.transform.dense.weight"));
}

// The values below are what convert_hf_to_gguf.py (llama-cpp-python 0.3.36's llama.cpp) writes
// for all-MiniLM-L6-v2; scripts/check-gguf-bert compares every key and tensor of the two files.
TEST(GgufBert, MiniLmMetadataAndVocabularyAreConvertHfToGgufs) {
    const std::string dir = test::temp_dir("gguf-bert");
    const std::string file = dir + "/minilm.gguf";
    const GgufExportResult r = export_bert_to(test::minilm_dir(), file, "f32");
    EXPECT_EQ(r.architecture, "bert");
    EXPECT_EQ(r.tensors.size(), 101u);  // 5 embedding tensors + 6 blocks x 16
    const GgufFile f = GgufFile::open(file);
    EXPECT_EQ(value(f, "general.architecture").s, "bert");
    EXPECT_EQ(value(f, "bert.block_count").as_int("k"), 6);
    EXPECT_EQ(value(f, "bert.context_length").as_int("k"), 512);
    EXPECT_EQ(value(f, "bert.embedding_length").as_int("k"), 384);
    EXPECT_EQ(value(f, "bert.feed_forward_length").as_int("k"), 1536);
    EXPECT_EQ(value(f, "bert.attention.head_count").as_int("k"), 12);
    EXPECT_FLOAT_EQ(static_cast<float>(value(f, "bert.attention.layer_norm_epsilon").as_float("k")), 1e-12f);
    EXPECT_EQ(value(f, "bert.attention.causal").type, GgufValueType::BOOL);
    EXPECT_EQ(value(f, "bert.attention.causal").u, 0u);
    EXPECT_EQ(value(f, "bert.pooling_type").as_int("k"), 1);  // 1_Pooling: mean
    EXPECT_FALSE(f.find("bert.vocab_size"));                   // BertModel writes none
    EXPECT_EQ(value(f, "tokenizer.ggml.token_type_count").as_int("k"), 2);
    EXPECT_EQ(value(f, "tokenizer.ggml.model").s, "bert");
    EXPECT_EQ(value(f, "tokenizer.ggml.pre").s, "jina-v2-en");
    const std::vector<std::string> tokens = value(f, "tokenizer.ggml.tokens").as_strings("k");
    const std::vector<int32_t> types = value(f, "tokenizer.ggml.token_type").as_i32s("k");
    ASSERT_EQ(tokens.size(), 30522u);
    EXPECT_EQ(tokens[0], "[PAD]");                  // CONTROL tokens unchanged
    EXPECT_EQ(tokens[101], "[CLS]");
    EXPECT_EQ(tokens[1], "\xE2\x96\x81[unused0]");  // a word start gets U+2581
    EXPECT_EQ(tokens[1996], "\xE2\x96\x81the");
    EXPECT_EQ(tokens[29612], "!");                  // "##!" loses its prefix
    EXPECT_EQ(std::count(types.begin(), types.end(), 3), 5);  // [PAD] [UNK] [CLS] [SEP] [MASK]
    EXPECT_EQ(types[101], 3);
    EXPECT_EQ(types[1996], 1);
    EXPECT_EQ(value(f, "tokenizer.ggml.bos_token_id").as_int("k"), 101);
    EXPECT_EQ(value(f, "tokenizer.ggml.eos_token_id").as_int("k"), 102);
    EXPECT_EQ(value(f, "tokenizer.ggml.seperator_token_id").as_int("k"), 102);
    EXPECT_EQ(value(f, "tokenizer.ggml.unknown_token_id").as_int("k"), 100);
    EXPECT_EQ(value(f, "tokenizer.ggml.padding_token_id").as_int("k"), 0);
    EXPECT_EQ(value(f, "tokenizer.ggml.mask_token_id").as_int("k"), 103);
    EXPECT_FALSE(f.find("tokenizer.ggml.cls_token_id"));
    EXPECT_EQ(value(f, "tokenizer.ggml.normalizer.lowercase").type, GgufValueType::BOOL);
    EXPECT_EQ(value(f, "tokenizer.ggml.normalizer.lowercase").u, 1u);
    // F32 file, 1-D tensors, positions and token types F32 in an F16 file as well.
    for (const GgufTensorInfo& t : f.tensors()) EXPECT_EQ(t.type, GgmlType::F32) << t.name;
    fs::remove_all(dir);
}

TEST(GgufBert, F32FileReadsBackAsTheSameSentenceEncoder) {
    const std::string dir = test::temp_dir("gguf-bert");
    const std::string file = dir + "/minilm.gguf";
    export_bert_to(test::minilm_dir(), file, "f32");
    const OpenedModel hf = open_model(test::minilm_dir());
    const OpenedModel g = open_model(file);
    ASSERT_TRUE(g.gguf);
    const ModelConfig& a = hf.model->config();
    const ModelConfig& b = g.model->config();
    EXPECT_EQ(b.architecture, "bert");
    EXPECT_EQ(b.hidden_size, a.hidden_size);
    EXPECT_EQ(b.num_layers, a.num_layers);
    EXPECT_EQ(b.num_heads, a.num_heads);
    EXPECT_EQ(b.intermediate_size, a.intermediate_size);
    EXPECT_EQ(b.vocab_size, a.vocab_size);
    EXPECT_EQ(b.max_positions, a.max_positions);
    EXPECT_EQ(b.type_vocab_size, a.type_vocab_size);
    EXPECT_EQ(b.activation, a.activation);
    EXPECT_FLOAT_EQ(static_cast<float>(b.norm_eps), static_cast<float>(a.norm_eps));
    EXPECT_EQ(b.sentence.pooling, std::vector<std::string>{"mean"});
    EXPECT_TRUE(g.model->is_encoder());
    // Every parameter bit for bit.
    const auto pa = hf.model->named_parameters();
    const auto pb = g.model->named_parameters();
    ASSERT_EQ(pa.size(), pb.size());
    for (size_t i = 0; i < pa.size(); ++i) {
        EXPECT_EQ(pa[i].first, pb[i].first);
        EXPECT_TRUE(at::equal(pa[i].second, pb[i].second)) << pa[i].first;
    }
    // The tokenizer rebuilt from the phantom-space vocabulary encodes sentences as the original.
    ASSERT_TRUE(g.data.encode_sentence);
    EXPECT_EQ(g.data.pad_id, hf.data.pad_id);
    EXPECT_EQ(g.mask_token_id, hf.mask_token_id);
    for (const std::string t : {"A man is playing a guitar.", "QuantLab's K-quants, don't they?", "Déjà vu: naïve café, 12,345.67!",
                                "unbelievably hyperparameterized tokenization"})
        EXPECT_EQ(g.data.encode_sentence(t, "test", 128), hf.data.encode_sentence(t, "test", 128)) << t;
    fs::remove_all(dir);
}

TEST(GgufBert, LyingBertFilesAreUserErrorsNamingFileAndField) {
    const std::string dir = test::temp_dir("gguf-bert");
    const std::string good = dir + "/good.gguf";
    export_bert_to(kBertTestData + "/models/bert", good, "q8_0");  // the tiny BERT: no tokenizer.json, so its GGUF names the tokens <token_N>
    EXPECT_NO_THROW(open_model(good));
    const std::string bad = dir + "/bad.gguf";
    auto load = [&]() { return user_error_text([&] { open_model(bad); }); };
    auto set = [&](const std::string& key, const GgufValue& v) {
        rewrite_gguf(good, bad, [&](GgufMetadata& md) {
            bool found = false;
            for (auto& [k, old] : md)
                if (k == key) old = v, found = true;
            if (!found) md.emplace_back(key, v);
        });
    };
    set("bert.attention.causal", GgufValue::boolean(true));
    EXPECT_NE(load().find(bad + ": metadata 'bert.attention.causal': true"), std::string::npos) << load();
    set("bert.pooling_type", GgufValue::u32(7));
    EXPECT_NE(load().find(bad + ": metadata 'bert.pooling_type': 7 is not supported"), std::string::npos) << load();
    set("tokenizer.ggml.token_type_count", GgufValue::u32(3));
    EXPECT_NE(load().find(bad + ": metadata 'tokenizer.ggml.token_type_count': differs"), std::string::npos) << load();
    set("bert.attention.head_count", GgufValue::u32(5));
    EXPECT_NE(load().find(bad + ": metadata 'bert.attention.head_count'"), std::string::npos) << load();
    rewrite_gguf(good, bad, [](GgufMetadata&) {}, "token_types.weight");
    EXPECT_NE(load().find(bad + ": tensor 'token_types.weight' is missing"), std::string::npos) << load();
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql
