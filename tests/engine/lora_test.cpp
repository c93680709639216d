// SPDX-License-Identifier: GPL-3.0-or-later
// LoRA and QLoRA (engine/lora, engine/api/lora_api.h) on the golden tiny Llama: the adapter's
// forward against its definition, PEFT's default init, dropout masks, LoftQ, merging, the base
// fingerprint, the PEFT folder, the memory estimate, and training through the facade, including
// a stopped run that resumes bit-exactly.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "engine/api/lora_api.h"
#include "engine/core/errors.h"
#include "engine/eval/evaluator.h"
#include "engine/formats/tensor_quantize.h"
#include "engine/io/npy_file.h"
#include "engine/io/safetensors_checkpoint.h"
#include "engine/io/safetensors_tensors.h"
#include "engine/loading/model_source.h"
#include "engine/lora/base_fingerprint.h"
#include "engine/lora/loftq.h"
#include "engine/lora/lora_adapters.h"
#include "engine/lora/lora_base.h"
#include "engine/lora/lora_memory.h"
#include "engine/lora/lora_merge.h"
#include "engine/lora/peft_adapter.h"
#include "engine/quant/quant_plan.h"
#include "engine/quant/recipe.h"
#include "tests/engine/user_error_text.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
const std::string kLoraLlama = std::string(QUANTLAB_TEST_DATA_DIR) + "/models/llama";

std::string lora_temp_dir() {
    char tmpl[] = "/tmp/quantlab-lora-XXXXXX";
    return mkdtemp(tmpl);
}

at::Tensor lora_ids() { return at::arange(0, 24, at::kLong).remainder(100).view({2, 12}); }

at::Tensor logits_of(Model& m) {
    c10::NoGradGuard no_grad;
    return m.forward(lora_ids());
}

// Fills every adapter with seeded normal values (B non-zero), as a trained adapter would be.
void randomise(LoraAdapters& a, double scale = 0.05) {
    c10::NoGradGuard no_grad;
    at::manual_seed(7);
    for (LoraLayer& l : a.layers()) {
        l.A.copy_(at::randn(l.A.sizes()) * scale);
        l.B.copy_(at::randn(l.B.sizes()) * scale);
    }
}

struct QuantizedLlama {
    OpenedModel opened;
    std::unique_ptr<QuantizedModel> q;
};

QuantizedLlama quantized_llama(const std::string& recipe_json) {
    QuantizedLlama s;
    s.opened = open_model(kLoraLlama);
    s.q = std::make_unique<QuantizedModel>(*s.opened.model, parse_recipe(recipe_json, "test recipe"));
    s.q->set_enabled(true);
    return s;
}

TEST(LoraSettings, TargetsMatchGlobsAndModuleNamesAsPeftDoes) {
    EXPECT_TRUE(lora_target_matches({"q_proj"}, "model.layers.0.self_attn.q_proj", false));
    EXPECT_FALSE(lora_target_matches({"q_proj"}, "model.layers.0.self_attn.kq_proj", false));
    EXPECT_TRUE(lora_target_matches({"*mlp*"}, "model.layers.1.mlp.up_proj", false));
    EXPECT_TRUE(lora_target_matches({"all-linear"}, "model.layers.1.mlp.up_proj", false));
    EXPECT_FALSE(lora_target_matches({"all-linear"}, "lm_head", true));
    EXPECT_TRUE(lora_target_matches({"lm_head"}, "lm_head", true));
    EXPECT_EQ(parse_lora_targets(" q_proj, ,v_proj "), (std::vector<std::string>{"q_proj", "v_proj"}));
    OpenedModel m = open_model(kLoraLlama);
    LoraSettings s;
    EXPECT_EQ(resolve_lora_targets(*m.model, s).size(), 14u);  // 2 blocks x 7 Linear layers, lm_head left out
    s.targets = {"q_proj", "v_proj"};
    EXPECT_EQ(resolve_lora_targets(*m.model, s),
              (std::vector<std::string>{"model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.v_proj",
                                        "model.layers.1.self_attn.q_proj", "model.layers.1.self_attn.v_proj"}));
    s.targets = {"qproj"};
    EXPECT_NE(test::user_error_text([&] { resolve_lora_targets(*m.model, s); }).find("'qproj' matches no Linear layer"),
              std::string::npos);
    s.targets = {"q_proj"};
    s.rank = 0;
    EXPECT_NE(test::user_error_text([&] { s.validate(); }).find("--rank"), std::string::npos);
}

