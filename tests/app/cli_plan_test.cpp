// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli plan on QAT.md's worked example, as users call it; suffixes and bad options.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/app/cli_runner.h"

namespace ql::test {
namespace {

using nlohmann::json;

TEST(CliPlan, JsonForOneBillionParametersFourBitHundredBillionTokens) {
    const CliResult r = run_cli({"plan", "--params", "1B", "--bits", "4", "--tokens", "100B", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["parameters"], 1000000000);
    EXPECT_EQ(j["bits"], 4);
    EXPECT_DOUBLE_EQ(j["total_tokens"].get<double>(), 100e9);
    EXPECT_DOUBLE_EQ(j["tokens_per_parameter_byte"].get<double>(), 200.0);
    EXPECT_NEAR(j["optimal_qat_fraction"].get<double>(), 0.2807873, 1e-6);
    EXPECT_NEAR(j["fraction_low"].get<double>(), 0.1907873, 1e-6);
    EXPECT_NEAR(j["fraction_high"].get<double>(), 0.3707873, 1e-6);
    EXPECT_NEAR(j["qat_tokens"].get<double>(), 28.0787264e9, 1e3);
    EXPECT_NEAR(j["fp_tokens"].get<double>(), 71.9212736e9, 1e3);
    EXPECT_NE(j["source"].get<std::string>().find("arXiv 2509.22935"), std::string::npos);
    ASSERT_TRUE(j["caveats"].is_array());
    EXPECT_NE(j["caveats"][0].get<std::string>().find("natural log is inferred"), std::string::npos);
}

TEST(CliPlan, TextReportAndSuffixes) {
    const CliResult r = run_cli({"plan", "--params", "86M", "--bits", "2", "--tokens", "1T"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("S              46511.6 tokens per parameter byte"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("QAT fraction   0.535  (band 0.445 - 0.625)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("split          FP 465.4B tokens, then QAT 534.6B tokens"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("caveats:"), std::string::npos);
    // 1.2M and 1.2e6 are the same count.
    const CliResult a = run_cli({"plan", "--params", "1.2M", "--bits", "8", "--tokens", "24e6", "--json"});
    const CliResult b = run_cli({"plan", "--params", "1200000", "--bits", "8", "--tokens", "24M", "--json"});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    EXPECT_EQ(json::parse(a.out), json::parse(b.out));
    EXPECT_DOUBLE_EQ(json::parse(a.out)["tokens_per_parameter_byte"].get<double>(), 20.0);
}

TEST(CliPlan, BadOptionsFailWithOneLineNamingTheOption) {
    const CliResult suffix = run_cli({"plan", "--params", "1X", "--bits", "4", "--tokens", "1B"});
    EXPECT_EQ(suffix.exit_code, 1);
    EXPECT_NE(suffix.err.find("option --params expects a positive number with an optional suffix"), std::string::npos)
        << suffix.err;
    const CliResult bits = run_cli({"plan", "--params", "1B", "--bits", "32", "--tokens", "1B"});
    EXPECT_EQ(bits.exit_code, 1);
    EXPECT_NE(bits.err.find("option --bits must be in 1..16, got 32"), std::string::npos) << bits.err;
    const CliResult missing = run_cli({"plan", "--params", "1B", "--bits", "4"});
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.err.find("--tokens"), std::string::npos) << missing.err;
    const CliResult negative = run_cli({"plan", "--params", "1B", "--bits", "4", "--tokens", "-5B"});
    EXPECT_EQ(negative.exit_code, 1);
    EXPECT_NE(negative.err.find("option --tokens expects a positive number"), std::string::npos) << negative.err;
}

}  // namespace
}  // namespace ql::test
