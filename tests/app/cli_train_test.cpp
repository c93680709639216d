// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli train qat|qad on the golden tiny Llama, as users call it.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "engine/io/safetensors_file.h"
#include "projects/project_file.h"
#include "tests/app/cli_runner.h"

namespace ql::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(CliTrain, QadWritesAQuantizedCheckpointAReportAndAResumableState) {
    const std::string dir = make_temp_dir();
    const std::vector<std::string> args = {"train", "qad", kLlama, "--recipe", "NVFP4_DEFAULT", "--data",
                                           "synthetic:random-tokens", "--out", dir + "/run", "--steps", "6",
                                           "--batch-size", "8", "--lr", "1e-3", "--eval-samples", "16",
                                           "--checkpoint-every", "3", "--project", dir + "/p.qlab", "--json"};
    const CliResult r = run_cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["mode"], "qad");
    EXPECT_EQ(j["steps"], 6);
    EXPECT_EQ(j["resumed_from"], 0);
    EXPECT_EQ(j["teacher"]["kl"], nullptr);  // the teacher is not compared with itself
    EXPECT_GT(j["before"]["kl"].get<double>(), 0.0);
    EXPECT_GT(j["after"]["kl"].get<double>(), 0.0);  // (that QAD lowers it: tests/engine/quant_trainer_test.cpp)
    EXPECT_GT(j["codes_changed"].get<double>(), 0.0);
    EXPECT_EQ(json::parse(slurp(dir + "/run/train_report.json")), j);
    EXPECT_TRUE(fs::exists(dir + "/run/checkpoint/trainer_state.json"));

    // The trained model is a quantized checkpoint every command reads.
    const CliResult e = run_cli({"eval", dir + "/run/model", "--data", "synthetic:random-tokens", "--samples", "16",
                                 "--teacher", kLlama, "--json"});
    ASSERT_EQ(e.exit_code, 0) << e.err;
    EXPECT_NEAR(json::parse(e.out)["kl"].get<double>(), j["after"]["kl"].get<double>(), 1e-9);

    // The project holds the run with its live metrics.
    const projects::ProjectFile p = projects::ProjectFile::open(dir + "/p.qlab", projects::OpenMode::ReadOnly);
    ASSERT_EQ(p.runs().size(), 1u);
    EXPECT_EQ(p.runs()[0].kind, "qad");
    EXPECT_EQ(p.load_series(p.runs()[0].id, "train/kl").size(), 6u);

    // An existing run folder needs --resume or --force; --resume of a finished run does no steps.
    const CliResult again = run_cli(args);
    EXPECT_EQ(again.exit_code, 1);
    EXPECT_NE(again.err.find("--resume"), std::string::npos) << again.err;
    std::vector<std::string> resume = args;
    resume.pop_back();  // --json
    resume.erase(resume.end() - 2, resume.end());  // --project P
    resume.push_back("--resume");
    resume.push_back("--json");
    const CliResult resumed = run_cli(resume);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    EXPECT_EQ(json::parse(resumed.out)["resumed_from"], 6);
    fs::remove_all(dir);
}

TEST(CliTrain, TrainOnlyTrainsTheMatchingParametersAndLeavesTheRestAtTheirPtqValues) {
    const std::string dir = make_temp_dir();
    const CliResult ptq = run_cli({"ptq", kLlama, "--recipe", "NVFP4_DEFAULT", "--calib", "synthetic:random-tokens",
                                   "--out", dir + "/ptq", "--json"});
    ASSERT_EQ(ptq.exit_code, 0) << ptq.err;
    const CliResult r = run_cli({"train", "qad", dir + "/ptq", "--data", "synthetic:random-tokens", "--out", dir + "/run",
                                 "--steps", "3", "--batch-size", "8", "--lr", "1e-3", "--eval-samples", "16",
                                 "--train-only", "*mlp*", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    const SafetensorsFile before = SafetensorsFile::open(dir + "/ptq/model.safetensors");
    const SafetensorsFile after = SafetensorsFile::open(dir + "/run/model/model.safetensors");
    int64_t mlp_parameters = 0, all_parameters = 0, mlp_tensors = 0;
    for (const SafetensorsFile::TensorInfo& t : before.tensors()) {
        const bool mlp = t.name.find(".mlp.") != std::string::npos;
        all_parameters += t.numel();
        if (mlp) mlp_parameters += t.numel(), ++mlp_tensors;
        const TensorBytes a = before.bytes(t), b = after.bytes(after.info(t.name));
        ASSERT_EQ(a.size, b.size) << t.name;
        const bool same = std::equal(a.data, a.data + a.size, b.data);
        // Frozen tensors keep their bytes; every trained one moved.
        EXPECT_EQ(same, !mlp) << t.name;
    }
    EXPECT_GT(mlp_tensors, 0);
    EXPECT_EQ(j["parameters"], mlp_parameters);  // the report counts what trained
    EXPECT_LT(mlp_parameters, all_parameters);
    EXPECT_GT(j["codes_changed"].get<double>(), 0.0);

    // A pattern that matches nothing is refused before anything is written, naming it.
    const CliResult none = run_cli({"train", "qad", dir + "/ptq", "--data", "synthetic:random-tokens", "--out",
                                    dir + "/none", "--steps", "1", "--train-only", "*mlp*,*no_such_module*"});
    EXPECT_EQ(none.exit_code, 1);
    EXPECT_NE(none.err.find("'*no_such_module*' matches no parameter"), std::string::npos) << none.err;
    EXPECT_FALSE(fs::exists(dir + "/none"));
    fs::remove_all(dir);
}

TEST(CliTrain, BadRequestsExitWithOneLine) {
    const std::string dir = make_temp_dir();
    const CliResult mode = run_cli({"train", "kd", kLlama, "--data", "synthetic:random-tokens", "--out", dir + "/a"});
    EXPECT_EQ(mode.exit_code, 1);
    EXPECT_NE(mode.err.find("qat or qad"), std::string::npos) << mode.err;
    const CliResult recipe = run_cli({"train", "qat", kLlama, "--data", "synthetic:random-tokens", "--out", dir + "/b"});
    EXPECT_EQ(recipe.exit_code, 1);
    EXPECT_NE(recipe.err.find("--recipe is required"), std::string::npos) << recipe.err;
    const CliResult lr = run_cli({"train", "qat", kLlama, "--recipe", "FP8_DEFAULT", "--data", "synthetic:random-tokens",
                                  "--out", dir + "/c", "--lr", "-1"});
    EXPECT_EQ(lr.exit_code, 1);
    EXPECT_NE(lr.err.find("--lr"), std::string::npos) << lr.err;
    EXPECT_FALSE(fs::exists(dir + "/c"));
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql::test
