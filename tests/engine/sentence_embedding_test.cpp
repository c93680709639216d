// SPDX-License-Identifier: GPL-3.0-or-later
// Sentence encoders: the sentence-transformers configuration (modules.json, pooling config),
// pooling modes against hand-computed values, sentence and pairs files, masked-LM positions,
// rank statistics, and the evaluator's encoder path (the real all-MiniLM-L6-v2 where a model is
// needed; its folder comes from the peers venv, tests/peer_paths.h).
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "engine/core/errors.h"
#include "engine/data/sentence_data.h"
#include "engine/eval/encoder_evaluator.h"
#include "engine/eval/rank_statistics.h"
#include "engine/eval/sentence_embedder.h"
#include "engine/loading/model_source.h"
#include "engine/models/sentence_embedding_config.h"
#include "engine/models/sentence_pooling.h"
#include "engine/text/tokenizer.h"
#include "tests/engine/user_error_text.h"
#include "tests/peer_paths.h"
#include "tests/temp_folder.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
using test::user_error_text;

void write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << text;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(SentenceEmbeddingConfig, ReadsTheRealMiniLmFolder) {
    const SentenceEmbeddingConfig c = read_sentence_embedding_config(test::minilm_dir(), 384);
    EXPECT_EQ(c.source, "modules.json");
    EXPECT_EQ(c.pooling, std::vector<std::string>{"mean"});
    EXPECT_TRUE(c.normalize);
    EXPECT_EQ(c.max_seq_length, 256);
    EXPECT_FALSE(c.lowercase);
    EXPECT_EQ(c.module_folders, (std::vector<std::string>{"1_Pooling", "2_Normalize"}));
}

TEST(SentenceEmbeddingConfig, AFolderWithoutModulesJsonIsMeanPoolingWithoutNormalisation) {
    const std::string dir = test::temp_dir("sentences");
    const SentenceEmbeddingConfig c = read_sentence_embedding_config(dir, 32);
    EXPECT_EQ(c.source, "default");
    EXPECT_EQ(c.pooling_name(), "mean");
    EXPECT_FALSE(c.normalize);
    EXPECT_EQ(c.max_seq_length, 0);
    fs::remove_all(dir);
}

// modules.json with a Transformer, a Pooling in `pooling` and `extra` modules after it.
std::string folder_with(const std::string& pooling_config, const std::string& extra = "") {
    const std::string dir = test::temp_dir("sentences");
    write(dir + "/modules.json",
          R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},)"
          R"({"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.sentence_transformer.modules.Pooling"})" +
              extra + "]");
    write(dir + "/1_Pooling/config.json", pooling_config);
    write(dir + "/sentence_bert_config.json", R"({"max_seq_length": 128, "do_lower_case": true})");
    return dir;
}

TEST(SentenceEmbeddingConfig, LegacyBooleansConcatenateInSentenceTransformersOrder) {
    // pooling.py _LEGACY_POOLING_MODE_KWARGS order: cls, max, mean, mean_sqrt_len_tokens, ...
    const std::string dir = folder_with(
        R"({"word_embedding_dimension": 32, "pooling_mode_mean_tokens": true, "pooling_mode_cls_token": true,
            "pooling_mode_max_tokens": false, "pooling_mode_lasttoken": true})");
    const SentenceEmbeddingConfig c = read_sentence_embedding_config(dir, 32);
    EXPECT_EQ(c.pooling, (std::vector<std::string>{"cls", "mean", "lasttoken"}));
    EXPECT_EQ(c.max_seq_length, 128);
    EXPECT_TRUE(c.lowercase);
    EXPECT_FALSE(c.normalize);
    fs::remove_all(dir);
}

TEST(SentenceEmbeddingConfig, NewStylePoolingModeKeepsItsOrder) {
    const std::string dir = folder_with(R"({"embedding_dimension": 32, "pooling_mode": ["max", "cls"]})",
                                        R"(,{"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"})");
    const SentenceEmbeddingConfig c = read_sentence_embedding_config(dir, 32);
    EXPECT_EQ(c.pooling_name(), "max+cls");
    EXPECT_TRUE(c.normalize);
    fs::remove_all(dir);
}

