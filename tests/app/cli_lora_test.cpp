// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli train qlora|lora, export --as peft|merged-*, lora preview, lora logits and doctor
// --base, end to end on the golden tiny Llama; the adapter checked by the real peers: PEFT loads
// the exported folder onto transformers' model with a bitsandbytes NF4 double-quant base and gives
// QuantLab's logits (tests/app/lora_peft_peer.py). A peer that cannot run fails the test.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/core/nd_array.h"
#include "engine/io/npy_file.h"
#include "engine/io/safetensors_file.h"
#include "tests/app/cli_runner.h"
#include "tests/peer_paths.h"

namespace ql::test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kLoraModel = std::string(QUANTLAB_TEST_DATA_DIR) + "/models/llama";

// A learnable token stream: token t is followed by (t * 5 + 3) mod 128.
std::string write_stream(const std::string& dir) {
    NdArray tokens = NdArray::zeros(DType::Int64, {4096});
    int64_t t = 1;
    for (int64_t i = 0; i < 4096; ++i, t = (t * 5 + 3) % 128) tokens.as<int64_t>()[i] = t;
    write_npy(dir + "/stream.npy", tokens);
    return dir + "/stream.npy";
}

// One QLoRA run shared by the cases (the CLI runs in subprocesses; a few seconds).
struct LoraRunFixture {
    std::string dir, data;
    json report;
    LoraRunFixture() {
        dir = make_temp_dir();
        data = write_stream(dir);
        const CliResult r = run_cli({"train", "qlora", kLoraModel, "--data", data, "--seq-len", "32", "--out", dir + "/run",
                                     "--steps", "8", "--batch-size", "4", "--lr", "1e-2", "--rank", "4", "--alpha", "8",
                                     "--eval-samples", "8", "--seed", "3", "--json"});
        EXPECT_EQ(r.exit_code, 0) << r.err;
        report = json::parse(r.out, nullptr, false);
    }
    ~LoraRunFixture() { fs::remove_all(dir); }
};

LoraRunFixture& lora_run() {
    static LoraRunFixture f;
    return f;
}

TEST(CliLora, TrainsAQloraAdapterAndWritesAPeftFolder) {
    const LoraRunFixture& f = lora_run();
    ASSERT_TRUE(f.report.is_object());
    EXPECT_EQ(f.report["method"], "qlora");
    EXPECT_EQ(f.report["steps"], 8);
    EXPECT_EQ(f.report["adapted_layers"], 14);
    EXPECT_EQ(f.report["trainable_parameters"], 2 * (4 * (64 + 64) * 4 + 4 * (64 + 96) * 3));
    EXPECT_EQ(f.report["base"], "fp32 on 1 of 15 linear layers; nf4 (block 64, double quant) on 14 of 15 linear layers");
    EXPECT_LT(f.report["after"]["loss"].get<double>(), f.report["before"]["loss"].get<double>());
    const json config = json::parse(std::ifstream(f.dir + "/run/adapter/adapter_config.json"));
    EXPECT_EQ(config["peft_type"], "LORA");
    EXPECT_EQ(config["r"], 4);
    EXPECT_EQ(config["lora_alpha"], 8.0);
    EXPECT_EQ(config["target_modules"].size(), 14u);
    EXPECT_TRUE(fs::exists(f.dir + "/run/checkpoint"));
    // A finished run resumes with nothing to do; other settings are refused.
    const CliResult again = run_cli({"train", "qlora", kLoraModel, "--data", f.data, "--seq-len", "32", "--out", f.dir + "/run",
                                     "--steps", "8", "--batch-size", "4", "--lr", "1e-2", "--rank", "4", "--alpha", "8",
                                     "--eval-samples", "8", "--seed", "3", "--resume", "--json"});
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(json::parse(again.out)["resumed_from"], 8);
    const CliResult other = run_cli({"train", "qlora", kLoraModel, "--data", f.data, "--seq-len", "32", "--out", f.dir + "/run",
                                     "--steps", "8", "--batch-size", "4", "--rank", "8", "--resume"});
    EXPECT_NE(other.exit_code, 0);
}

// Full fine-tuning trains the model's own weights: the model is opened as owned float32 copies
// (a mapped file's weights as stored cannot take gradients; this once failed with an internal
// error), every parameter trains, and the trained model is written as an HF folder while the
// source file stays as it was.
TEST(CliLora, FullFineTuningTrainsEveryWeightOfAModelFolder) {
    const std::string dir = make_temp_dir();
    const std::string data = write_stream(dir);
    const CliResult r = run_cli({"train", "full", kLoraModel, "--data", data, "--seq-len", "32", "--out", dir + "/full",
                                 "--steps", "4", "--batch-size", "4", "--lr", "1e-3", "--eval-samples", "8", "--seed", "3",
                                 "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json report = json::parse(r.out);
    EXPECT_EQ(report["method"], "full");
    EXPECT_EQ(report["steps"], 4);
    EXPECT_GT(report["trainable_parameters"].get<int64_t>(), 0);
    EXPECT_EQ(report["trainable_parameters"], report["model_parameters"]);
    EXPECT_LT(report["after"]["loss"].get<double>(), report["before"]["loss"].get<double>());
    const std::string name = "model.layers.0.mlp.down_proj.weight";
    const SafetensorsFile source = SafetensorsFile::open(kLoraModel + "/model.safetensors");
    const SafetensorsFile trained = SafetensorsFile::open(dir + "/full/model/model.safetensors");
    ASSERT_EQ(source.info(name).dtype, SafetensorsDtype::F32);
    ASSERT_EQ(trained.info(name).dtype, SafetensorsDtype::F32);
    const TensorBytes a = source.bytes(name), b = trained.bytes(name);
    ASSERT_EQ(a.size, b.size);
    const auto* va = reinterpret_cast<const float*>(a.data);
    const auto* vb = reinterpret_cast<const float*>(b.data);
    double max_diff = 0;
    for (size_t i = 0; i < a.size / sizeof(float); ++i) max_diff = std::max(max_diff, std::fabs(double(va[i]) - double(vb[i])));
    EXPECT_GT(max_diff, 1e-5) << name << " did not train";
    EXPECT_LT(max_diff, 1e-1) << name << " moved further than 4 steps at lr 1e-3 can";
    fs::remove_all(dir);
}

// Two data-parallel ranks (--nproc 2 over Gloo on loopback) with the fixture's global batch train
// the fixture's adapters: the averaged gradients differ from one process's only in the order of
// float sums, which moves no weight by more than 1e-4 of the tensor's largest (a wrong shard or
// loss weighting moves them by ~lr = 1e-2 per step).
TEST(CliLora, TwoRanksTrainTheAdaptersOfOneProcessWithTheGlobalBatch) {
    const LoraRunFixture& f = lora_run();
    const CliResult two = run_cli({"train", "qlora", kLoraModel, "--data", f.data, "--seq-len", "32", "--out", f.dir + "/two",
                                   "--steps", "8", "--batch-size", "4", "--lr", "1e-2", "--rank", "4", "--alpha", "8",
                                   "--eval-samples", "8", "--seed", "3", "--nproc", "2", "--dist-timeout", "60", "--json"});
    ASSERT_EQ(two.exit_code, 0) << two.err;
    const json r2 = json::parse(two.out);
    EXPECT_EQ(r2["steps"], 8);
    const SafetensorsFile one = SafetensorsFile::open(f.dir + "/run/adapter/adapter_model.safetensors");
    const SafetensorsFile other = SafetensorsFile::open(f.dir + "/two/adapter/adapter_model.safetensors");
    ASSERT_EQ(one.tensors().size(), other.tensors().size());
    ASSERT_EQ(one.tensors().size(), 2u * 14u);  // A and B of 14 layers
    for (const auto& t : one.tensors()) {
        const auto* u = other.find(t.name);
        ASSERT_NE(u, nullptr) << t.name;
        ASSERT_EQ(t.dtype, SafetensorsDtype::F32) << t.name;
        const TensorBytes a = one.bytes(t), b = other.bytes(*u);
        ASSERT_EQ(a.size, b.size) << t.name;
        const auto* va = reinterpret_cast<const float*>(a.data);
        const auto* vb = reinterpret_cast<const float*>(b.data);
        double max_abs = 0, max_diff = 0;
        for (size_t i = 0; i < a.size / sizeof(float); ++i) {
            max_abs = std::max(max_abs, std::fabs(double(va[i])));
            max_diff = std::max(max_diff, std::fabs(double(va[i]) - double(vb[i])));
        }
        EXPECT_GT(max_abs, 0.0) << t.name << " did not train";
        EXPECT_LE(max_diff, 1e-4 * max_abs) << t.name << ": max |difference| " << max_diff;
    }
    EXPECT_NEAR(r2["after"]["loss"].get<double>(), f.report["after"]["loss"].get<double>(),
                1e-4 * f.report["after"]["loss"].get<double>());
    // A global batch that does not split over the ranks is refused before anything starts.
    const CliResult odd = run_cli({"train", "qlora", kLoraModel, "--data", f.data, "--seq-len", "32", "--out", f.dir + "/odd",
                                   "--steps", "2", "--batch-size", "5", "--nproc", "2"});
    EXPECT_EQ(odd.exit_code, 1);
    EXPECT_NE(odd.err.find("does not split over 2 ranks"), std::string::npos) << odd.err;
    EXPECT_FALSE(fs::exists(f.dir + "/odd"));
}

TEST(CliLora, DryRunPrintsTheMemoryEstimateBesideFullFineTuningAndQat) {
    const CliResult r = run_cli({"train", "qlora", kLoraModel, "--data", "synthetic:random-tokens", "--dry-run"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* s : {"full fine-tuning", "QAT", "LoRA (16-bit base)", "QLoRA (NF4 + double quant)", "optimizer states",
                          "base scales and constants", "activations", "total"})
        EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
    const CliResult bad = run_cli({"train", "qlora", kLoraModel, "--data", "synthetic:random-tokens", "--dry-run", "--rank", "0"});
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("--rank"), std::string::npos) << bad.err;
}

int run_peer(const std::vector<std::string>& args, std::string& output, const std::string& dir) {
    std::string cmd = "'" + peers_python() + "' '" + std::string(QUANTLAB_SOURCE_DIR) + "/tests/app/lora_peft_peer.py'";
    for (const std::string& a : args) cmd += " '" + a + "'";
    cmd += " >'" + dir + "/peer.log' 2>&1";
    const int status = std::system(cmd.c_str());
    output = slurp(dir + "/peer.log");
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(CliLora, PeftWithABitsandbytesNf4BaseGivesQuantLabsLogits) {
    // A tiny Llama whose Linear widths hold whole NF4 blocks (bitsandbytes' CPU path needs them;
    // lora_peft_peer.py says why), made by transformers; QLoRA trained on it here, exported for PEFT.
    const std::string dir = make_temp_dir();
    std::string out;
    ASSERT_EQ(run_peer({"make", dir + "/tiny"}, out, dir), 0) << out;
    const std::string data = write_stream(dir);
    const CliResult t = run_cli({"train", "qlora", dir + "/tiny", "--data", data, "--seq-len", "32", "--out", dir + "/run",
                                 "--steps", "8", "--batch-size", "4", "--lr", "1e-2", "--rank", "4", "--alpha", "8",
                                 "--eval-samples", "8", "--seed", "3"});
    ASSERT_EQ(t.exit_code, 0) << t.err;
    NdArray ids = NdArray::zeros(DType::Int64, {2, 16});
    for (int64_t i = 0; i < 32; ++i) ids.as<int64_t>()[i] = (i * 37 + 11) % 128;
    write_npy(dir + "/ids.npy", ids);
    const CliResult e = run_cli({"export", dir + "/run", "--as", "peft", "--out", dir + "/peft"});
    ASSERT_EQ(e.exit_code, 0) << e.err;
    const CliResult base = run_cli({"lora", "logits", dir + "/run", "--ids", dir + "/ids.npy", "--out", dir + "/base.npy",
                                    "--base-only"});
    ASSERT_EQ(base.exit_code, 0) << base.err;
    const CliResult adapted = run_cli({"lora", "logits", dir + "/run", "--ids", dir + "/ids.npy", "--out", dir + "/adapted.npy"});
    ASSERT_EQ(adapted.exit_code, 0) << adapted.err;
    const int rc = run_peer({dir + "/tiny", dir + "/peft", dir + "/ids.npy", dir + "/base.npy", dir + "/adapted.npy"}, out, dir);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("\nPASS"), std::string::npos) << out;
    std::printf("%s", out.c_str());
    fs::remove_all(dir);
}

TEST(CliLora, PreviewExportsAndTheDoctorCatchTheMergeAndBaseFailureModes) {
    const LoraRunFixture& f = lora_run();
    const std::string dir = make_temp_dir();
    const CliResult p = run_cli({"lora", "preview", f.dir + "/run", "--data", f.data, "--seq-len", "32", "--samples", "16", "--json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json j = json::parse(p.out);
    EXPECT_EQ(j["layers"].size(), 14u);
    EXPECT_GT(j["codes_changed"].get<double>(), 0.0);
    EXPECT_LT(j["merged_fp"]["kl"].get<double>(), 1e-6);
    EXPECT_GT(j["merged_requantized"]["kl"].get<double>(), j["merged_fp"]["kl"].get<double>());
    const CliResult text = run_cli({"lora", "preview", f.dir + "/run", "--data", f.data, "--seq-len", "32", "--samples", "16"});
    EXPECT_NE(text.out.find("merged, re-quantized"), std::string::npos) << text.out;
    // Merged exports through the existing exporters; the Export Doctor passes them.
    for (const std::string as : {"merged-fp", "merged-fakequant"}) {
        const CliResult e = run_cli({"export", f.dir + "/run", "--as", as, "--out", dir + "/" + as});
        EXPECT_EQ(e.exit_code, 0) << as << ": " << e.err;
        const CliResult d = run_cli({"doctor", dir + "/" + as});
        EXPECT_EQ(d.exit_code, 0) << as << ": " << d.out;
    }
    const CliResult peft_kind = run_cli({"export", kLoraModel, "--as", "peft", "--out", dir + "/x"});
    EXPECT_EQ(peft_kind.exit_code, 1);
    EXPECT_NE(peft_kind.err.find("needs a LoRA run"), std::string::npos) << peft_kind.err;
    // The doctor: the adapter folder alone, then against its own base and another quantization.
    const CliResult files = run_cli({"doctor", f.dir + "/run/adapter", "--json"});
    EXPECT_EQ(files.exit_code, 0) << files.out;
    EXPECT_EQ(json::parse(files.out)["layout"], "peft");
    const CliResult same = run_cli({"doctor", f.dir + "/run", "--base", kLoraModel});
    EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
    const CliResult other = run_cli({"doctor", f.dir + "/run", "--base", kLoraModel, "--recipe", "NF4", "--json"});
    EXPECT_EQ(other.exit_code, 1) << other.out << other.err;
    const json d = json::parse(other.out);
    ASSERT_EQ(d["findings"].size(), 1u);
    EXPECT_EQ(d["findings"][0]["check"], "adapter-base");
    EXPECT_NE(d["findings"][0]["problem"].get<std::string>().find("double quant on -> off"), std::string::npos);
    fs::remove_all(dir);
}

// A LoRA run given to eval / evalsuite as MODEL is its base with the adapter: the same function as
// the merged full-precision export (KL < 1e-6, the same answers), while the base alone differs
// from it; the manifest names the run and the serving cost counts the adapter beside the weights.
TEST(CliLora, EvalAndEvalsuiteTakeALoraRunAsItsBaseWithTheAdapter) {
    const std::string dir = make_temp_dir();
    const CliResult t = run_cli({"train", "lora", "demo", "--data", "synthetic:arith", "--out", dir + "/run", "--steps", "12",
                                 "--batch-size", "8", "--lr", "3e-2", "--rank", "4", "--alpha", "8", "--eval-samples", "8",
                                 "--seed", "5", "--json"});
    ASSERT_EQ(t.exit_code, 0) << t.err;
    const int64_t adapter_parameters = json::parse(t.out)["trainable_parameters"].get<int64_t>();
    ASSERT_GT(adapter_parameters, 0);
    const CliResult e = run_cli({"export", dir + "/run", "--as", "merged-fp", "--out", dir + "/merged"});
    ASSERT_EQ(e.exit_code, 0) << e.err;
    const auto kl_to_merged = [&](const std::string& model) {
        const CliResult r = run_cli({"eval", model, "--data", "synthetic:arith", "--teacher", dir + "/merged", "--samples", "32", "--json"});
        EXPECT_EQ(r.exit_code, 0) << model << ": " << r.err;
        return json::parse(r.out, nullptr, false).value("kl", -1.0);
    };
    const double adapted = kl_to_merged(dir + "/run"), base = kl_to_merged("demo");
    EXPECT_GE(adapted, 0.0);
    EXPECT_LT(adapted, 1e-6);
    EXPECT_GT(base, 1e-4);  // the adapter moved the model: the check above can fail

    // The demo's arithmetic as an eval suite (numbers least significant digit first, fixed width,
    // as the demo's synthetic:arith writes them).
    const auto digits = [](int v, int n) {
        std::string out;
        for (int k = 0; k < n; ++k, v /= 10) out += static_cast<char>('0' + v % 10);
        return out;
    };
    std::ofstream suite(dir + "/suite.jsonl");
    for (int i = 0; i < 8; ++i) {
        const int a = 17 + 71 * i, b = 5 + 37 * i;
        suite << "{\"id\": \"add-" << i << "\", \"category\": \"add\", \"prompt\": \"" << digits(a, 3) << "+" << digits(b, 3)
              << "=\", \"max_tokens\": 6, \"check\": {\"type\": \"exact\", \"answer\": \"" << digits(a + b, 4) << "\"}}\n";
    }
    suite.close();
    const CliResult s = run_cli({"evalsuite", "demo", dir + "/run", dir + "/merged", "--suite", dir + "/suite.jsonl", "--max-tokens", "6", "--json"});
    ASSERT_EQ(s.exit_code, 0) << s.err;
    const json runs = json::parse(s.out)["runs"];
    ASSERT_EQ(runs.size(), 3u);
    const json& m = runs[1]["manifest"];
    EXPECT_EQ(m["model_kind"], "lora run");
    EXPECT_EQ(m["quant_scheme"], "FULL_PRECISION + LoRA r4 alpha 8");
    EXPECT_EQ(m["label"], "FULL_PRECISION + LoRA r4 alpha 8");
    EXPECT_EQ(fs::path(m["model_path"].get<std::string>()), fs::absolute(dir + "/run").lexically_normal());
    const json& base_w = runs[0]["cost"]["weights"];
    const json& run_w = runs[1]["cost"]["weights"];
    EXPECT_EQ(run_w["parameters"].get<int64_t>(), base_w["parameters"].get<int64_t>() + adapter_parameters);
    EXPECT_EQ(run_w["high_precision_bytes"].get<int64_t>(), base_w["high_precision_bytes"].get<int64_t>() + 2 * adapter_parameters);
    // The adapted run and its merge answer alike, item by item.
    const json& a = runs[1]["replicates"][0]["items"];
    const json& b = runs[2]["replicates"][0]["items"];
    ASSERT_EQ(a.size(), 8u);
    ASSERT_EQ(b.size(), 8u);
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i]["output"], b[i]["output"]) << a[i]["id"];
        EXPECT_EQ(a[i]["passed"], b[i]["passed"]) << a[i]["id"];
    }
    // The merge preview answers the same suite with each form: the adapted model as evalsuite ran it,
    // the full-precision merge (an FP base: the re-quantized one too) without a verdict flip.
    const CliResult p = run_cli({"lora", "preview", dir + "/run", "--data", "synthetic:arith", "--samples", "16", "--suite",
                                 dir + "/suite.jsonl", "--limit", "6", "--max-tokens", "6", "--json"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const json ps = json::parse(p.out)["suite"];
    EXPECT_EQ(ps["items"], 6);
    int64_t passed_first6 = 0;
    for (size_t i = 0; i < 6; ++i) passed_first6 += a[i]["passed"].get<bool>() ? 1 : 0;
    EXPECT_EQ(ps["passed"]["adapted"].get<int64_t>(), passed_first6);
    EXPECT_EQ(ps["passed"]["merged_fp"].get<int64_t>(), passed_first6);
    EXPECT_EQ(ps["passed"]["merged_requantized"].get<int64_t>(), passed_first6);
    EXPECT_TRUE(ps["flips"]["merged_fp"].empty()) << ps.dump();
    EXPECT_TRUE(ps["flips"]["merged_requantized"].empty()) << ps.dump();
    const CliResult no_suite = run_cli({"lora", "preview", dir + "/run", "--data", "synthetic:arith", "--limit", "6"});
    EXPECT_EQ(no_suite.exit_code, 1);
    EXPECT_NE(no_suite.err.find("need --suite"), std::string::npos) << no_suite.err;
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql::test
