// SPDX-License-Identifier: GPL-3.0-or-later
// The shipped default eval suite (resources/evalsuites/default.jsonl, docs/EVAL_SUITES.md "The
// default suite"): it is what scripts/make-eval-suite writes for its default seed, its committed
// sha256 is its hash, it loads, and every item's check accepts the script's reference output
// (so every check can be passed) while a non-answer fails.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "engine/evaluation/eval_checker.h"
#include "engine/io/sha256.h"

namespace ql::evaluation {
namespace {

namespace fs = std::filesystem;
const fs::path kSuiteDir = fs::path(QUANTLAB_SOURCE_DIR) / "resources" / "evalsuites";

std::string read_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs the generator into `dir`; returns its exit status.
int run_generator(const fs::path& dir, const std::string& extra) {
    const std::string cmd = "python3 '" + std::string(QUANTLAB_SOURCE_DIR) + "/scripts/make-eval-suite' --out '" +
                            (dir / "suite.jsonl").string() + "' --references '" + (dir / "refs.jsonl").string() + "' " + extra +
                            " > '" + (dir / "log.txt").string() + "' 2>&1";
    return std::system(cmd.c_str());
}

class DefaultEvalSuite : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = fs::temp_directory_path() / "ql_default_eval_suite_test";
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        status_ = run_generator(dir_, "");
    }
    static void TearDownTestSuite() { fs::remove_all(dir_); }
    static fs::path dir_;
    static int status_;
};
fs::path DefaultEvalSuite::dir_;
int DefaultEvalSuite::status_ = -1;

TEST_F(DefaultEvalSuite, IsWhatTheScriptWritesAndItsHashIsCommitted) {
    ASSERT_EQ(status_, 0) << read_bytes(dir_ / "log.txt");
    const std::string committed = read_bytes(kSuiteDir / "default.jsonl");
    EXPECT_EQ(read_bytes(dir_ / "suite.jsonl"), committed) << "run scripts/make-eval-suite and commit the result";
    const std::string hex = sha256_hex(committed.data(), committed.size());
    EXPECT_EQ(read_bytes(kSuiteDir / "default.jsonl.sha256"), hex + "  default.jsonl\n");
    EXPECT_EQ(load_eval_suite((kSuiteDir / "default.jsonl").string()).sha256, hex);
}

TEST_F(DefaultEvalSuite, HasTheDocumentedCategoriesAndVariants) {
    const EvalSuite s = load_eval_suite((kSuiteDir / "default.jsonl").string());
    std::map<std::string, int> categories, variants, checks;
    for (const auto& item : s.items) {
        ++categories[item.category];
        ++checks[check_type(item.check)];
        if (!item.variant.empty()) ++variants[item.variant];
        if (item.category == "tool_calls") {
            EXPECT_GE(item.tool_specs.size(), 1u);
            EXPECT_LE(item.tool_specs.size(), 3u);
        }
    }
    EXPECT_EQ(s.items.size(), 285u);
    EXPECT_EQ(categories, (std::map<std::string, int>{{"adversarial", 77}, {"arithmetic", 40}, {"facts", 48}, {"instructions", 30},
                                                       {"json", 30}, {"tool_calls", 30}, {"word_problems", 30}}));
    EXPECT_EQ(variants, (std::map<std::string, int>{{"distractor", 20}, {"long_context", 20}, {"reordered_options", 12}, {"typo", 25}}));
    EXPECT_EQ(checks.size(), 7u);  // all but exact and not_contains
}

TEST_F(DefaultEvalSuite, EveryCheckAcceptsItsReferenceAndRejectsANonAnswer) {
    ASSERT_EQ(status_, 0) << read_bytes(dir_ / "log.txt");
    const EvalSuite s = load_eval_suite((kSuiteDir / "default.jsonl").string());
    std::ifstream refs(dir_ / "refs.jsonl");
    size_t n = 0;
    for (std::string line; std::getline(refs, line); ++n) {
        const auto j = nlohmann::json::parse(line);
        const EvalItem* item = s.find(j["id"]);
        ASSERT_NE(item, nullptr) << line;
        const ItemOutcome pass = check(*item, j["output"].get<std::string>());
        EXPECT_TRUE(pass.passed) << item->id << ": " << j["output"] << " -> " << (pass.details.empty() ? "" : pass.details.back().value);
        if (check_type(item->check) != "instructions") EXPECT_FALSE(check(*item, "I do not know.").passed) << item->id;
    }
    EXPECT_EQ(n, s.items.size());
}

TEST_F(DefaultEvalSuite, KeepRestrictsFactsAndDropsTheirVariants) {
    const fs::path dir = dir_ / "keep";
    fs::create_directories(dir);
    std::ofstream(dir / "ids.txt") << "# facts the reference model knows\nfact-capital-france\nfact-bees\n\nfact-gold-symbol\n";
    ASSERT_EQ(run_generator(dir, "--keep '" + (dir / "ids.txt").string() + "'"), 0) << read_bytes(dir / "log.txt");
    const EvalSuite kept = load_eval_suite((dir / "suite.jsonl").string());
    const EvalSuite full = load_eval_suite((kSuiteDir / "default.jsonl").string());
    std::map<std::string, int> categories;
    for (const auto& item : kept.items) {
        ++categories[item.category];
        if (item.category == "facts") EXPECT_TRUE(item.id == "fact-capital-france" || item.id == "fact-bees" || item.id == "fact-gold-symbol");
        if (!item.variant_of.empty()) {
            const EvalItem* original = kept.find(item.variant_of);
            ASSERT_NE(original, nullptr);
            if (original->category == "facts") EXPECT_TRUE(item.variant_of == "fact-bees" || item.variant_of == "fact-gold-symbol") << item.id;
        }
    }
    EXPECT_EQ(categories["facts"], 3);
    EXPECT_EQ(categories["arithmetic"], 40);
    // Of the facts' 24 variants only fact-bees-reordered and the one of fact-gold-symbol stay.
    EXPECT_EQ(categories["adversarial"], 77 - 24 + 2);
    EXPECT_EQ(kept.items.size(), full.items.size() - 45 - 22);
    std::ofstream(dir / "bad.txt") << "fact-nonexistent\n";
    EXPECT_NE(run_generator(dir, "--keep '" + (dir / "bad.txt").string() + "'"), 0);
    EXPECT_NE(read_bytes(dir / "log.txt").find("no item has the id fact-nonexistent"), std::string::npos);
}

}  // namespace
}  // namespace ql::evaluation