TEST(SentenceEmbeddingConfig, BadFilesNameTheFileAndKey) {
    std::string dir = folder_with(R"({"pooling_mode": "median"})");
    std::string e = user_error_text([&] { read_sentence_embedding_config(dir, 32); });
    EXPECT_TRUE(contains(e, "1_Pooling/config.json: key 'pooling_mode': 'median' is not a pooling mode")) << e;
    fs::remove_all(dir);
    dir = folder_with(R"({"word_embedding_dimension": 384})");
    e = user_error_text([&] { read_sentence_embedding_config(dir, 32); });
    EXPECT_TRUE(contains(e, "word_embedding_dimension': 384 differs from the model's hidden_size 32")) << e;
    fs::remove_all(dir);
    dir = folder_with("{}", R"(,{"idx":2,"name":"2","path":"2_Dense","type":"sentence_transformers.models.Dense"})");
    e = user_error_text([&] { read_sentence_embedding_config(dir, 32); });
    EXPECT_TRUE(contains(e, "modules.json: key '[2].type': module 'sentence_transformers.models.Dense' is not supported")) << e;
    fs::remove_all(dir);
    dir = folder_with("{}");
    write(dir + "/modules.json",
          R"([{"path":"","type":"x.Transformer"},{"path":"../../etc","type":"x.Pooling"}])");
    e = user_error_text([&] { read_sentence_embedding_config(dir, 32); });
    EXPECT_TRUE(contains(e, "'../../etc' leaves the model folder")) << e;
    write(dir + "/modules.json", "[{\"type\": 3}]");
    e = user_error_text([&] { read_sentence_embedding_config(dir, 32); });
    EXPECT_TRUE(contains(e, "modules.json: key '[0].type'")) << e;
    write(dir + "/modules.json", "{not json");
    e = user_error_text([&] { read_sentence_embedding_config(dir, 32); });
    EXPECT_TRUE(contains(e, "modules.json: not valid JSON")) << e;
    fs::remove_all(dir);
}

// Two sentences of hidden size 2: row 0 has 3 real tokens, row 1 has 1 (then padding).
struct Batch {
    at::Tensor hidden = at::tensor({1.f, 2.f, 3.f, -4.f, 5.f, 0.f, 9.f, 9.f,  //
                                    -1.f, 7.f, 8.f, 8.f, 6.f, 6.f, 5.f, 5.f})
                            .reshape({2, 4, 2});
    at::Tensor mask = at::tensor({1, 1, 1, 0, 1, 0, 0, 0}, at::kLong).reshape({2, 4});
};

std::vector<float> pooled(const std::string& mode, bool normalize = false) {
    SentenceEmbeddingConfig c;
    c.pooling = {mode};
    c.normalize = normalize;
    const Batch b;
    const at::Tensor p = pool_sentence_embeddings(b.hidden, b.mask, c).contiguous();
    return std::vector<float>(p.data_ptr<float>(), p.data_ptr<float>() + p.numel());
}

TEST(SentencePooling, EveryModeUsesOnlyTheRealTokens) {
    EXPECT_EQ(pooled("cls"), (std::vector<float>{1, 2, -1, 7}));
    EXPECT_EQ(pooled("max"), (std::vector<float>{5, 2, -1, 7}));
    const std::vector<float> mean = pooled("mean");  // (1 + 3 + 5) / 3, (2 - 4 + 0) / 3
    EXPECT_EQ(mean[0], 3.f);
    EXPECT_FLOAT_EQ(mean[1], -2.f / 3.f);
    EXPECT_EQ(mean[2], -1.f);
    EXPECT_EQ(mean[3], 7.f);
    const std::vector<float> sqrt_len = pooled("mean_sqrt_len_tokens");
    EXPECT_FLOAT_EQ(sqrt_len[0], 9.f / std::sqrt(3.f));
    EXPECT_FLOAT_EQ(sqrt_len[3], 7.f);
    // Position weights 1, 2, 3: (1*1 + 2*3 + 3*5) / 6, (1*2 + 2*-4 + 3*0) / 6.
    const std::vector<float> weighted = pooled("weightedmean");
    EXPECT_FLOAT_EQ(weighted[0], 22.f / 6.f);
    EXPECT_FLOAT_EQ(weighted[1], -1.f);
    EXPECT_EQ(pooled("lasttoken"), (std::vector<float>{5, 0, -1, 7}));
}