TEST(LoraAdapters, DefaultInitIsPeftsKaimingUniformWithBZeroAndLeavesTheModelUnchanged) {
    OpenedModel m = open_model(kLoraLlama);
    const at::Tensor before = logits_of(*m.model);
    LoraSettings s;
    s.seed = 3;
    LoraAdapters a(*m.model, s);
    for (const LoraLayer& l : a.layers()) {
        const double bound = 1.0 / std::sqrt(static_cast<double>(l.A.size(1)));
        EXPECT_LE(l.A.abs().max().item<double>(), bound);
        EXPECT_GT(l.A.abs().max().item<double>(), 0.9 * bound);  // uniform over the whole range
        EXPECT_EQ(l.B.abs().max().item<double>(), 0.0);
        EXPECT_EQ(l.A.size(0), 8);
    }
    EXPECT_TRUE(at::equal(logits_of(*m.model), before));  // B = 0: exactly the base
    // Seeded: the same seed draws the same A, another seed another.
    OpenedModel m2 = open_model(kLoraLlama);
    LoraAdapters same(*m2.model, s);
    EXPECT_TRUE(at::equal(same.layers()[3].A, a.layers()[3].A));
    EXPECT_EQ(a.parameter_count(), 2 * (8 * (64 + 64) * 4 + 8 * (64 + 96) * 3));
}

TEST(LoraAdapters, ForwardAddsTheScaledLowRankUpdateOfTheRawInput) {
    QuantizedLlama b = quantized_llama(kQloraRecipe);
    Model& model = *b.opened.model;
    LinearLayer& q_proj = *dynamic_cast<LinearLayer*>(model.find_layer("model.layers.0.self_attn.q_proj"));
    const at::Tensor x = at::randn({3, 64});
    at::Tensor base_y;
    {
        c10::NoGradGuard no_grad;
        base_y = q_proj.forward(x);
    }
    LoraSettings s;
    s.rank = 4;
    s.alpha = 12;  // scaling 3
    LoraAdapters a(model, s);
    randomise(a);
    const LoraLayer& l = *a.find("model.layers.0.self_attn.q_proj");
    c10::NoGradGuard no_grad;
    const at::Tensor want = base_y + at::matmul(at::matmul(x, l.A.t()), l.B.t()) * 3.0;
    EXPECT_TRUE(at::allclose(q_proj.forward(x), want, 1e-6, 1e-6));
    a.set_enabled(false);
    EXPECT_TRUE(at::equal(q_proj.forward(x), base_y));
}

TEST(LoraAdapters, DropoutMasksAreAFunctionOfTheMicroBatchAndOffInEvaluation) {
    OpenedModel m = open_model(kLoraLlama);
    LoraSettings s;
    s.dropout = 0.5;
    LoraAdapters a(*m.model, s);
    randomise(a, 0.3);
    const at::Tensor plain = logits_of(*m.model);
    a.set_training(true);
    a.set_micro_batch(4);
    const at::Tensor four = logits_of(*m.model);
    a.set_micro_batch(5);
    const at::Tensor five = logits_of(*m.model);
    a.set_micro_batch(4);
    EXPECT_TRUE(at::equal(logits_of(*m.model), four));
    EXPECT_FALSE(at::equal(four, five));
    EXPECT_FALSE(at::equal(four, plain));
    a.set_training(false);
    EXPECT_TRUE(at::equal(logits_of(*m.model), plain));
}

