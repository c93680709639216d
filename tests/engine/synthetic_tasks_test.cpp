// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <set>

#include "engine/core/errors.h"
#include "engine/data/synthetic_tasks.h"

namespace ql {
namespace {

const std::vector<SyntheticDomain> kAnswerDomains = {SyntheticDomain::Add, SyntheticDomain::Sub, SyntheticDomain::Mul,
                                                     SyntheticDomain::Copy, SyntheticDomain::Reverse};

// Reads a number written least significant digit first.
int64_t read_lsb_first(const std::vector<int64_t>& tokens, size_t begin, size_t count) {
    int64_t v = 0, scale = 1;
    for (size_t i = 0; i < count; ++i, scale *= 10) {
        const int64_t d = tokens[begin + i] - synthetic_vocab::kDigit0;
        EXPECT_GE(d, 0);
        EXPECT_LE(d, 9);
        v += d * scale;
    }
    return v;
}

TEST(SyntheticTasks, SameDomainSeedAndIndexGiveTheSameProblem) {
    for (auto d : kAnswerDomains)
        for (auto split : {DataSplit::Train, DataSplit::Validation, DataSplit::All})
            for (uint64_t i : {0u, 1u, 977u}) {
                const auto a = generate_example(d, split, 42, i), b = generate_example(d, split, 42, i);
                EXPECT_EQ(a.tokens, b.tokens);
                EXPECT_EQ(a.answer_begin, b.answer_begin);
            }
}

TEST(SyntheticTasks, SeedsAndIndicesGiveDifferentProblems) {
    std::set<std::vector<int64_t>> seen;
    for (uint64_t seed : {0u, 1u})
        for (uint64_t i = 0; i < 200; ++i) seen.insert(generate_example(SyntheticDomain::Add, DataSplit::Train, seed, i).tokens);
    EXPECT_GT(seen.size(), 395u);  // 10^6 problems: collisions are rare
}

TEST(SyntheticTasks, ArithmeticAnswersAreRight) {
    for (auto d : {SyntheticDomain::Add, SyntheticDomain::Sub, SyntheticDomain::Mul})
        for (uint64_t i = 0; i < 500; ++i) {
            const SyntheticExample e = generate_example(d, DataSplit::All, 7, i);
            ASSERT_EQ(e.tokens.size(), 14u);
            EXPECT_EQ(e.tokens.front(), synthetic_vocab::kBos);
            EXPECT_EQ(e.tokens.back(), synthetic_vocab::kEos);
            EXPECT_EQ(e.answer_begin, 9);
            EXPECT_EQ(e.tokens[8], synthetic_vocab::kEquals);
            const int64_t a = read_lsb_first(e.tokens, 1, 3), b = read_lsb_first(e.tokens, 5, 3);
            const int64_t c = read_lsb_first(e.tokens, 9, 4);
            if (d == SyntheticDomain::Add) {
                EXPECT_EQ(e.tokens[4], synthetic_vocab::kPlus);
                EXPECT_EQ(c, a + b);
            } else if (d == SyntheticDomain::Sub) {
                EXPECT_EQ(e.tokens[4], synthetic_vocab::kMinus);
                EXPECT_GE(a, b);
                EXPECT_EQ(c, a - b);
            } else {
                EXPECT_EQ(e.tokens[4], synthetic_vocab::kTimes);
                const int64_t m = e.tokens[5] - synthetic_vocab::kDigit0;  // in every digit place
                EXPECT_EQ(b, 111 * m);
                EXPECT_EQ(c, a * m);
            }
        }
}

TEST(SyntheticTasks, RenderShowsDigitsAsStored) {
    // 42 + 917 = 959, every number least significant digit first.
    SyntheticExample e;
    e.tokens = {synthetic_vocab::kBos};
    for (int64_t v : {2, 4, 0}) e.tokens.push_back(synthetic_vocab::kDigit0 + v);
    e.tokens.push_back(synthetic_vocab::kPlus);
    for (int64_t v : {7, 1, 9}) e.tokens.push_back(synthetic_vocab::kDigit0 + v);
    e.tokens.push_back(synthetic_vocab::kEquals);
    for (int64_t v : {9, 5, 9, 0}) e.tokens.push_back(synthetic_vocab::kDigit0 + v);
    e.tokens.push_back(synthetic_vocab::kEos);
    EXPECT_EQ(render_example(e), "240+719=9590");
    EXPECT_EQ(synthetic_vocab::decode({1, 8, 5, 2}), "<bos>0+<eos>");
}

TEST(SyntheticTasks, CopyAndReverseAnswers) {
    for (uint64_t i = 0; i < 200; ++i) {
        const auto c = generate_example(SyntheticDomain::Copy, DataSplit::Train, 3, i);
        const auto r = generate_example(SyntheticDomain::Reverse, DataSplit::Train, 3, i);
        for (const auto* e : {&c, &r}) {
            const size_t n = static_cast<size_t>(e->answer_begin) - 2;  // letters before '|'
            ASSERT_GE(n, 4u);
            ASSERT_LE(n, 8u);
            ASSERT_EQ(e->tokens.size(), 2 * n + 3);
            EXPECT_EQ(e->tokens[n + 1], synthetic_vocab::kSep);
            for (size_t k = 0; k < n; ++k) {
                const int64_t expected = e == &c ? e->tokens[1 + k] : e->tokens[n - k];
                EXPECT_EQ(e->tokens[n + 2 + k], expected);
            }
        }
    }
}

TEST(SyntheticTasks, TrainAndValidationNeverShareAProblem) {
    for (auto d : kAnswerDomains) {
        std::set<std::vector<int64_t>> train, validation;
        for (uint64_t seed : {0u, 5u})
            for (uint64_t i = 0; i < 3000; ++i) {
                train.insert(generate_example(d, DataSplit::Train, seed, i).tokens);
                validation.insert(generate_example(d, DataSplit::Validation, seed + 1, i).tokens);
            }
        for (const auto& v : validation) EXPECT_EQ(train.count(v), 0u) << domain_name(d);
        EXPECT_GT(validation.size(), 100u);
    }
}

TEST(SyntheticTasks, ValidationIsAboutATenthOfEachProblemSpace) {
    int64_t held_out = 0;
    for (int64_t a = 0; a < 1000; ++a)
        for (int64_t b = 0; b < 10; ++b) held_out += is_validation_problem(SyntheticDomain::Mul, {a, b});
    EXPECT_NEAR(held_out, 1000, 120);
}

TEST(SyntheticTasks, ParsesSpecs) {
    using D = SyntheticDomain;
    EXPECT_EQ(parse_synthetic_spec("synthetic:arith"), (std::vector<D>{D::Add, D::Sub, D::Mul}));
    EXPECT_EQ(parse_synthetic_spec("synthetic:arith:+"), (std::vector<D>{D::Add}));
    EXPECT_EQ(parse_synthetic_spec("synthetic:arith:-"), (std::vector<D>{D::Sub}));
    EXPECT_EQ(parse_synthetic_spec("synthetic:arith:*"), (std::vector<D>{D::Mul}));
    EXPECT_EQ(parse_synthetic_spec("synthetic:arith:*+"), (std::vector<D>{D::Mul, D::Add}));
    EXPECT_EQ(parse_synthetic_spec("synthetic:copy"), (std::vector<D>{D::Copy}));
    EXPECT_EQ(parse_synthetic_spec("synthetic:reverse"), (std::vector<D>{D::Reverse}));
    EXPECT_EQ(parse_synthetic_spec("synthetic:random-tokens"), (std::vector<D>{D::RandomTokens}));
    for (const char* bad : {"synthetic:", "synthetic:arith:", "synthetic:arith:/", "synthetic:arith:++", "synthetic:math"}) {
        try {
            parse_synthetic_spec(bad);
            ADD_FAILURE() << bad;
        } catch (const UserError& e) {
            EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
        }
    }
}

TEST(SyntheticTasks, VocabularyEncodesTextAndNamesBadCharacters) {
    EXPECT_EQ(synthetic_vocab::encode("12+a|\n=", "x.txt"),
              (std::vector<int64_t>{9, 10, synthetic_vocab::kPlus, synthetic_vocab::kLetterA, synthetic_vocab::kSep,
                                    synthetic_vocab::kEquals}));
    try {
        synthetic_vocab::encode("ab\ncD", "notes.txt");
        FAIL();
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("notes.txt: line 2, column 2"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace ql
