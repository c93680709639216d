// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli and GGUF files as users run it: `imatrix` (collect, merge, show; both formats),
// `export --as gguf --gguf-type <mix> --dry-run --json` (the plan), `--strict`, and GGUF files as
// MODEL (`inspect --json` lists every tensor with its type; `eval` of the file equals eval of the
// model it was written from). Exit codes: 0, 1 with one line naming file and field.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "tests/app/cli_runner.h"

namespace ql::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(CliGguf, ImatrixCollectsMergesAndShowsStatistics) {
    const std::string dir = make_temp_dir();
    const CliResult a = run_cli({"imatrix", kLlama, "--calib", "synthetic:random-tokens", "--samples", "4", "--seq-len", "16",
                                 "--out", dir + "/a.gguf", "--json"});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    const json ja = json::parse(a.out);
    EXPECT_EQ(ja["entries"], 14);
    EXPECT_EQ(ja["chunk_size"], 16);
    EXPECT_EQ(ja["chunk_count"], 4);
    EXPECT_EQ(ja["format"], "gguf");
    ASSERT_EQ(ja["statistics"].size(), 14u);
    EXPECT_EQ(ja["statistics"][0]["name"], "blk.0.attn_k.weight");
    EXPECT_EQ(ja["statistics"][0]["tokens"], 64);
    EXPECT_EQ(ja["statistics"][0]["top"].size(), 8u);
    EXPECT_GT(ja["statistics"][0]["kurtosis"].get<double>(), 0);
    // The legacy format, and a merge of both: counts add.
    const CliResult b = run_cli({"imatrix", kLlama, "--calib", "synthetic:random-tokens", "--samples", "4", "--seq-len", "16",
                                 "--seed", "3", "--format", "dat", "--out", dir + "/b.dat"});
    ASSERT_EQ(b.exit_code, 0) << b.err;
    const CliResult m = run_cli({"imatrix", "--in-file", dir + "/a.gguf", "--in-file", dir + "/b.dat", "--out", dir + "/m.gguf", "--json"});
    ASSERT_EQ(m.exit_code, 0) << m.err;
    const json jm = json::parse(m.out);
    EXPECT_EQ(jm["statistics"][0]["tokens"], 128);  // 64 + 4 calls x the chunk size 16
    EXPECT_EQ(jm["datasets"].size(), 2u);
    const CliResult s = run_cli({"imatrix", "--show", dir + "/m.gguf"});
    ASSERT_EQ(s.exit_code, 0) << s.err;
    EXPECT_NE(s.out.find("attn_k"), std::string::npos) << s.out;
    EXPECT_NE(s.out.find("cossim"), std::string::npos) << s.out;
    // User errors: one line, exit 1.
    const CliResult exists = run_cli({"imatrix", kLlama, "--calib", "synthetic:random-tokens", "--out", dir + "/a.gguf"});
    EXPECT_EQ(exists.exit_code, 1);
    EXPECT_NE(exists.err.find(dir + "/a.gguf: already exists"), std::string::npos) << exists.err;
    const CliResult nothing = run_cli({"imatrix", "--out", dir + "/n.gguf"});
    EXPECT_EQ(nothing.exit_code, 1);
    EXPECT_NE(nothing.err.find("nothing to do"), std::string::npos) << nothing.err;
    const CliResult junk = run_cli({"imatrix", "--show", kLlama + "/config.json"});
    EXPECT_EQ(junk.exit_code, 1);
    EXPECT_NE(junk.err.find("config.json: "), std::string::npos) << junk.err;
    fs::remove_all(dir);
}