TEST(Loftq, StartsCloserToTheFullPrecisionWeightsThanTheQuantizedBase) {
    QuantizedLlama b = quantized_llama(kQloraRecipe);
    std::map<std::string, at::Tensor> w;
    for (LinearLayer* l : b.opened.model->linear_layers()) w[l->name] = l->weight.clone();
    LoraSettings s;
    s.rank = 8;
    s.alpha = 32;  // scaling 4: the factors carry 1 / sqrt(4) each
    LoraAdapters a(*b.opened.model, s);
    const LoftqReport r = loftq_initialise(*b.q, a, 2);
    ASSERT_EQ(r.layers.size(), 14u);
    for (const LoftqLayer& l : r.layers) {
        EXPECT_GT(l.base_error, 0.05) << l.module;  // NF4 of a random matrix: ~10 % error
        EXPECT_LT(l.loftq_error, 0.9 * l.base_error) << l.module;
        // Recompute it: Q (what the quantizer makes of the new base weight) + s B A against W.
        const LoraLayer& ad = *a.find(l.module);
        const at::Tensor qw = b.q->find(l.module)->quantized_weight();
        const at::Tensor approx = qw + a.delta(ad);
        EXPECT_NEAR((w[l.module] - approx).norm().item<double>() / w[l.module].norm().item<double>(), l.loftq_error, 1e-5);
    }
}

// LoftQ's base weights are float32 values off a BF16 model's grid: a base reopened from them holds
// them exactly (float32 copies), not rounded into the BF16 weights the model keeps as stored.
TEST(Loftq, ABf16BaseReopensWithLoftqsFloat32WeightsExactly) {
    const std::string dir = lora_temp_dir();
    fs::copy_file(kLoraLlama + "/config.json", dir + "/config.json");
    const std::string layer = "model.layers.0.self_attn.q_proj";
    at::Tensor chosen;
    {
        const SafetensorsCheckpoint source = SafetensorsCheckpoint::open(kLoraLlama);
        std::vector<std::pair<std::string, at::Tensor>> bf16;
        for (const std::string& name : source.names()) bf16.emplace_back(name, load_float32(source, name).to(at::kBFloat16));
        write_safetensors(dir + "/model.safetensors", bf16);
        // What LoftQ would write: the weight moved by less than a BF16 step, so off its grid.
        const at::Tensor w = load_float32(source, layer + ".weight");
        chosen = w + 1e-4 * at::sign(w);
        write_safetensors(dir + "/loftq.safetensors", {{layer + ".weight", chosen}});
    }
    ASSERT_FALSE(at::equal(chosen.to(at::kBFloat16).to(at::kFloat), chosen));  // BF16 would round it
    LoraBaseSource s;
    s.model = dir;
    s.recipe = kQloraRecipe;
    s.loftq_weights = dir + "/loftq.safetensors";
    CancellationToken cancel;
    const LoraBase b = open_lora_base(s, "cpu", cancel);
    const at::Tensor& held = dynamic_cast<LinearLayer*>(b.opened.model->find_layer(layer))->weight;
    EXPECT_EQ(held.scalar_type(), at::kFloat);
    EXPECT_TRUE(at::equal(held, chosen));
    // Without LoftQ weights the same base keeps its weights as stored.
    s.loftq_weights.clear();
    const LoraBase plain = open_lora_base(s, "cpu", cancel);
    EXPECT_EQ(dynamic_cast<LinearLayer*>(plain.opened.model->find_layer(layer))->weight.scalar_type(), at::kBFloat16);
    fs::remove_all(dir);
}

TEST(LoraMerge, TheFullPrecisionMergeComputesTheAdaptedModelAndTheRequantizedOneMovesCodes) {
    QuantizedLlama adapted = quantized_llama(kQloraRecipe);
    QuantizedLlama merged = quantized_llama(kQloraRecipe);
    LoraSettings s;
    LoraAdapters a(*adapted.opened.model, s), b(*merged.opened.model, s);
    randomise(a);
    randomise(b);
    const at::Tensor reference = logits_of(*adapted.opened.model);
    const std::vector<MergedLayer> rows = merge_adapters(*merged.q, b);
    ASSERT_EQ(rows.size(), 14u);
    const at::Tensor requantized = logits_of(*merged.opened.model);
    double changed = 0;
    for (const MergedLayer& r : rows) {
        EXPECT_EQ(r.format, "nf4");
        EXPECT_GT(r.codes_changed, 0.0) << r.module;
        EXPECT_LT(r.codes_changed, 1.0) << r.module;
        EXPECT_GT(r.requant_error, 0.0) << r.module;
        changed += r.codes_changed;
    }
    EXPECT_FALSE(at::allclose(requantized, reference, 1e-4, 1e-4));
    dequantize_unmerged(*merged.q, b);
    EXPECT_TRUE(at::allclose(logits_of(*merged.opened.model), reference, 1e-4, 1e-5));
    // The HF state of the full-precision merge loads into a plain model and computes the same.
    OpenedModel plain = open_model(kLoraLlama);
    std::map<std::string, at::Tensor> state;
    for (const auto& [name, t] : full_precision_state(*merged.q)) state[name] = t;
    load_state(*plain.model, state, "merged");
    EXPECT_TRUE(at::allclose(logits_of(*plain.model), reference, 1e-4, 1e-5));
}

