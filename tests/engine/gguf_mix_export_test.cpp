// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF exports with llama.cpp's type mixes (engine/export/gguf_export.h): the plan equals the
// file, fallbacks are listed (and refused under --strict), the F16 source rounding, overrides,
// GGUF sources re-exported, recipes with per-layer GGUF formats written exactly as planned.
// The types and bytes against llama.cpp's own quantizer are scripts/check-gguf-mixes.
#include <ATen/Functions.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "engine/core/errors.h"
#include "engine/export/gguf_export.h"
#include "engine/export/gguf_names.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/io/gguf_file.h"
#include "engine/io/imatrix_file.h"
#include "engine/loading/model_source.h"
#include "engine/quant/quantized_checkpoint.h"
#include "tests/engine/export_test_support.h"
#include "tests/engine/user_error_text.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
using test::user_error_text;

GgufExportResult run(const std::string& model, const std::string& out, GgufExportOptions o) {
    NullJobSink sink;
    CancellationToken cancel;
    o.force = true;
    return export_gguf(model, out, o, sink, cancel);
}

GgufExportOptions type(const std::string& t) {
    GgufExportOptions o;
    o.type = t;
    return o;
}

at::Tensor read_mix_tensor(const GgufFile& f, const std::string& name) {
    const GgufTensorInfo& t = f.tensor(name);
    const std::vector<float> v = f.dequantize(t);
    return at::tensor(at::ArrayRef<float>(v)).reshape(std::vector<int64_t>(t.ne.rbegin(), t.ne.rend()));
}

std::map<std::string, at::Tensor> parameters(const OpenedModel& m) {
    std::map<std::string, at::Tensor> p;
    for (const auto& [n, t] : m.model->named_parameters()) p[n] = t;
    return p;
}

TEST(GgufMixExport, ThePlanIsTheFileAndEveryFallbackIsListed) {
    const std::string dir = test::temp_dir("gguf-mix");
    GgufExportOptions o = type("q4_k_m");
    o.dry_run = true;
    const GgufExportResult plan = run(test::tiny_llama(), dir + "/m.gguf", o);
    EXPECT_TRUE(plan.dry_run);
    EXPECT_FALSE(fs::exists(dir + "/m.gguf"));
    EXPECT_EQ(plan.file_type, 15u);
    EXPECT_EQ(plan.source_precision, "f16");
    // Rows of 64 and 96 elements: no K-quant fits; every matrix falls back and says so.
    std::map<std::string, GgufExportTensor> t;
    for (const auto& x : plan.tensors) t[x.name] = x;
    EXPECT_EQ(t["blk.0.attn_q.weight"].requested, "Q4_K");
    EXPECT_EQ(t["blk.0.attn_q.weight"].type, "Q5_0");
    EXPECT_EQ(t["blk.0.attn_q.weight"].fallback, "ne[0] 64 is not a multiple of 256 (Q4_K) -> Q5_0");
    EXPECT_EQ(t["blk.0.ffn_down.weight"].requested, "Q4_K");  // use_more_bits(i, 2) holds for i = 1 only
    EXPECT_EQ(t["blk.0.ffn_down.weight"].type, "Q5_0");
    EXPECT_EQ(t["blk.1.ffn_down.weight"].requested, "Q6_K");
    EXPECT_EQ(t["blk.1.ffn_down.weight"].type, "Q8_0");
    EXPECT_EQ(t["output.weight"].type, "Q8_0");                 // the output rule itself: no fallback
    EXPECT_TRUE(t["output.weight"].fallback.empty());
    EXPECT_EQ(t["blk.1.attn_norm.weight"].type, "F32");
    EXPECT_EQ(plan.fallbacks.size(), 15u);                      // 7 matrices x 2 layers + token_embd
    EXPECT_NE(plan.fallbacks[0].find(": ne[0] 64 is not a multiple of 256"), std::string::npos) << plan.fallbacks[0];
    // --strict refuses, naming the tensors.
    GgufExportOptions strict = type("q4_k_m");
    strict.strict = true;
    const std::string e = user_error_text([&] { run(test::tiny_llama(), dir + "/s.gguf", strict); });
    EXPECT_NE(e.find("--strict: 15 tensor(s) would not get the type asked for"), std::string::npos) << e;
    EXPECT_FALSE(fs::exists(dir + "/s.gguf"));

    // The file holds exactly the planned types, in the planned (llama.cpp's) order.
    const GgufExportResult r = run(test::tiny_llama(), dir + "/m.gguf", type("q4_k_m"));
    const GgufFile f = GgufFile::open(dir + "/m.gguf");
    ASSERT_EQ(f.tensors().size(), r.tensors.size());
    for (size_t k = 0; k < r.tensors.size(); ++k) {
        EXPECT_EQ(f.tensors()[k].name, r.tensors[k].name);
        EXPECT_EQ(ggml_type_name(f.tensors()[k].type), r.tensors[k].type) << r.tensors[k].name;
        EXPECT_EQ(f.tensors()[k].size, r.tensors[k].bytes);
    }
    EXPECT_EQ(f.get("general.file_type").as_uint("t"), 15u);
    EXPECT_EQ(f.tensors().front().name, "output.weight");
    fs::remove_all(dir);
}