TEST(CliGguf, ExportPlansLlamaCppTypesAndGgufFilesOpenAsModels) {
    const std::string dir = make_temp_dir();
    const CliResult imx = run_cli({"imatrix", kLlama, "--calib", "synthetic:random-tokens", "--samples", "4", "--seq-len", "16",
                                   "--out", dir + "/i.gguf"});
    ASSERT_EQ(imx.exit_code, 0) << imx.err;
    const CliResult plan = run_cli({"export", kLlama, "--as", "gguf", "--gguf-type", "q4_0", "--imatrix", dir + "/i.gguf",
                                    "--tensor-type", "attn_v=q8_0", "--dry-run", "--json", "--out", dir + "/x.gguf"});
    ASSERT_EQ(plan.exit_code, 0) << plan.err;
    EXPECT_FALSE(fs::exists(dir + "/x.gguf"));
    const json p = json::parse(plan.out);
    EXPECT_EQ(p["gguf"]["file_type"], 2);
    EXPECT_EQ(p["gguf"]["dry_run"], true);
    std::map<std::string, json> t;
    for (const json& x : p["gguf"]["tensors"]) t[x["name"]] = x;
    EXPECT_EQ(t["blk.0.attn_v.weight"]["type"], "Q8_0");
    EXPECT_EQ(t["blk.0.ffn_down.weight"]["type"], "Q4_0");  // n/8 = 0 layers get Q4_1 with an imatrix here
    EXPECT_EQ(t["blk.0.ffn_down.weight"]["imatrix"], true);
    EXPECT_EQ(t["output.weight"]["type"], "Q8_0");
    EXPECT_EQ(t["token_embd.weight"]["imatrix"], false);     // imatrix entries exist for blk. tensors only
    // The text plan names every tensor and why.
    const CliResult text = run_cli({"export", kLlama, "--as", "gguf", "--gguf-type", "q5_k_m", "--dry-run", "--out", dir + "/y.gguf"});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("blk.1.attn_v.weight"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("FALLBACK ne[0] 64 is not a multiple of 256 (Q5_K) -> Q5_1"), std::string::npos) << text.out;
    const CliResult strict = run_cli({"export", kLlama, "--as", "gguf", "--gguf-type", "q5_k_m", "--strict", "--out", dir + "/z.gguf"});
    EXPECT_EQ(strict.exit_code, 1);
    EXPECT_NE(strict.err.find("--strict"), std::string::npos) << strict.err;
    EXPECT_FALSE(fs::exists(dir + "/z.gguf"));
    const CliResult wrong = run_cli({"export", kLlama, "--as", "hf-modelopt", "--pure", "--out", dir + "/w"});
    EXPECT_EQ(wrong.exit_code, 1);
    EXPECT_NE(wrong.err.find("--pure applies to --as gguf only"), std::string::npos) << wrong.err;

    // A written file as MODEL: inspect lists every tensor with its GGUF type; eval equals the source's.
    const CliResult ex = run_cli({"export", kLlama, "--as", "gguf", "--gguf-type", "f32", "--out", dir + "/m.gguf"});
    ASSERT_EQ(ex.exit_code, 0) << ex.err;
    const CliResult ins = run_cli({"inspect", dir + "/m.gguf", "--json"});
    ASSERT_EQ(ins.exit_code, 0) << ins.err;
    const json i = json::parse(ins.out);
    ASSERT_TRUE(i.contains("gguf"));
    EXPECT_EQ(i["gguf"]["tensors"].size(), 21u);
    EXPECT_EQ(i["gguf"]["tensors"][0]["name"], "output.weight");
    EXPECT_EQ(i["gguf"]["tensors"][0]["type"], "F32");
    EXPECT_EQ(i["gguf"]["file_type"], "ALL_F32");
    EXPECT_EQ(i["architecture"], "llama");
    const CliResult e1 = run_cli({"eval", kLlama, "--data", "synthetic:random-tokens", "--samples", "8", "--json"});
    const CliResult e2 = run_cli({"eval", dir + "/m.gguf", "--data", "synthetic:random-tokens", "--samples", "8", "--json"});
    ASSERT_EQ(e1.exit_code, 0) << e1.err;
    ASSERT_EQ(e2.exit_code, 0) << e2.err;
    EXPECT_EQ(json::parse(e1.out)["overall"]["loss"], json::parse(e2.out)["overall"]["loss"]);
    // A truncated GGUF: exit 1, one line naming the file.
    {
        const std::string bytes = slurp(dir + "/m.gguf");
        std::ofstream(dir + "/cut.gguf", std::ios::binary) << bytes.substr(0, 100);
    }
    const CliResult cut = run_cli({"inspect", dir + "/cut.gguf"});
    EXPECT_EQ(cut.exit_code, 1);
    EXPECT_NE(cut.err.find(dir + "/cut.gguf: "), std::string::npos) << cut.err;
    EXPECT_EQ(std::count(cut.err.begin(), cut.err.end(), '\n'), 1) << cut.err;
    fs::remove_all(dir);
}