TEST(BaseFingerprint, TellsFormatsBlockSizesDoubleQuantAndCodesApart) {
    const auto fp = [](const std::string& recipe) {
        QuantizedLlama b = quantized_llama(recipe);
        return fingerprint_base(*b.q);
    };
    const std::string nf4 = R"({"quant_cfg": [{"quantizer_name": "*", "enable": false},
        {"quantizer_name": "*weight_quantizer", "cfg": {"format": "nf4"}}, {"quantizer_name": "*lm_head*", "enable": false}]})";
    const std::string int4 = R"({"quant_cfg": [{"quantizer_name": "*", "enable": false},
        {"quantizer_name": "*weight_quantizer", "cfg": {"format": "int4", "granularity": "group", "group_size": 32}},
        {"quantizer_name": "*lm_head*", "enable": false}]})";
    const BaseFingerprint dq = fp(kQloraRecipe), dq_again = fp(kQloraRecipe), plain = fp(nf4), i4 = fp(int4);
    EXPECT_EQ(dq.sha256, dq_again.sha256);
    EXPECT_NE(dq.sha256, plain.sha256);
    EXPECT_EQ(dq.summary(), "fp32 on 1 of 15 linear layers; nf4 (block 64, double quant) on 14 of 15 linear layers");
    std::vector<FingerprintDifference> d = compare_fingerprints(dq, plain);
    ASSERT_EQ(d.size(), 14u);
    EXPECT_EQ(d[0].what, "double quant on -> off");
    d = compare_fingerprints(dq, i4);
    ASSERT_EQ(d.size(), 14u);
    EXPECT_EQ(d[0].what, "format nf4 -> int4, block 64 -> 32, double quant on -> off");
    // Same format, other codes: one weight moved.
    QuantizedLlama moved = quantized_llama(kQloraRecipe);
    {
        c10::NoGradGuard no_grad;
        moved.opened.model->find_layer("model.layers.1.mlp.down_proj")->weight.mul_(1.5);
    }
    d = compare_fingerprints(dq, fingerprint_base(*moved.q));
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].module, "model.layers.1.mlp.down_proj");
    EXPECT_EQ(d[0].what, "codes / scales");
    const BaseFingerprint back = fingerprint_from_json(fingerprint_json(dq), "test");
    EXPECT_EQ(back.sha256, dq.sha256);
    EXPECT_TRUE(compare_fingerprints(dq, back).empty());
}

TEST(PeftAdapter, WritesPeftsNamesAndReadsThemBackAndRefusesWhatItCannotHold) {
    const std::string dir = lora_temp_dir();
    OpenedModel m = open_model(kLoraLlama);
    LoraSettings s;
    s.targets = {"q_proj", "down_proj"};
    s.dtype = "bf16";
    LoraAdapters a(*m.model, s);
    randomise(a);
    a.round_to_storage();
    write_peft_adapter(dir + "/adapter", a, "base", nlohmann::json({{"init", "default"}, {"adapter_dtype", "bf16"}}), false);
    const SafetensorsFile f = SafetensorsFile::open(dir + "/adapter/adapter_model.safetensors");
    EXPECT_EQ(f.info("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight").dtype, SafetensorsDtype::BF16);
    EXPECT_EQ(f.info("base_model.model.model.layers.1.mlp.down_proj.lora_B.weight").shape, (std::vector<int64_t>{64, 8}));
    EXPECT_EQ(f.names().size(), 8u);
    const PeftAdapter back = read_peft_adapter(dir + "/adapter");
    EXPECT_EQ(back.settings.rank, 8);
    EXPECT_EQ(back.settings.alpha, 16);
    EXPECT_EQ(back.settings.dtype, "bf16");
    EXPECT_EQ(back.modules.size(), 4u);
    OpenedModel m2 = open_model(kLoraLlama);
    LoraAdapters loaded(*m2.model, back.settings);
    loaded.load(back.tensors, "test");
    for (size_t i = 0; i < a.layers().size(); ++i) EXPECT_TRUE(at::equal(loaded.layers()[i].B, a.layers()[i].B));
    // What PEFT may write but QuantLab does not implement is refused, naming the field.
    nlohmann::json c = nlohmann::json::parse(std::ifstream(dir + "/adapter/adapter_config.json"));
    c["use_dora"] = true;
    std::ofstream(dir + "/adapter/adapter_config.json") << c.dump();
    EXPECT_NE(test::user_error_text([&] { read_peft_adapter(dir + "/adapter"); }).find("use_dora"), std::string::npos);
    c["use_dora"] = false;
    c["r"] = 4;
    std::ofstream(dir + "/adapter/adapter_config.json") << c.dump();
    EXPECT_NE(test::user_error_text([&] { read_peft_adapter(dir + "/adapter"); }).find("expected rank 4"), std::string::npos);
    fs::remove_all(dir);
}

TEST(LoraMemory, QloraBaseIs4Point127BitsAndFitsWhereFullFineTuningDoesNot) {
    // QLoRA's storage of NF4 with double quantization: 4 bits + 8 bits per 64 + 32 bits per 64 x 256
    // = 4.127 bits per parameter (Dettmers et al. 2023, section 3).
    QuantizedLlama b = quantized_llama(kQloraRecipe);
    const LayerQuantizer& l = *b.q->find("model.layers.0.mlp.up_proj");
    const double bits = weight_storage_bits(l.weight_spec(), {96, 64}) / (96.0 * 64.0);
    EXPECT_NEAR(bits, 4.0 + 8.0 / 64 + 32.0 / (64 * 96 * 64 / 64.0) , 0.2);
    // A 7B-parameter Llama shape (hidden 4096, 32 layers, MLP 11008, vocab 32000), batch 1 x 512.
    MemoryShape shape;
    shape.groups = {{"linear", 6476005376, 4.0 + 8.0 / 64 + 32.0 / (64 * 256), 8.0 / 64 + 32.0 / (64 * 256)},
                    {"other", 262410240, 16, 0}};
    shape.adapter_parameters = 32 * 7 * 8 * (4096 + 4096);  // roughly, rank 8 on every linear layer
    shape.adapter_rank = 8;
    shape.adapted_layers = 224;
    shape.layers = 32;
    shape.hidden = 4096;
    shape.intermediate = 11008;
    shape.heads = shape.kv_heads = 32;
    shape.head_dim = 128;
    shape.vocab = 32000;
    shape.batch = 1;
    shape.sequence = 512;
    const TrainingMemoryEstimate e = estimate_training_memory(shape, "QLoRA (NF4 + double quant)");
    ASSERT_EQ(e.methods.size(), 4u);
    const double gib = 1024.0 * 1024 * 1024;
    const double full = e.methods[0].total_bytes() / gib, qlora = e.methods[3].total_bytes() / gib;
    // Full fine-tuning: 12 bytes per parameter (6.74 B x 12 = 75 GiB) plus activations: more than an
    // 80 GB card holds.
    EXPECT_NEAR(e.methods[0].bytes_of("weights") / gib, 6738415616.0 * 2 / gib, 1e-6);
    EXPECT_GT(e.methods[0].total_bytes(), 80e9);
    EXPECT_GT(full, 75.0);
    // QLoRA: the NF4 + double-quant base is ~3.4 GiB, the whole run fits a 24 GB card.
    EXPECT_NEAR((e.methods[3].bytes_of("base weights (codes)") + e.methods[3].bytes_of("base scales and constants")) / gib,
                (6476005376.0 * 4.127 / 8 + 262410240.0 * 2) / gib, 0.01);
    EXPECT_LT(qlora, 16.0);
    EXPECT_GT(e.methods[1].total_bytes(), e.methods[0].total_bytes());  // QAT: full fine-tuning + the quantized copy
    EXPECT_NE(memory_table(e).find("QLoRA (NF4 + double quant)"), std::string::npos);
}