TEST(GgufMixExport, FloatWeightsGoThroughF16AsLlamaQuantizeReadsThem) {
    const std::string dir = test::temp_dir("gguf-mix-f16");
    run(test::tiny_llama(), dir + "/h.gguf", type("q8_0"));
    GgufExportOptions f32 = type("q8_0");
    f32.source_precision = "f32";
    run(test::tiny_llama(), dir + "/s.gguf", f32);
    const OpenedModel m = open_model(test::tiny_llama());
    auto p = parameters(m);
    const GgufFile h = GgufFile::open(dir + "/h.gguf"), s = GgufFile::open(dir + "/s.gguf");
    QuantOptions q8;
    q8.format = "gguf_q8_0";
    const at::Tensor w = p["model.layers.1.mlp.up_proj.weight"];
    EXPECT_TRUE(at::equal(read_mix_tensor(h, "blk.1.ffn_up.weight"), fake_quantize(w.to(at::kHalf).to(at::kFloat), q8)));
    EXPECT_TRUE(at::equal(read_mix_tensor(s, "blk.1.ffn_up.weight"), fake_quantize(w, q8)));
    EXPECT_FALSE(at::equal(read_mix_tensor(h, "blk.1.ffn_up.weight"), read_mix_tensor(s, "blk.1.ffn_up.weight")));
    // Norms stay F32 and are not rounded.
    EXPECT_TRUE(at::equal(read_mix_tensor(h, "blk.1.ffn_norm.weight"), p["model.layers.1.post_attention_layernorm.weight"]));
    // f16 as the file type: the F16 GGUF convert_hf_to_gguf writes.
    run(test::tiny_llama(), dir + "/f16.gguf", type("f16"));
    const GgufFile f = GgufFile::open(dir + "/f16.gguf");
    EXPECT_EQ(f.tensor("blk.0.attn_v.weight").type, GgmlType::F16);
    EXPECT_EQ(f.tensor("blk.0.attn_norm.weight").type, GgmlType::F32);
    EXPECT_EQ(f.get("general.file_type").as_uint("t"), 1u);
    fs::remove_all(dir);
}

