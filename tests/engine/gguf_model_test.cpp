// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF files as input (engine/loading/gguf_model.h): config from metadata, tensors decoded and
// q/k un-permuted, the tokenizer rebuilt from tokenizer.ggml.*, the file's own types kept, and
// every lying or truncated file refused with the file and field named. transformers reading the
// same files (its own GGUF loader) is scripts/check-gguf-input.
#include "engine/loading/gguf_model.h"

#include <ATen/Functions.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "engine/api/model_api.h"
#include "engine/data/synthetic_tasks.h"
#include "engine/core/errors.h"
#include "engine/export/gguf_export.h"
#include "engine/export/gguf_names.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/io/gguf_file.h"
#include "engine/io/npy_file.h"
#include "engine/io/safetensors_tensors.h"
#include "engine/loading/model_source.h"
#include "engine/text/tokenizer.h"
#include "tests/engine/user_error_text.h"
#include "tests/temp_folder.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
using test::user_error_text;
const std::string kModelData = QUANTLAB_TEST_DATA_DIR;

GgufExportResult export_to(const std::string& model, const std::string& out, const std::string& type, const std::string& source = "f32") {
    NullJobSink sink;
    CancellationToken cancel;
    GgufExportOptions o;
    o.type = type;
    o.source_precision = source;
    o.force = true;
    return export_gguf(model, out, o, sink, cancel);
}

at::Tensor input_ids(const std::string& model) {
    const NdArray a = read_npy(kModelData + "/models/" + model + "/input_ids.npy");
    std::vector<int64_t> ids(a.as<int64_t>(), a.as<int64_t>() + a.numel());
    return at::tensor(at::ArrayRef<int64_t>(ids)).reshape(a.shape);
}

at::Tensor logits(Model& m, const at::Tensor& ids) {
    c10::InferenceMode inference;
    return m.forward(ids);
}

// A GGUF file rebuilt from `src` with its metadata and tensors edited (lying files).
void rewrite(const std::string& src, const std::string& dst,
             const std::function<void(GgufMetadata&)>& edit_metadata,
             const std::function<bool(const GgufTensorInfo&, std::vector<int64_t>&, std::vector<uint8_t>&)>& edit_tensor = nullptr) {
    const GgufFile f = GgufFile::open(src);
    GgufMetadata md = f.metadata();
    edit_metadata(md);
    GgufWriter w(dst, true);
    for (const auto& [k, v] : md)
        if (k != "general.alignment") w.add_metadata(k, v);
    std::vector<std::pair<GgufTensorInfo, std::vector<uint8_t>>> tensors;
    for (const GgufTensorInfo& t : f.tensors()) {
        std::vector<int64_t> ne = t.ne;
        std::vector<uint8_t> bytes(f.tensor_data(t), f.tensor_data(t) + t.size);
        if (edit_tensor && !edit_tensor(t, ne, bytes)) continue;
        GgufTensorInfo info = t;
        info.ne = ne;
        tensors.emplace_back(info, std::move(bytes));
    }
    for (auto& [t, b] : tensors) w.add_tensor(t.name, t.ne, t.type);
    for (auto& [t, b] : tensors) w.write_tensor_data(b.data(), b.size());
    w.commit();
}

// An HF Llama folder of `vocab` tokens with the tokenizer.json of `tokenizer_folder`.
std::string llama_with_tokenizer(const std::string& dir, const std::string& tokenizer_folder, int64_t vocab) {
    const std::string folder = dir + "/" + fs::path(tokenizer_folder).filename().string();
    fs::create_directories(folder);
    std::ifstream in(kModelData + "/models/llama/config.json");
    std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string key = "\"vocab_size\": 128";
    config.replace(config.find(key), key.size(), "\"vocab_size\": " + std::to_string(vocab));
    std::ofstream(folder + "/config.json") << config;
    fs::copy_file(tokenizer_folder + "/tokenizer.json", folder + "/tokenizer.json");
    const std::unique_ptr<Model> m = create_model(read_hf_config(folder + "/config.json"), 7);
    write_safetensors(folder + "/model.safetensors", m->file_state());
    return folder;
}

