// SPDX-License-Identifier: GPL-3.0-or-later
// --device on the commands that run models: refused with a one-line reason where it cannot be
// used, and `--device cpu` gives byte for byte what no flag gives (ptq, eval, train of the demo).
// With a CUDA GPU, a weight-only PTQ on it writes the CPU's checkpoint bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "projects/project_file.h"
#include "tests/app/cli_runner.h"

namespace ql::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Timings differ from run to run, output paths by construction: everything else must not.
json without_timings(json j) {
    if (j.is_object()) {
        // "memory": the pre-flight estimate times this machine and reads the peak RSS, per run.
        for (const char* k : {"seconds", "out_model", "out", "out_dir", "memory"}) j.erase(k);
        for (auto& [k, v] : j.items()) v = without_timings(v);
    } else if (j.is_array()) {
        for (auto& v : j) v = without_timings(v);
    }
    return j;
}

// Every file of a checkpoint folder but its reports (which hold timings), byte for byte.
void expect_same_files(const std::string& a, const std::string& b) {
    size_t compared = 0;
    for (const auto& e : fs::directory_iterator(a)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("ptq_report", 0) == 0 || name.rfind("train_report", 0) == 0) continue;
        ASSERT_TRUE(fs::exists(b + "/" + name)) << name;
        if (fs::is_directory(e.path())) continue;
        EXPECT_TRUE(slurp(a + "/" + name) == slurp(b + "/" + name)) << name << " differs";
        ++compared;
    }
    EXPECT_GT(compared, 1u);
}

// Each command with arguments that get it as far as its device check.
std::vector<std::vector<std::string>> commands_with_device(const std::string& dir, const std::string& device) {
    return {{"eval", "demo", "--data", "synthetic:arith", "--device", device},
            {"embed", kLlama, "--data", kLlama + "/config.json", "--out", dir + "/e.npy", "--device", device},
            {"ptq", "demo", "--recipe", "NVFP4_DEFAULT", "--calib", "synthetic:arith", "--device", device},
            {"sensitivity", "demo", "--recipe", "NVFP4_DEFAULT", "--calib", "synthetic:arith", "--device", device},
            {"stats", "demo", "--calib", "synthetic:arith", "--device", device},
            {"divergence", "demo", "--recipe", "NVFP4_DEFAULT", "--data", "synthetic:arith", "--device", device},
            {"train", "qad", "demo", "--recipe", "NVFP4_DEFAULT", "--data", "synthetic:arith", "--out", dir + "/t", "--device", device},
            {"export", "demo", "--as", "fakequant", "--out", dir + "/x", "--device", device},
            {"imatrix", "demo", "--calib", "synthetic:arith", "--out", dir + "/i.gguf", "--device", device},
            {"whatif", "demo", "--recipe", "NVFP4_DEFAULT", "--calib", "synthetic:arith", "--device", device},
            {"demo", "--retrain", "--out", dir + "/d", "--steps", "1", "--device", device},
            {"experiment", "run", "qad-vs-qat", "--project", dir + "/e.qlab", "--device", device}};
}

TEST(CliDevice, RefusesAnUnknownDeviceOnEveryCommand) {
    const std::string dir = make_temp_dir();
    for (const auto& args : commands_with_device(dir, "gpu")) {
        const CliResult r = run_cli(args);
        EXPECT_EQ(r.exit_code, 1) << args[0];
        EXPECT_EQ(r.err, "quantlab-cli: error: --device: expected cpu, cuda or cuda:N, got 'gpu'\n") << args[0];
    }
    EXPECT_FALSE(fs::exists(dir + "/t"));
    EXPECT_FALSE(fs::exists(dir + "/i.gguf"));
    EXPECT_FALSE(fs::exists(dir + "/d"));
    EXPECT_FALSE(fs::exists(dir + "/e.qlab"));
}

TEST(CliDevice, SaysWhyCudaIsUnavailableOnEveryCommand) {
    const std::string dir = make_temp_dir();
    const CliResult probe = run_cli({"eval", "demo", "--data", "synthetic:arith", "--samples", "2", "--device", "cuda"});
    if (probe.exit_code == 0) GTEST_SKIP() << "this build and machine run CUDA";
    for (const auto& args : commands_with_device(dir, "cuda:0")) {
        const CliResult r = run_cli(args);
        EXPECT_EQ(r.exit_code, 1) << args[0] << ": " << r.err;
        EXPECT_EQ(r.err.rfind("quantlab-cli: error: --device: cuda:0 needs CUDA, but ", 0), 0u) << args[0] << ": " << r.err;
        EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << args[0] << ": one line: " << r.err;
    }
    EXPECT_FALSE(fs::exists(dir + "/t"));
    EXPECT_FALSE(fs::exists(dir + "/x"));
    EXPECT_FALSE(fs::exists(dir + "/i.gguf"));
    EXPECT_FALSE(fs::exists(dir + "/d"));
    EXPECT_FALSE(fs::exists(dir + "/e.qlab"));
}

TEST(CliDevice, CpuGivesWhatNoFlagGivesForDemoRetraining) {
    const std::string dir = make_temp_dir();
    const std::vector<std::string> demo = {"demo", "--retrain", "--steps", "3", "--seed", "5", "--json"};
    std::vector<std::string> plain = demo, cpu = demo;
    plain.insert(plain.end(), {"--out", dir + "/plain"});
    cpu.insert(cpu.end(), {"--out", dir + "/cpu", "--device", "cpu"});
    const CliResult a = run_cli(plain), b = run_cli(cpu);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    // The reports differ in the folder, the command line recorded and the timings only.
    json ja = without_timings(json::parse(a.out)), jb = without_timings(json::parse(b.out));
    for (json* j : {&ja, &jb})
        for (const char* k : {"path", "command", "train_seconds"}) j->erase(k);
    EXPECT_EQ(ja["steps"], 3);
    EXPECT_EQ(ja, jb);
    EXPECT_TRUE(slurp(dir + "/plain/model.safetensors") == slurp(dir + "/cpu/model.safetensors"));
    EXPECT_TRUE(slurp(dir + "/plain/config.json") == slurp(dir + "/cpu/config.json"));
}

// --device cpu is the experiment without the flag: the same identity (it resumes, runs nothing
// more) and the same results; --device cuda:N is recorded as every run's parameter "device".
TEST(CliDevice, CpuGivesWhatNoFlagGivesForAnExperiment) {
    const std::string dir = make_temp_dir();
    std::ofstream(dir + "/e.json") << R"({"quantlab_experiment": 1, "name": "dev", "replicates": 1,
        "base": {"model": "demo", "method": "ptq", "data": "synthetic:arith", "calib_samples": 16, "eval_samples": 24},
        "metrics": ["kl", "exact_match", "bits_per_parameter"]})";
    const std::vector<std::string> run = {"experiment", "run", dir + "/e.json", "--json"};
    std::vector<std::string> plain = run, cpu = run, again = run;
    plain.insert(plain.end(), {"--project", dir + "/plain.qlab"});
    cpu.insert(cpu.end(), {"--project", dir + "/cpu.qlab", "--device", "cpu"});
    again.insert(again.end(), {"--project", dir + "/plain.qlab", "--device", "cpu"});
    const CliResult a = run_cli(plain), b = run_cli(cpu);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    json ja = json::parse(a.out), jb = json::parse(b.out);
    EXPECT_EQ(ja["ran_now"], 1);
    EXPECT_EQ(ja["identity_sha256"], jb["identity_sha256"]);
    EXPECT_EQ(ja["cells"], jb["cells"]);
    const CliResult c = run_cli(again);
    ASSERT_EQ(c.exit_code, 0) << c.err;
    EXPECT_EQ(json::parse(c.out)["ran_now"], 0);  // the same experiment: nothing left to run
    const auto runs = projects::ProjectFile::open(dir + "/cpu.qlab", projects::OpenMode::ReadOnly).runs();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_FALSE(json::parse(runs[0].config_json)["parameters"].contains("device")) << runs[0].config_json;
}

TEST(CliDevice, CpuGivesWhatNoFlagGivesForWhatif) {
    const std::vector<std::string> whatif = {"whatif", "demo", "--recipe", "NVFP4_DEFAULT", "--calib", "synthetic:arith",
                                             "--kv-cache", "fp8", "--samples", "8", "--eval-samples", "8", "--json"};
    std::vector<std::string> cpu = whatif;
    cpu.insert(cpu.end(), {"--device", "cpu"});
    const CliResult a = run_cli(whatif), b = run_cli(cpu);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    const json ja = json::parse(a.out);
    EXPECT_FALSE(ja["tensors"].empty());
    EXPECT_EQ(without_timings(ja), without_timings(json::parse(b.out)));
}

TEST(CliDevice, CpuGivesWhatNoFlagGivesForImatrix) {
    const std::string dir = make_temp_dir();
    const std::vector<std::string> imatrix = {"imatrix", "demo", "--calib", "synthetic:arith", "--samples", "32", "--json"};
    std::vector<std::string> plain = imatrix, cpu = imatrix;
    plain.insert(plain.end(), {"--out", dir + "/plain.gguf"});
    cpu.insert(cpu.end(), {"--out", dir + "/cpu.gguf", "--device", "cpu"});
    const CliResult a = run_cli(plain), b = run_cli(cpu);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    const json ja = json::parse(a.out);
    EXPECT_GT(ja["entries"].get<int>(), 0);
    EXPECT_EQ(without_timings(ja), without_timings(json::parse(b.out)));
    EXPECT_TRUE(slurp(dir + "/plain.gguf") == slurp(dir + "/cpu.gguf"));
}

TEST(CliDevice, CpuGivesWhatNoFlagGivesForPtqAndEval) {
    const std::string dir = make_temp_dir();
    const std::vector<std::string> ptq = {"ptq", "demo", "--recipe", "NVFP4_DEFAULT", "--calib", "synthetic:arith",
                                          "--samples", "16", "--json"};
    std::vector<std::string> plain = ptq, cpu = ptq;
    plain.insert(plain.end(), {"--out", dir + "/plain"});
    cpu.insert(cpu.end(), {"--out", dir + "/cpu", "--device", "cpu", "--project", dir + "/p.qlab"});
    const CliResult a = run_cli(plain), b = run_cli(cpu);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_EQ(without_timings(json::parse(a.out)), without_timings(json::parse(b.out)));
    EXPECT_EQ(without_timings(json::parse(slurp(dir + "/plain/ptq_report.json"))),
              without_timings(json::parse(slurp(dir + "/cpu/ptq_report.json"))));
    expect_same_files(dir + "/plain", dir + "/cpu");
    // The project says where the run ran.
    const auto runs = projects::ProjectFile::open(dir + "/p.qlab", projects::OpenMode::ReadOnly).runs();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(json::parse(runs[0].config_json)["device"], "cpu");

    for (const std::string& model : {std::string("demo"), dir + "/cpu"}) {
        const std::vector<std::string> eval = {"eval", model, "--data", "synthetic:arith", "--samples", "24", "--teacher", "demo", "--json"};
        std::vector<std::string> on_cpu = eval;
        on_cpu.insert(on_cpu.end(), {"--device", "cpu"});
        const CliResult e = run_cli(eval), f = run_cli(on_cpu);
        ASSERT_EQ(e.exit_code, 0) << e.err;
        ASSERT_EQ(f.exit_code, 0) << f.err;
        EXPECT_EQ(without_timings(json::parse(e.out)), without_timings(json::parse(f.out))) << model;
    }
}

TEST(CliDevice, CpuGivesWhatNoFlagGivesForTraining) {
    const std::string dir = make_temp_dir();
    const std::vector<std::string> train = {"train", "qad", "demo", "--recipe", "NVFP4_DEFAULT", "--data", "synthetic:arith",
                                            "--steps", "2", "--batch-size", "4", "--eval-samples", "8", "--calib-samples", "8",
                                            "--json"};
    std::vector<std::string> plain = train, cpu = train;
    plain.insert(plain.end(), {"--out", dir + "/plain"});
    cpu.insert(cpu.end(), {"--out", dir + "/cpu", "--device", "cpu", "--project", dir + "/p.qlab"});
    const CliResult a = run_cli(plain), b = run_cli(cpu);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_EQ(without_timings(json::parse(slurp(dir + "/plain/train_report.json"))),
              without_timings(json::parse(slurp(dir + "/cpu/train_report.json"))));
    expect_same_files(dir + "/plain/model", dir + "/cpu/model");
    const auto runs = projects::ProjectFile::open(dir + "/p.qlab", projects::OpenMode::ReadOnly).runs();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(json::parse(runs[0].config_json)["device"], "cpu");
}

TEST(CliDevice, Bf16TrainingNeedsACudaDevice) {
    const std::string dir = make_temp_dir();
    const std::vector<std::string> train = {"train", "qad", "demo", "--recipe", "NVFP4_DEFAULT", "--data", "synthetic:arith",
                                            "--steps", "1", "--out", dir + "/t"};
    for (const std::vector<std::string>& extra : {std::vector<std::string>{"--precision", "bf16"},
                                                  std::vector<std::string>{"--precision", "bf16", "--device", "cpu"}}) {
        std::vector<std::string> args = train;
        args.insert(args.end(), extra.begin(), extra.end());
        const CliResult r = run_cli(args);
        EXPECT_EQ(r.exit_code, 1);
        EXPECT_EQ(r.err, "quantlab-cli: error: train: --precision bf16 needs --device cuda (bfloat16 autocast is a CUDA feature here)\n");
    }
    std::vector<std::string> fp16 = train;
    fp16.insert(fp16.end(), {"--precision", "fp16"});
    const CliResult r = run_cli(fp16);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, "quantlab-cli: error: train: --precision is fp32 or bf16, got 'fp16'\n");
    EXPECT_FALSE(fs::exists(dir + "/t"));
}

// Weight-only NF4: no activation enters the quantized weights, which the CUDA kernels compute
// bit for bit as the CPU ones do, so the checkpoints are the same files.
TEST(CliDeviceGpu, WeightOnlyPtqOnTheGpuWritesTheCpusCheckpoint) {
    const std::string dir = make_temp_dir();
    const std::vector<std::string> ptq = {"ptq", "demo", "--recipe", "NF4", "--calib", "synthetic:arith", "--samples", "16"};
    std::vector<std::string> gpu = ptq, cpu = ptq;
    gpu.insert(gpu.end(), {"--out", dir + "/gpu", "--device", "cuda"});
    cpu.insert(cpu.end(), {"--out", dir + "/cpu"});
    const CliResult g = run_cli(gpu);
    if (g.exit_code == 1 && g.err.find("needs CUDA") != std::string::npos) GTEST_SKIP() << g.err;
    ASSERT_EQ(g.exit_code, 0) << g.err;
    const CliResult c = run_cli(cpu);
    ASSERT_EQ(c.exit_code, 0) << c.err;
    expect_same_files(dir + "/cpu", dir + "/gpu");
}

// demo --retrain on the GPU: the model comes back to the CPU for its evaluation and files, and
// the recorded command trains it there again.
TEST(CliDeviceGpu, DemoRetrainsOnTheGpu) {
    const std::string dir = make_temp_dir();
    const CliResult g = run_cli({"demo", "--retrain", "--steps", "3", "--out", dir + "/d", "--device", "cuda", "--json"});
    if (g.exit_code == 1 && g.err.find("needs CUDA") != std::string::npos) GTEST_SKIP() << g.err;
    ASSERT_EQ(g.exit_code, 0) << g.err;
    const json j = json::parse(g.out);
    EXPECT_EQ(j["steps"], 3);
    EXPECT_GT(j["parameter_count"].get<int64_t>(), 0);
    EXPECT_NE(j["command"].get<std::string>().find("--device cuda"), std::string::npos) << j["command"];
    EXPECT_TRUE(fs::exists(dir + "/d/model.safetensors"));
}

// An experiment on the GPU: every run's parameters record the device.
TEST(CliDeviceGpu, AnExperimentOnTheGpuRecordsItsDevice) {
    const std::string dir = make_temp_dir();
    std::ofstream(dir + "/e.json") << R"({"quantlab_experiment": 1, "name": "dev", "replicates": 1,
        "base": {"model": "demo", "method": "ptq", "data": "synthetic:arith", "calib_samples": 16, "eval_samples": 24},
        "metrics": ["kl", "exact_match", "bits_per_parameter"]})";
    const CliResult g =
        run_cli({"experiment", "run", dir + "/e.json", "--project", dir + "/p.qlab", "--device", "cuda", "--json"});
    if (g.exit_code == 1 && g.err.find("needs CUDA") != std::string::npos) GTEST_SKIP() << g.err;
    ASSERT_EQ(g.exit_code, 0) << g.err;
    const json j = json::parse(g.out);
    EXPECT_EQ(j["ran_now"], 1);
    EXPECT_EQ(j["cells"][0]["parameters"]["device"], "cuda:0");
    const auto runs = projects::ProjectFile::open(dir + "/p.qlab", projects::OpenMode::ReadOnly).runs();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(json::parse(runs[0].config_json)["parameters"]["device"], "cuda:0") << runs[0].config_json;
}

// The importance matrix on the GPU: the same entries and token counts as the CPU's; the sums of
// squared activations differ in the last bits (the matrix products sum in another order).
TEST(CliDeviceGpu, ImatrixOnTheGpuAgreesWithTheCpu) {
    const std::string dir = make_temp_dir();
    const std::vector<std::string> imatrix = {"imatrix", "demo", "--calib", "synthetic:arith", "--samples", "32", "--json"};
    std::vector<std::string> gpu = imatrix, cpu = imatrix;
    gpu.insert(gpu.end(), {"--out", dir + "/gpu.gguf", "--device", "cuda"});
    cpu.insert(cpu.end(), {"--out", dir + "/cpu.gguf"});
    const CliResult g = run_cli(gpu);
    if (g.exit_code == 1 && g.err.find("needs CUDA") != std::string::npos) GTEST_SKIP() << g.err;
    ASSERT_EQ(g.exit_code, 0) << g.err;
    const CliResult c = run_cli(cpu);
    ASSERT_EQ(c.exit_code, 0) << c.err;
    const json jg = json::parse(g.out), jc = json::parse(c.out);
    ASSERT_EQ(jg["statistics"].size(), jc["statistics"].size());
    ASSERT_GT(jc["statistics"].size(), 0u);
    for (size_t i = 0; i < jc["statistics"].size(); ++i) {
        const json& a = jg["statistics"][i];
        const json& b = jc["statistics"][i];
        EXPECT_EQ(a["name"], b["name"]);
        EXPECT_EQ(a["tokens"], b["tokens"]) << b["name"];
        EXPECT_NEAR(a["sum"].get<double>(), b["sum"].get<double>(), 1e-4 * std::abs(b["sum"].get<double>())) << b["name"];
    }
}

}  // namespace
}  // namespace ql