TEST(GgufMixExport, OverridesAndBadOptionsAreUserErrorsNamingTheOption) {
    const std::string dir = test::temp_dir("gguf-mix-tt");
    GgufExportOptions o = type("q4_0");
    o.tensor_types = {"attn_v=q8_0", "ffn_.*=f16"};
    o.source_precision = "f32";
    const GgufExportResult r = run(test::tiny_llama(), dir + "/t.gguf", o);
    const GgufFile f = GgufFile::open(dir + "/t.gguf");
    EXPECT_EQ(f.tensor("blk.0.attn_v.weight").type, GgmlType::Q8_0);
    EXPECT_EQ(f.tensor("blk.1.ffn_down.weight").type, GgmlType::F16);
    EXPECT_EQ(f.tensor("blk.1.attn_q.weight").type, GgmlType::Q4_0);
    for (const auto& t : r.tensors)
        if (t.name == "blk.0.attn_v.weight") EXPECT_EQ(t.rule, "--tensor-type attn_v=q8_0");
    auto error = [&](GgufExportOptions x) { return user_error_text([&] { run(test::tiny_llama(), dir + "/e.gguf", x); }); };
    GgufExportOptions bad = type("q4_0");
    bad.tensor_types = {"attn_v"};
    EXPECT_NE(error(bad).find("--tensor-type 'attn_v': expected REGEX=TYPE"), std::string::npos) << error(bad);
    bad.tensor_types = {"attn_v=q3_xx"};
    EXPECT_NE(error(bad).find("--tensor-type 'attn_v=q3_xx': unknown tensor type 'q3_xx'"), std::string::npos) << error(bad);
    bad.tensor_types = {"attn_v(=q8_0"};
    EXPECT_NE(error(bad).find("not a valid regular expression"), std::string::npos) << error(bad);
    bad = type("q4_0");
    bad.source_precision = "f8";
    EXPECT_NE(error(bad).find("--gguf-source must be f16, bf16 or f32"), std::string::npos);
    bad = type("q4_0");
    bad.imatrix = dir + "/missing.gguf";
    EXPECT_NE(error(bad).find(dir + "/missing.gguf: cannot open"), std::string::npos) << error(bad);
    // An imatrix entry of the wrong length.
    ImportanceMatrix im;
    im.datasets = {"d"};
    im.chunk_size = 16;
    im.chunk_count = 1;
    ImportanceEntry e;
    e.name = "blk.0.attn_q.weight";
    e.columns = 32;
    e.sum_sq.assign(32, 1.0);
    e.counts = {16};
    im.entries = {e};
    write_imatrix(im, dir + "/wrong.gguf", ImatrixFormat::Gguf, true);
    bad.imatrix = dir + "/wrong.gguf";
    bad.type = "q8_0";  // Q8_0 ignores importance, but the sizes are still checked as llama-quantize does
    EXPECT_NE(error(bad).find("entry 'blk.0.attn_q.weight' has 32 values, the tensor needs 64"), std::string::npos) << error(bad);
    fs::remove_all(dir);
}

TEST(GgufMixExport, GgufSourcesRequantizeFromTheirValuesAndCopyUnchangedTensors) {
    const std::string dir = test::temp_dir("gguf-mix-src");
    GgufExportOptions f32 = type("f32");
    run(test::tiny_llama(), dir + "/a.gguf", f32);
    GgufExportOptions q8 = type("q8_0");
    q8.source_precision = "f32";
    run(test::tiny_llama(), dir + "/direct.gguf", q8);
    const GgufExportResult again = run(dir + "/a.gguf", dir + "/again.gguf", type("q8_0"));
    EXPECT_TRUE(again.from_gguf);
    EXPECT_EQ(again.source_precision, "f32");
    EXPECT_EQ(again.tokenizer_source, "gguf");
    const GgufFile d = GgufFile::open(dir + "/direct.gguf"), g = GgufFile::open(dir + "/again.gguf");
    ASSERT_EQ(d.tensors().size(), g.tensors().size());
    for (const GgufTensorInfo& t : d.tensors()) {
        const GgufTensorInfo& u = g.tensor(t.name);
        EXPECT_EQ(u.type, t.type) << t.name;
        EXPECT_EQ(std::string(reinterpret_cast<const char*>(g.tensor_data(u)), u.size),
                  std::string(reinterpret_cast<const char*>(d.tensor_data(t)), t.size))
            << t.name;
    }
    EXPECT_EQ(g.get("tokenizer.ggml.tokens").as_strings("t"), d.get("tokenizer.ggml.tokens").as_strings("t"));
    // Same type again: every tensor copied byte for byte.
    const GgufExportResult copy = run(dir + "/again.gguf", dir + "/copy.gguf", type("q8_0"));
    for (const auto& t : copy.tensors) EXPECT_TRUE(t.copied) << t.name;
    fs::remove_all(dir);
}