TEST(GgufModel, F32FilesGiveTheSameModelForLlamaQwen2AndGpt2) {
    const std::string dir = test::temp_dir("gguf-model");
    for (const std::string name : {"llama", "qwen2", "gpt2"}) {
        const std::string src = kModelData + "/models/" + name;
        const std::string file = dir + "/" + name + ".gguf";
        export_to(src, file, "f32");
        ASSERT_TRUE(is_gguf_file(file));
        EXPECT_FALSE(is_gguf_file(src));
        OpenedModel a = open_model(src), b = open_model(file);
        ASSERT_TRUE(b.gguf) << name;
        const ModelConfig &ca = a.model->config(), &cb = b.model->config();
        EXPECT_EQ(cb.architecture, ca.architecture);
        EXPECT_EQ(cb.hidden_size, ca.hidden_size);
        EXPECT_EQ(cb.num_layers, ca.num_layers);
        EXPECT_EQ(cb.num_heads, ca.num_heads);
        EXPECT_EQ(cb.num_kv_heads, ca.num_kv_heads);
        EXPECT_EQ(cb.head_dim, ca.head_dim);
        EXPECT_EQ(cb.intermediate_size, ca.intermediate_size);
        EXPECT_EQ(cb.vocab_size, ca.vocab_size);
        EXPECT_EQ(cb.tie_embeddings, ca.tie_embeddings);
        EXPECT_EQ(cb.attention_bias, ca.attention_bias);
        EXPECT_FLOAT_EQ(static_cast<float>(cb.norm_eps), static_cast<float>(ca.norm_eps));
        // Every parameter equal (q/k un-permuted), so the logits are the same bits.
        auto pa = a.model->named_parameters(), pb = b.model->named_parameters();
        ASSERT_EQ(pa.size(), pb.size());
        for (size_t k = 0; k < pa.size(); ++k) {
            EXPECT_EQ(pa[k].first, pb[k].first);
            EXPECT_TRUE(at::equal(pa[k].second, pb[k].second)) << name << " " << pa[k].first;
        }
        const at::Tensor ids = input_ids(name);
        EXPECT_TRUE(at::equal(logits(*a.model, ids), logits(*b.model, ids))) << name;
    }
    fs::remove_all(dir);
}

TEST(GgufModel, QuantizedFilesDecodeToTheFormatsValuesAndKeepTheirTypes) {
    const std::string dir = test::temp_dir("gguf-model");
    const std::string file = dir + "/q8.gguf";
    export_to(kModelData + "/models/llama", file, "q8_0");
    OpenedModel fp = open_model(kModelData + "/models/llama"), q = open_model(file);
    QuantOptions q8;
    q8.format = "gguf_q8_0";
    std::map<std::string, at::Tensor> p;
    for (const auto& [n, t] : q.model->named_parameters()) p[n] = t;
    for (const auto& [n, t] : fp.model->named_parameters()) {
        if (t.dim() != 2) {
            EXPECT_TRUE(at::equal(p[n], t)) << n;  // norms stay F32
            continue;
        }
        // Q8_0 blocks lie along rows, which the q/k permutation only reorders.
        EXPECT_TRUE(at::equal(p[n], fake_quantize(t, q8))) << n;
    }
    const GgufParameterSource* v = q.gguf->weight_of("model.layers.1.self_attn.v_proj");
    ASSERT_TRUE(v);
    EXPECT_EQ(v->tensor->name, "blk.1.attn_v.weight");
    EXPECT_EQ(v->tensor->type, GgmlType::Q8_0);
    EXPECT_EQ(q.gguf->weight_of("model.layers.0.self_attn.q_proj")->permutation, GgufRowPermutation::Query);

    const ModelSummary s = inspect_model(file);
    ASSERT_TRUE(s.is_gguf);
    EXPECT_EQ(s.gguf.file_type, "MOSTLY_Q8_0");
    EXPECT_EQ(s.gguf.tensors.size(), GgufFile::open(file).tensors().size());
    bool saw_norm = false;
    for (const GgufTensorSummary& t : s.gguf.tensors) {
        if (t.name == "blk.0.attn_norm.weight") {
            saw_norm = true;
            EXPECT_EQ(t.type, "F32");
            EXPECT_EQ(t.parameter, "model.layers.0.input_layernorm.weight");
            EXPECT_DOUBLE_EQ(t.bits_per_weight, 32.0);
        }
        if (t.name == "blk.0.ffn_up.weight") EXPECT_DOUBLE_EQ(t.bits_per_weight, 8.5);
    }
    EXPECT_TRUE(saw_norm);
    for (const LayerSummary& l : s.layers) {
        EXPECT_EQ(l.weight_format, "gguf_q8_0") << l.name;
        EXPECT_DOUBLE_EQ(l.weight_bits, 8.5) << l.name;
        EXPECT_EQ(l.weight_quantizer, "Q8_0 (from file)") << l.name;
    }
    fs::remove_all(dir);
}

TEST(GgufModel, TokenizerFromTheFileEncodesLikeTheOriginal) {
    const std::string dir = test::temp_dir("gguf-model");
    const std::vector<std::string> texts = {"Hello world, this is QuantLab!", "  spaces\tand\nnew lines 12345 678",
                                            "caf\xC3\xA9 na\xC3\xAFve \xE2\x80\x94 unicode", "don't we'll they're I'm"};
    for (const std::string tok : {"llama3-style", "qwen2-style", "gpt2"}) {
        const std::string src_tok = kModelData + "/tokenizers/" + tok;
        const Tokenizer original = Tokenizer::from_file(src_tok + "/tokenizer.json");
        const std::string folder = llama_with_tokenizer(dir, src_tok, static_cast<int64_t>(original.vocab_size()));
        const std::string file = dir + "/" + tok + ".gguf";
        export_to(folder, file, "f16", "f16");
        const OpenedModel m = open_model(file);
        ASSERT_TRUE(m.data.encode_text) << tok;
        for (const std::string& t : texts) {
            const std::vector<int32_t> want32 = original.encode(t, false);
            const std::vector<int64_t> want(want32.begin(), want32.end());
            EXPECT_EQ(m.data.encode_text(t, "test"), want) << tok << ": " << t;
        }
        if (const auto eos = original.special_ids().eos) EXPECT_EQ(m.data.eos_id, *eos) << tok;
    }
    fs::remove_all(dir);
}