// A ladder: several types in one call write DIR/T.gguf each, the same bytes and plan as the
// single-type export; it is refused where it cannot be one (a project run, a file as --out,
// another --as).
TEST(CliGguf, ALadderOfTypesWritesEachFileAsItsSingleTypeExport) {
    const std::string dir = make_temp_dir();
    const CliResult ladder = run_cli({"export", kLlama, "--as", "gguf", "--gguf-type", "q4_k_m,q8_0,iq4_nl",
                                      "--tensor-type", "attn_v=q5_0", "--out", dir + "/ladder", "--json"});
    ASSERT_EQ(ladder.exit_code, 0) << ladder.err;
    const json exports = json::parse(ladder.out)["exports"];
    ASSERT_EQ(exports.size(), 3u);
    const std::vector<std::string> types = {"q4_k_m", "q8_0", "iq4_nl"};
    for (size_t k = 0; k < types.size(); ++k) {
        const CliResult single = run_cli({"export", kLlama, "--as", "gguf", "--gguf-type", types[k], "--tensor-type",
                                          "attn_v=q5_0", "--out", dir + "/" + types[k] + ".gguf", "--json"});
        ASSERT_EQ(single.exit_code, 0) << single.err;
        EXPECT_EQ(exports[k]["out"], dir + "/ladder/" + types[k] + ".gguf");
        EXPECT_EQ(exports[k]["gguf"]["type"], types[k]);
        EXPECT_EQ(exports[k]["gguf"]["tensors"], json::parse(single.out)["gguf"]["tensors"]) << types[k];
        const std::string mine = slurp(dir + "/ladder/" + types[k] + ".gguf");
        EXPECT_GT(mine.size(), 1000u);
        EXPECT_TRUE(mine == slurp(dir + "/" + types[k] + ".gguf")) << types[k] << ": the ladder's file differs";
    }
    // The attn_v override applies in every file of the ladder.
    for (const json& e : exports) {
        int overridden = 0;
        for (const json& t : e["gguf"]["tensors"])
            overridden += t["name"].get<std::string>().find("attn_v") != std::string::npos && t["type"] == "Q5_0";
        EXPECT_EQ(overridden, 2) << e["gguf"]["type"];
    }

    const CliResult project = run_cli({"export", kLlama, "--as", "gguf", "--gguf-type", "q4_0,q8_0", "--project",
                                       dir + "/p.qlab", "--out", dir + "/p"});
    EXPECT_EQ(project.exit_code, 1);
    EXPECT_NE(project.err.find("cannot be recorded in a project"), std::string::npos) << project.err;
    EXPECT_FALSE(fs::exists(dir + "/p.qlab"));
    const CliResult file = run_cli({"export", kLlama, "--as", "gguf", "--gguf-type", "q4_0,q8_0", "--out",
                                    dir + "/q8_0.gguf", "--force"});
    EXPECT_EQ(file.exit_code, 1);
    EXPECT_NE(file.err.find("must be a folder"), std::string::npos) << file.err;
    const CliResult other = run_cli({"export", kLlama, "--as", "fakequant", "--gguf-type", "q4_0,q8_0", "--out", dir + "/f"});
    EXPECT_EQ(other.exit_code, 1);
    EXPECT_FALSE(fs::exists(dir + "/f"));
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql::test