TEST(GgufMixExport, PerLayerRecipeFormatsAreWrittenExactlyAsPlanned) {
    const std::string dir = test::temp_dir("gguf-mix-recipe");
    test::QuantizedTiny q = test::quantize_tiny(R"({"algorithm": "max", "quant_cfg": [
        {"quantizer_name": "*self_attn*weight_quantizer", "cfg": {"format": "gguf_q8_0"}},
        {"quantizer_name": "*mlp*weight_quantizer", "cfg": {"format": "gguf_q4_1"}},
        {"quantizer_name": "*down_proj*weight_quantizer", "cfg": {"format": "gguf_mxfp4"}},
        {"quantizer_name": "*lm_head*weight_quantizer", "cfg": {"format": "nvfp4"}}]})");
    save_quantized_checkpoint(*q.q, test::tiny_llama(), dir + "/ckpt", false);
    const GgufExportResult r = run(dir + "/ckpt", dir + "/r.gguf", type("q4_0"));
    const GgufFile f = GgufFile::open(dir + "/r.gguf");
    std::map<std::string, std::string> planned;
    for (const auto& t : r.tensors) planned[t.name] = t.type;
    for (const GgufTensorInfo& t : f.tensors()) EXPECT_EQ(ggml_type_name(t.type), planned[t.name]) << t.name;
    EXPECT_EQ(planned["blk.0.attn_k.weight"], "Q8_0");
    EXPECT_EQ(planned["blk.1.ffn_gate.weight"], "Q4_1");
    EXPECT_EQ(planned["blk.1.ffn_down.weight"], "MXFP4");
    EXPECT_EQ(planned["output.weight"], "Q8_0");  // nvfp4 has no GGUF form: the q4_0 rules (Q6_K -> Q8_0 for 64 wide)
    EXPECT_EQ(planned["token_embd.weight"], "Q4_0");
    // The recipe's own GGUF formats fit their rows (64 and 96 wide, blocks of 32): no fallback.
    // The one fallback is output.weight under the q4_0 rules, exactly as llama.cpp has it: its
    // output rule checks ne[0] against the block of the base type (Q4_0: 32), picks Q6_K, and
    // tensor_type_fallback then finds 64 not a multiple of 256 and counts a fallback to Q8_0
    // (llama-cpp-python 0.3.36's llama_model_quantize on this model's F32 GGUF, ftype Q4_0:
    // "output.weight - ncols 64 not divisible by 256 (required for type q6_K) -> falling back to
    // q8_0", "1 of 21 tensor(s) required fallback quantization").
    EXPECT_EQ(r.fallbacks, std::vector<std::string>{"output.weight: ne[0] 64 is not a multiple of 256 (Q6_K) -> Q8_0"});
    for (const auto& t : r.tensors)
        if (t.name == "output.weight") EXPECT_EQ(t.requested, "Q6_K");
        else EXPECT_EQ(t.fallback, "") << t.name;
    bool warned = false;
    for (const auto& w : r.warnings) warned |= w.find("recipe format 'nvfp4' has no GGUF form") != std::string::npos;
    EXPECT_TRUE(warned);
    // The recipe's layers hold QuantLab's quantized values bit for bit.
    EXPECT_TRUE(at::equal(read_mix_tensor(f, "blk.1.ffn_down.weight"), q.q->find("model.layers.1.mlp.down_proj")->quantized_weight()));
    EXPECT_TRUE(at::equal(read_mix_tensor(f, "blk.0.ffn_up.weight"), q.q->find("model.layers.0.mlp.up_proj")->quantized_weight()));
    EXPECT_TRUE(at::equal(gguf_unpermute_rows(read_mix_tensor(f, "blk.0.attn_k.weight"), 4),
                          q.q->find("model.layers.0.self_attn.k_proj")->quantized_weight()));
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql
