// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli export on a PTQ checkpoint of the golden tiny Llama: hf-modelopt output that eval
// reads back with the same loss, the report from a project run's series, the export recorded as
// an artifact of a project run, and refusals (existing output, gguf in this build).
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "engine/io/whole_file.h"
#include "projects/project_file.h"
#include "tests/app/cli_runner.h"

namespace ql::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(CliExport, HfModeloptReloadsWithTheSameLossAndReportsComeFromTheProjectRun) {
    const std::string dir = make_temp_dir();
    const CliResult ptq = run_cli({"ptq", kLlama, "--recipe", "nvfp4_default", "--calib", "synthetic:random-tokens",
                                   "--samples", "8", "--out", dir + "/q", "--project", dir + "/p.qlab", "--json"});
    ASSERT_EQ(ptq.exit_code, 0) << ptq.err;

    const CliResult ex = run_cli({"export", dir + "/q", "--as", "hf-modelopt", "--out", dir + "/hf", "--project",
                                  dir + "/p.qlab", "--json"});
    ASSERT_EQ(ex.exit_code, 0) << ex.err;
    const json r = json::parse(ex.out);
    EXPECT_EQ(r["as"], "hf-modelopt");
    EXPECT_GT(r["bytes"].get<int64_t>(), 0);
    EXPECT_TRUE(fs::exists(dir + "/hf/hf_quant_config.json"));

    const CliResult a = run_cli({"eval", dir + "/q", "--data", "synthetic:random-tokens", "--json"});
    const CliResult b = run_cli({"eval", dir + "/hf", "--data", "synthetic:random-tokens", "--json"});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    EXPECT_EQ(json::parse(a.out)["loss"], json::parse(b.out)["loss"]);

    // Never overwrite without --force.
    const CliResult again = run_cli({"export", dir + "/q", "--as", "hf-modelopt", "--out", dir + "/hf"});
    EXPECT_EQ(again.exit_code, 1);
    EXPECT_NE(again.err.find("already exists (pass --force"), std::string::npos) << again.err;

    // The report of run 1 (the ptq run), recorded as run 3.
    const CliResult rep = run_cli({"export", dir + "/q", "--as", "report", "--out", dir + "/rep", "--project",
                                   dir + "/p.qlab", "--run", "1"});
    ASSERT_EQ(rep.exit_code, 0) << rep.err;
    EXPECT_TRUE(fs::exists(dir + "/rep/report.html"));
    EXPECT_TRUE(fs::exists(dir + "/rep/metrics.csv"));
    EXPECT_TRUE(fs::exists(dir + "/rep/recipe.json"));

    const projects::ProjectFile p = projects::ProjectFile::open(dir + "/p.qlab", projects::OpenMode::ReadOnly);
    const auto runs = p.runs();
    ASSERT_EQ(runs.size(), 3u);
    EXPECT_EQ(runs[1].kind, "export");
    EXPECT_EQ(runs[1].status, projects::RunStatus::Completed);
    bool found = false;
    for (const auto& art : p.artifacts(runs[1].id)) found = found || (art.kind == "hf-modelopt" && art.path.text.size() >= 2 &&
                                                                       art.path.text.substr(art.path.text.size() - 2) == "hf");
    EXPECT_TRUE(found);

    // GGUF from the same checkpoint: a file llama.cpp's magic opens (engine tests check its tensors).
    const CliResult gguf = run_cli({"export", dir + "/q", "--as", "gguf", "--gguf-type", "q8_0", "--out", dir + "/m.gguf"});
    ASSERT_EQ(gguf.exit_code, 0) << gguf.err;
    EXPECT_EQ(read_whole_file(dir + "/m.gguf", "gguf").substr(0, 4), "GGUF");
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql::test