TEST(GgufModel, DemoVocabularyAndPlaceholderTokensAreRecognised) {
    const std::string dir = test::temp_dir("gguf-model");
    // The golden Llama has no tokenizer.json: placeholder tokens, no text encoder.
    const std::string file = dir + "/p.gguf";
    export_to(kModelData + "/models/llama", file, "f32");
    const OpenedModel p = open_model(file);
    EXPECT_FALSE(p.is_demo);
    EXPECT_FALSE(p.data.encode_text);
    ASSERT_FALSE(p.gguf->warnings.empty());
    EXPECT_NE(p.gguf->warnings[0].find("cannot be tokenized"), std::string::npos) << p.gguf->warnings[0];
    // The demo's character vocabulary (quantlab.json of a 48-token model), recognised by its tokens.
    const std::string folder = dir + "/demo";
    fs::create_directories(folder);
    std::ifstream in(kModelData + "/models/llama/config.json");
    std::string config((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    config.replace(config.find("\"vocab_size\": 128"), 17, "\"vocab_size\": 48");
    std::ofstream(folder + "/config.json") << config;
    std::string tokens = "{\"vocabulary\": \"quantlab-synthetic-v1\", \"tokens\": [";
    for (int64_t i = 0; i < synthetic_vocab::kSize; ++i) tokens += (i ? ", \"" : "\"") + synthetic_vocab::token_text(i) + "\"";
    std::ofstream(folder + "/quantlab.json") << tokens << "]}";
    write_safetensors(folder + "/model.safetensors", create_model(read_hf_config(folder + "/config.json"), 3)->file_state());
    ASSERT_TRUE(open_model(folder).is_demo);
    const std::string demo = dir + "/demo.gguf";
    export_to(folder, demo, "f32");
    const OpenedModel d = open_model(demo);
    EXPECT_TRUE(d.is_demo);
    EXPECT_EQ(d.data.encode_text("12+3=", "t"), (std::vector<int64_t>{9, 10, 5, 11, 4}));
    EXPECT_EQ(d.data.eos_id, synthetic_vocab::kEos);
    fs::remove_all(dir);
}

TEST(GgufModel, LyingFilesAreUserErrorsNamingFileAndField) {
    const std::string dir = test::temp_dir("gguf-model");
    const std::string good = dir + "/good.gguf";
    export_to(kModelData + "/models/llama", good, "q8_0");
    const std::string bad = dir + "/bad.gguf";
    auto load = [&]() { return user_error_text([&] { open_model(bad); }); };
    auto with_metadata = [&](const std::function<void(GgufMetadata&)>& edit) { rewrite(good, bad, edit); };
    auto set = [&](const std::string& key, const GgufValue& value) {
        with_metadata([&](GgufMetadata& md) {
            for (auto& [k, v] : md)
                if (k == key) v = value;
        });
    };
    auto drop = [&](const std::string& key) {
        with_metadata([&](GgufMetadata& md) {
            md.erase(std::remove_if(md.begin(), md.end(), [&](const auto& kv) { return kv.first == key; }), md.end());
        });
    };

    drop("general.architecture");
    EXPECT_NE(load().find(bad + ": metadata 'general.architecture': missing"), std::string::npos) << load();
    set("general.architecture", GgufValue::string("falcon"));
    EXPECT_NE(load().find("metadata 'general.architecture': 'falcon' is not supported"), std::string::npos) << load();
    drop("llama.block_count");
    EXPECT_NE(load().find(bad + ": metadata 'llama.block_count': missing"), std::string::npos) << load();
    set("llama.block_count", GgufValue::string("two"));
    EXPECT_NE(load().find("metadata 'llama.block_count': expected an integer, found STRING"), std::string::npos) << load();
    set("llama.block_count", GgufValue::u32(3));  // the file has 2 layers
    EXPECT_NE(load().find("tensor 'blk.2.attn_norm.weight' is missing"), std::string::npos) << load();
    set("llama.block_count", GgufValue::u32(1));
    EXPECT_NE(load().find("tensor 'blk.1."), std::string::npos) << load();
    EXPECT_NE(load().find("unexpected tensor"), std::string::npos) << load();
    set("llama.embedding_length", GgufValue::u32(32));
    EXPECT_NE(load().find("dimensions [64, 128], expected [32, 128]"), std::string::npos) << load();
    set("llama.embedding_length", GgufValue::u64(uint64_t{1} << 40));
    EXPECT_NE(load().find("metadata 'llama.embedding_length': "), std::string::npos) << load();
    EXPECT_NE(load().find("out of range"), std::string::npos) << load();
    set("llama.attention.head_count", GgufValue::u32(0));
    EXPECT_NE(load().find("metadata 'llama.attention.head_count': must be positive"), std::string::npos) << load();
    set("llama.attention.head_count_kv", GgufValue::u32(3));
    EXPECT_NE(load().find("num_attention_heads 4 is not divisible by num_key_value_heads 3"), std::string::npos) << load();
    set("llama.rope.dimension_count", GgufValue::u32(8));
    EXPECT_NE(load().find("metadata 'llama.rope.dimension_count': is not the head size 16"), std::string::npos) << load();
    set("llama.rope.freq_base", GgufValue::u32(10000));
    EXPECT_NE(load().find("metadata 'llama.rope.freq_base': expected FLOAT32 or FLOAT64, found UINT32"), std::string::npos) << load();
    with_metadata([&](GgufMetadata& md) {
        for (auto& [k, v] : md) {
            if (k == "tokenizer.ggml.tokens") v = GgufValue::string_array(std::vector<std::string>(200, "x"));
            if (k == "tokenizer.ggml.token_type") v = GgufValue::i32_array(std::vector<int32_t>(200, 1));
        }
    });
    EXPECT_NE(load().find("200 tokens but the model's embedding has 128 rows"), std::string::npos) << load();
    set("tokenizer.ggml.token_type", GgufValue::i32_array({1, 2, 3}));
    EXPECT_NE(load().find("metadata 'tokenizer.ggml.token_type': 3 entries for 128 tokens"), std::string::npos) << load();
    set("tokenizer.ggml.tokens", GgufValue::u32(5));
    EXPECT_NE(load().find("metadata 'tokenizer.ggml.tokens': expected an array of strings"), std::string::npos) << load();
    // Special-token ids outside the vocabulary: generation would index with them.
    for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.padding_token_id"}) {
        with_metadata([&](GgufMetadata& md) {
            md.erase(std::remove_if(md.begin(), md.end(), [&](const auto& kv) { return kv.first == key; }), md.end());
            md.emplace_back(key, GgufValue::u32(5000));
        });
        EXPECT_NE(load().find(bad + ": metadata '" + key + "': 5000 is outside the vocabulary of 128 tokens"), std::string::npos)
            << load();
    }

    // Tensors: a NaN, a missing one, an extra one.
    rewrite(good, bad, [](GgufMetadata&) {}, [](const GgufTensorInfo& t, std::vector<int64_t>&, std::vector<uint8_t>& b) {
        if (t.name == "blk.1.ffn_norm.weight") {
            const float nan = std::nanf("");
            std::memcpy(b.data() + 8, &nan, 4);
        }
        return true;
    });
    EXPECT_NE(load().find("tensor 'blk.1.ffn_norm.weight': non-finite value nan at element 2"), std::string::npos) << load();
    rewrite(good, bad, [](GgufMetadata&) {}, [](const GgufTensorInfo& t, std::vector<int64_t>&, std::vector<uint8_t>&) {
        return t.name != "blk.1.ffn_up.weight";
    });
    EXPECT_NE(load().find(bad + ": tensor 'blk.1.ffn_up.weight' is missing"), std::string::npos) << load();
    {
        const GgufFile f = GgufFile::open(good);
        GgufWriter w(bad, true);
        for (const auto& [k, v] : f.metadata()) w.add_metadata(k, v);
        for (const GgufTensorInfo& t : f.tensors()) w.add_tensor(t.name, t.ne, t.type);
        w.add_tensor("blk.0.attn_rel_b.weight", {4}, GgmlType::F32);
        for (const GgufTensorInfo& t : f.tensors()) w.write_tensor_data(f.tensor_data(t), t.size);
        const float z[4] = {};
        w.write_tensor_data(z, sizeof z);
        w.commit();
    }
    EXPECT_NE(load().find("tensor 'blk.0.attn_rel_b.weight' is not part of a llama model"), std::string::npos) << load();
    // A truncated file: the reader names it.
    {
        std::ifstream in(good, std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::ofstream(bad, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    }
    EXPECT_NE(load().find(bad + ": tensor '"), std::string::npos) << load();
    EXPECT_NE(load().find("truncated file or wrong offset"), std::string::npos) << load();
    // Llama 3.1 RoPE factors have no ModelConfig form.
    const std::string l3 = dir + "/l3.gguf";
    export_to(kModelData + "/models/llama3_gqa", l3, "f32");
    EXPECT_NE(user_error_text([&] { open_model(l3); }).find("tensor 'rope_freqs.weight'"), std::string::npos);
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql
