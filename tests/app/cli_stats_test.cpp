// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli stats on the golden tiny Llama: the JSON report, the project records the GUI reads
// back, and the errors users see.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "projects/layer_stats_records.h"
#include "projects/project_file.h"
#include "tests/app/cli_runner.h"

namespace ql::test {
namespace {

using nlohmann::json;

TEST(CliStats, ReportsEveryLayerAndRecordsStatisticsTheGuiCanReadBack) {
    const std::string dir = make_temp_dir();
    const CliResult r = run_cli({"stats", kLlama, "--recipe", "NVFP4_DEFAULT", "--calib", "synthetic:random-tokens",
                                 "--samples", "4", "--seq-len", "16", "--formats", "int8,mxfp4",
                                 "--project", dir + "/p.qlab", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j.at("formats"), json({"int8", "mxfp4"}));
    ASSERT_EQ(j.at("layers").size(), 15u);
    const json& first = j.at("layers")[0];
    EXPECT_EQ(first.at("layer"), "model.layers.0.self_attn.q_proj");
    EXPECT_EQ(first.at("chosen_format"), "nvfp4");
    ASSERT_EQ(first.at("fits").size(), 3u);
    EXPECT_EQ(first.at("fits")[0].at("scale_kind"), "e4m3");
    EXPECT_GT(first.at("fits")[1].at("output_sqnr_db").get<double>(), first.at("fits")[0].at("output_sqnr_db").get<double>());
    EXPECT_EQ(first.at("weight").at("percentiles").size(), 5u);
    // The LLM.int8() account of the sampled inputs (4 x 16 tokens): shares consistent with the columns.
    const json& d = first.at("llm_int8");
    EXPECT_EQ(d.at("threshold"), 6.0);
    EXPECT_EQ(d.at("tokens"), first.at("activation_rows"));
    EXPECT_EQ(d.at("columns").size(), d.at("column_token_share").size());
    EXPECT_DOUBLE_EQ(d.at("batch_flop_share").get<double>(), static_cast<double>(d.at("columns").size()) / 64.0);

    const projects::ProjectFile p = projects::ProjectFile::open(dir + "/p.qlab", projects::OpenMode::ReadOnly);
    const auto runs = p.runs();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].kind, "stats");
    EXPECT_EQ(runs[0].status, projects::RunStatus::Completed);
    const auto stored = projects::from_project_records(p.layer_stats(runs[0].id, std::string("model.layers.0.self_attn.q_proj")));
    ASSERT_EQ(stored.size(), 1u);
    EXPECT_EQ(stored[0].chosen_format, "nvfp4");
    EXPECT_EQ(stored[0].weight_shape, (std::vector<int64_t>{64, 64}));
    ASSERT_EQ(stored[0].fits.size(), 3u);
    EXPECT_EQ(stored[0].fits[0].block_scales.size(), 64u * 4);
    EXPECT_TRUE(stored[0].has_activation);
    EXPECT_EQ(stored[0].weight.amax, first.at("weight").at("amax").get<double>());
    EXPECT_EQ(stored[0].llm_int8.columns, d.at("columns").get<std::vector<int64_t>>());
    EXPECT_EQ(stored[0].llm_int8.token_flop_share, d.at("token_flop_share").get<double>());
}

TEST(CliStats, TextTableAndUserErrors) {
    const CliResult r = run_cli({"stats", kLlama, "--formats", "int8,int4", "--layers", "lm_head"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("weight SQNR dB (layers x formats)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("lm_head"), std::string::npos);
    const CliResult bad = run_cli({"stats", kLlama, "--layers", "model.layers.0.mlp.nope"});
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("model.layers.0.mlp.nope"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace ql::test