TEST(SentencePooling, ModesConcatenateAndNormaliseToUnitLength) {
    SentenceEmbeddingConfig c;
    c.pooling = {"cls", "mean"};
    c.normalize = true;
    const Batch b;
    const at::Tensor p = pool_sentence_embeddings(b.hidden, b.mask, c);
    ASSERT_EQ(p.sizes(), (at::IntArrayRef{2, 4}));
    // Row 0: [1, 2, 3, -2/3] / sqrt(1 + 4 + 9 + 4/9).
    EXPECT_FLOAT_EQ(p[0][2].item<float>(), 3.f / std::sqrt(14.f + 4.f / 9.f));
    EXPECT_NEAR(p.norm(2, {1}).sub(1).abs().max().item<double>(), 0.0, 1e-6);
    EXPECT_TRUE(contains(user_error_text([&] { pool_sentence_embeddings(b.hidden, b.mask.slice(1, 0, 2), c); }),
                         "expected hidden [B, T, H] and attention_mask [B, T]"));
}

TEST(SentenceData, LinesDropBlankOnesUnlessKeptAndEndWithoutAnEmptyLine) {
    const std::string dir = test::temp_dir("sentences");
    write(dir + "/s.txt", "first line\r\n\n   \nsecond line\nthird");
    const std::vector<SentenceLine> kept = read_sentence_lines(dir + "/s.txt", true);
    ASSERT_EQ(kept.size(), 5u);
    EXPECT_EQ(kept[0].text, "first line");
    EXPECT_EQ(kept[4].text, "third");
    const std::vector<SentenceLine> lines = read_sentence_lines(dir + "/s.txt", false);
    ASSERT_EQ(lines.size(), 3u);
    EXPECT_EQ(lines[1].text, "second line");
    EXPECT_EQ(lines[1].line, 4);
    write(dir + "/t.txt", "a\n");
    EXPECT_EQ(read_sentence_lines(dir + "/t.txt", true).size(), 1u);
    fs::remove_all(dir);
}

TEST(SentenceData, PairsFilesAreRecognisedAndCheckedLineByLine) {
    const std::string dir = test::temp_dir("sentences");
    write(dir + "/p.tsv", "# comment\n\nA cat sleeps.\tA cat naps.\t4.5\nA dog.\tThe sea.\t0\n");
    EXPECT_TRUE(is_pairs_file(dir + "/p.tsv"));
    const std::vector<SentencePair> p = read_sentence_pairs(dir + "/p.tsv");
    ASSERT_EQ(p.size(), 2u);
    EXPECT_EQ(p[0].second, "A cat naps.");
    EXPECT_DOUBLE_EQ(p[0].score, 4.5);
    write(dir + "/text.txt", "Just a sentence.\nAnother one\twith a tab.\n");
    EXPECT_FALSE(is_pairs_file(dir + "/text.txt"));
    write(dir + "/bad.tsv", "a\tb\t1\nc\td\tmany\n");
    EXPECT_EQ(user_error_text([&] { read_sentence_pairs(dir + "/bad.tsv"); }),
              dir + "/bad.tsv:2: the score 'many' is not a finite number");
    write(dir + "/bad.tsv", "a\tb\t1\nc\td\n");
    EXPECT_EQ(user_error_text([&] { read_sentence_pairs(dir + "/bad.tsv"); }),
              dir + "/bad.tsv:2: expected sentence1<TAB>sentence2<TAB>score, got 2 field(s)");
    write(dir + "/bad.tsv", "a\tb\tnan\n");
    EXPECT_FALSE(is_pairs_file(dir + "/bad.tsv"));
    write(dir + "/one.tsv", "a\tb\t1\n");
    EXPECT_TRUE(contains(user_error_text([&] { read_sentence_pairs(dir + "/one.tsv"); }), "1 pair(s); a rank correlation needs at least 2"));
    fs::remove_all(dir);
}

// [CLS]=1 + one id per character + [SEP]=2, cut to max_tokens.
std::vector<int64_t> char_ids(const std::string& s, const std::string&, int64_t max_tokens) {
    std::vector<int64_t> ids{1};
    for (char c : s)
        if (static_cast<int64_t>(ids.size()) + 1 < max_tokens) ids.push_back(10 + (c - 'a'));
    ids.push_back(2);
    return ids;
}

TEST(SentenceData, SentencesArePaddedWithAMask) {
    const Dataset d = make_sentence_dataset({"abc", "", "abcdefgh"}, char_ids, 6, 0, "mem");
    ASSERT_EQ(d.inputs.sizes(), (at::IntArrayRef{3, 6}));
    EXPECT_EQ(d.attention_mask.sum(1)[0].item<int64_t>(), 5);
    EXPECT_EQ(d.attention_mask.sum(1)[1].item<int64_t>(), 2);
    EXPECT_EQ(d.attention_mask.sum(1)[2].item<int64_t>(), 6);
    EXPECT_EQ(d.inputs[1][2].item<int64_t>(), 0);
    EXPECT_TRUE(d.targets.eq(Dataset::kIgnoreIndex).all().item<bool>());
    // A slice drops the padding columns no row of it uses.
    const Dataset s = slice_dataset(d, 0, 2);
    EXPECT_EQ(s.inputs.size(1), 5);
    EXPECT_EQ(s.attention_mask.size(1), 5);
}

TEST(SentenceData, MaskedLmPositionsFollowTheDocumentedDraw) {
    std::vector<std::string> sentences;
    for (int i = 0; i < 40; ++i) sentences.push_back("abcdefghijklmnop");
    const Dataset d = make_sentence_dataset(sentences, char_ids, 32, 0, "mem");
    const Dataset m = make_masked_lm_dataset(d, 99, 7);
    int64_t masked = 0;
    for (int64_t row = 0; row < m.size(); ++row) {
        int64_t in_row = 0;
        for (int64_t pos = 0; pos < m.inputs.size(1); ++pos) {
            const bool is_masked = m.inputs[row][pos].item<int64_t>() == 99;
            EXPECT_EQ(is_masked, m.targets[row][pos].item<int64_t>() != Dataset::kIgnoreIndex);
            if (!is_masked) continue;
            EXPECT_EQ(m.targets[row][pos].item<int64_t>(), d.inputs[row][pos].item<int64_t>());
            EXPECT_GT(pos, 0);   // never [CLS]
            EXPECT_LT(pos, 17);  // never [SEP] (position 17) nor padding
            ++in_row;
        }
        EXPECT_GE(in_row, 1);
        masked += in_row;
    }
    // 16 maskable tokens x 40 sentences x 0.15 = 96 expected.
    EXPECT_GT(masked, 60);
    EXPECT_LT(masked, 140);
    // The draw of the documented formula, for one position.
    const uint64_t draw = mix64(mix64(7) ^ mix64(uint64_t{3} << 32 | 5));
    EXPECT_EQ(m.inputs[3][5].item<int64_t>() == 99, static_cast<double>(draw) / 18446744073709551616.0 < 0.15);
}

TEST(RankStatistics, SpearmanAveragesTiesAsScipy) {
    // scipy.stats.spearmanr([1, 2, 2, 3, 5], [2, 1, 4, 3, 5]).statistic = 0.6668859288553503
    EXPECT_NEAR(spearman_correlation({1, 2, 2, 3, 5}, {2, 1, 4, 3, 5}), 0.6668859288553503, 1e-12);
    EXPECT_DOUBLE_EQ(spearman_correlation({1, 2, 3}, {30, 20, 10}), -1.0);
    EXPECT_TRUE(std::isnan(spearman_correlation({1, 1, 1}, {1, 2, 3})));
    EXPECT_EQ(average_ranks({10, 30, 20, 30}), (std::vector<double>{1, 3.5, 2, 3.5}));
}

TEST(RankStatistics, PercentileInterpolatesAsNumpy) {
    // numpy.percentile([0.9, 0.1, 0.5, 0.7], 5) = 0.16
    EXPECT_NEAR(percentile({0.9, 0.1, 0.5, 0.7}, 5), 0.16, 1e-12);
    EXPECT_DOUBLE_EQ(percentile({3, 1, 2}, 0), 1);
    EXPECT_DOUBLE_EQ(percentile({3, 1, 2}, 100), 3);
    EXPECT_DOUBLE_EQ(percentile({4}, 5), 4);
}

TEST(Tokenizer, EncodeTruncatedKeepsTheSpecialTokensAsTokenizersDoes) {
    const Tokenizer t = Tokenizer::from_file(test::minilm_dir() + "/tokenizer.json");
    const std::vector<int32_t> full = t.encode("the quick brown fox jumps over the lazy dog", true);
    ASSERT_EQ(full.size(), 11u);  // [CLS] 9 words [SEP]
    const std::vector<int32_t> cut = t.encode_truncated("the quick brown fox jumps over the lazy dog", 6);
    EXPECT_EQ(cut, (std::vector<int32_t>{101, full[1], full[2], full[3], full[4], 102}));
    EXPECT_EQ(t.encode_truncated("the quick brown fox jumps over the lazy dog", 0), full);
    EXPECT_EQ(t.encode_truncated("", 6), (std::vector<int32_t>{101, 102}));
}

TEST(EncoderEvaluation, AnEncoderWithoutTeacherOrPairsSaysWhatItNeeds) {
    OpenedModel m = open_model(test::minilm_dir());
    ASSERT_TRUE(m.model->is_encoder());
    const Dataset d = make_sentence_dataset({"A first sentence.", "A second one."}, m.data.encode_sentence, 256, 0, "mem");
    NullJobSink sink;
    CancellationToken cancel;
    const std::string e = user_error_text([&] { evaluate(*m.model, nullptr, d, EvalOptions{}, sink, cancel); });
    EXPECT_TRUE(contains(e, "is a sentence encoder: it is evaluated by embedding cosine to a teacher (--teacher T")) << e;
    // The teacher being the model itself: every cosine is 1.
    const EvalReport r = evaluate(*m.model, m.model.get(), d, EvalOptions{}, sink, cancel);
    EXPECT_NEAR(*r.overall.cosine_mean, 1.0, 1e-6);
    EXPECT_NEAR(*r.overall.cosine_min, 1.0, 1e-6);
    EXPECT_EQ(r.overall.tokens, 0);
    EXPECT_EQ(r.overall.examples, 2);
    EXPECT_EQ(r.pooling, "mean, normalized");
    // Logit metrics of an encoder without an MLM head are refused, not read from hidden states.
    const std::string logits = user_error_text([&] { evaluate_logits(*m.model, nullptr, d, EvalOptions{}, sink, cancel); });
    EXPECT_TRUE(contains(logits, "gives outputs of shape [2, 6, 384], not token logits [batch, positions, 30522]")) << logits;
}

TEST(EncoderEvaluation, EmbeddingsDoNotDependOnBatchingOrPadding) {
    OpenedModel m = open_model(test::minilm_dir());
    const Dataset d = make_sentence_dataset({"Short.", "A somewhat longer sentence about build systems and targets.", "Mid length here."},
                                            m.data.encode_sentence, 256, 0, "mem");
    NullJobSink sink;
    CancellationToken cancel;
    const at::Tensor one = embed_sentences(*m.model, d, 1, sink, cancel);
    const at::Tensor all = embed_sentences(*m.model, d, 3, sink, cancel);
    EXPECT_LT((one - all).abs().max().item<double>(), 1e-6);
    EXPECT_NEAR(all.norm(2, {1}).sub(1).abs().max().item<double>(), 0.0, 1e-6);
}

}  // namespace
}  // namespace ql