// Stops a run after the loss of a given step (pause).
struct LoraStopSink : JobSink {
    std::map<int64_t, double> loss;
    CancellationToken* cancel = nullptr;
    int64_t stop_after = -1;
    void metric(int64_t step, const std::string& name, double value) override {
        if (name != "train/loss") return;
        loss[step] = value;
        if (cancel && step == stop_after) cancel->cancel();
    }
};

// A learnable token stream: token t is followed by (t * 5 + 3) mod 128 (as quant_trainer_test's).
std::string learnable_stream(const std::string& dir) {
    NdArray tokens = NdArray::zeros(DType::Int64, {4096});
    int64_t t = 1;
    for (int64_t i = 0; i < 4096; ++i, t = (t * 5 + 3) % 128) tokens.as<int64_t>()[i] = t;
    write_npy(dir + "/stream.npy", tokens);
    return dir + "/stream.npy";
}

LoraTrainRequest tiny_qlora(const std::string& out) {
    LoraTrainRequest r;
    r.method = "qlora";
    r.model = kLoraLlama;
    r.data = learnable_stream(fs::path(out).parent_path().string());
    r.sequence_length = 32;
    r.out_dir = out;
    r.steps = 6;
    r.batch_size = 4;
    r.lr = 1e-2;
    r.dropout = 0.1;
    r.eval_samples = 8;
    r.seed = 11;
    return r;
}

TEST(LoraTraining, TrainsOnlyTheAdaptersAndAStoppedRunResumesBitExactly) {
    const std::string dir = lora_temp_dir();
    // Uninterrupted.
    LoraStopSink whole;
    CancellationToken go;
    const LoraTrainReport r = run_lora_training(tiny_qlora(dir + "/whole"), whole, go);
    EXPECT_EQ(r.steps, 6);
    EXPECT_EQ(r.adapted_layers, 14);
    EXPECT_EQ(r.trainable_parameters, 2 * (8 * (64 + 64) * 4 + 8 * (64 + 96) * 3));
    EXPECT_EQ(r.base_summary, "fp32 on 1 of 15 linear layers; nf4 (block 64, double quant) on 14 of 15 linear layers");
    EXPECT_LT(r.after.overall.loss, r.before.overall.loss);
    ASSERT_EQ(whole.loss.size(), 6u);
    // Stopped after step 2, resumed.
    LoraStopSink first, second;
    CancellationToken stop;
    first.cancel = &stop;
    first.stop_after = 2;
    EXPECT_THROW(run_lora_training(tiny_qlora(dir + "/paused"), first, stop), JobCancelled);
    LoraTrainRequest again = tiny_qlora(dir + "/paused");
    again.resume = true;
    CancellationToken go2;
    const LoraTrainReport resumed = run_lora_training(again, second, go2);
    EXPECT_EQ(resumed.resumed_from, 3);
    for (int64_t step = 0; step < 6; ++step) {
        const double got = step < 3 ? first.loss.at(step) : second.loss.at(step);
        EXPECT_EQ(got, whole.loss.at(step)) << "step " << step;
    }
    const SafetensorsFile a = SafetensorsFile::open(dir + "/whole/adapter/adapter_model.safetensors");
    const SafetensorsFile b = SafetensorsFile::open(dir + "/paused/adapter/adapter_model.safetensors");
    for (const std::string& name : a.names()) EXPECT_TRUE(at::equal(load_tensor(a, name), load_tensor(b, name))) << name;
    // The base did not move: its fingerprint is the one recorded before training.
    const nlohmann::json record = nlohmann::json::parse(std::ifstream(dir + "/whole/adapter/quantlab_lora.json"));
    EXPECT_EQ(record["base_fingerprint"]["sha256"], r.base_sha256);
    // Other settings do not resume this run.
    LoraTrainRequest other = tiny_qlora(dir + "/paused");
    other.resume = true;
    other.rank = 4;
    CancellationToken go3;
    NullJobSink quiet;
    EXPECT_NE(test::user_error_text([&] { run_lora_training(other, quiet, go3); }), "no error");
    fs::remove_all(dir);
}

TEST(LoraTraining, PreviewExportAndDoctorOfARun) {
    const std::string dir = lora_temp_dir();
    LoraTrainRequest req = tiny_qlora(dir + "/run");
    req.dropout = 0;
    NullJobSink quiet;
    CancellationToken go;
    run_lora_training(req, quiet, go);
    EXPECT_TRUE(is_lora_run(dir + "/run"));
    LoraPreviewRequest p;
    p.run = dir + "/run";
    p.data = req.data;
    p.sequence_length = 32;
    const LoraMergePreview pv = run_lora_preview(p, quiet, go);
    EXPECT_EQ(pv.layers.size(), 14u);
    EXPECT_GT(pv.codes_changed, 0.0);
    ASSERT_TRUE(pv.merged_fp.kl && pv.merged_requantized.kl);
    EXPECT_LT(*pv.merged_fp.kl, 1e-6);   // the full-precision merge is the adapted model, to float rounding
    EXPECT_GT(*pv.merged_requantized.kl, *pv.merged_fp.kl);
    EXPECT_NEAR(pv.merged_fp.loss, pv.adapted.loss, 1e-5);
    EXPECT_FALSE(pv.base_quantizes_inputs);  // NF4 quantizes weights only
    // Exports: the PEFT folder, the merged FP folder, merged and re-quantized as fake-quant.
    for (const std::string as : {"peft", "merged-fp", "merged-fakequant"}) {
        LoraExportRequest e;
        e.run = dir + "/run";
        e.as = as;
        e.out = dir + "/" + as;
        const ExportReport rep = run_lora_export(e, quiet, go);
        EXPECT_GT(rep.bytes, 0) << as;
    }
    EXPECT_TRUE(is_peft_adapter_folder(dir + "/peft"));
    OpenedModel fp = open_model(dir + "/merged-fp");
    EXPECT_FALSE(fp.quantization);
    // The doctor: the same base passes; an NF4 base without double quantization is flagged with its drift.
    AdapterDoctorRequest d;
    d.adapter = dir + "/run";
    d.base = kLoraLlama;
    d.recipe = kQloraRecipe;
    EXPECT_TRUE(run_adapter_doctor(d, go).ok());
    d.recipe = "NF4";
    const DoctorReport bad = run_adapter_doctor(d, go);
    ASSERT_EQ(bad.findings.size(), 1u);
    EXPECT_EQ(bad.findings[0].check, "adapter-base");
    EXPECT_NE(bad.findings[0].problem.find("double quant on -> off"), std::string::npos) << bad.findings[0].problem;
    EXPECT_NE(bad.findings[0].problem.find("measured drift"), std::string::npos);
    fs::remove_all(dir);
}

TEST(LoraTraining, ThePreviewSaysWhenTheBaseAlsoQuantizesActivations) {
    // NVFP4_DEFAULT is W4A4: the full-precision merge then runs the activations in full precision
    // too, so its KL against the adapted model is not the merge's alone (the preview says so).
    const std::string dir = lora_temp_dir();
    LoraTrainRequest req = tiny_qlora(dir + "/run");
    req.method = "lora";
    req.recipe = "NVFP4_DEFAULT";
    req.steps = 2;
    req.dropout = 0;
    NullJobSink quiet;
    CancellationToken go;
    run_lora_training(req, quiet, go);
    LoraPreviewRequest p;
    p.run = dir + "/run";
    p.data = req.data;
    p.sequence_length = 32;
    p.samples = 4;
    const LoraMergePreview pv = run_lora_preview(p, quiet, go);
    EXPECT_TRUE(pv.base_quantizes_inputs);
    ASSERT_TRUE(pv.merged_fp.kl);
    EXPECT_GT(*pv.merged_fp.kl, 1e-6);  // unlike a weight-only base, where it is float rounding
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql
