// SPDX-License-Identifier: GPL-3.0-or-later
// Experiment files: parsing, validation with errors naming the file and field, grid expansion,
// replicate seeds, the built-in templates, and the analysis of finished runs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/api/experiment_api.h"
#include "engine/core/errors.h"
#include "engine/experiments/experiment_analysis.h"
#include "engine/experiments/experiment_spec.h"

namespace ql::experiments {
namespace {

using nlohmann::json;

const char* kSmall = R"({"quantlab_experiment": 1, "name": "small", "replicates": 2, "seed": 10,
  "base": {"recipe": "NVFP4_DEFAULT", "steps": 5},
  "grid": {"method": ["ptq", "qad"], "lr": [1e-4, 3e-4]},
  "metrics": ["exact_match", "kl"],
  "comparisons": [{"a": {"method": "qad"}, "b": {"method": "ptq"}}]})";

std::string error_of(const std::string& text) {
    try {
        parse_experiment(text, "x.json");
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

TEST(ExperimentSpec, ExpandsTheGridRowMajorWithReplicateSeeds) {
    const ExperimentSpec s = parse_experiment(kSmall, "small.json");
    ASSERT_EQ(s.axes, (std::vector<std::string>{"lr", "method"}));
    ASSERT_EQ(s.cells.size(), 4u);
    EXPECT_EQ(s.cells[0].key, "lr=0.0001,method=ptq");
    EXPECT_EQ(s.cells[1].key, "lr=0.0001,method=qad");
    EXPECT_EQ(s.cells[3].key, "lr=0.0003,method=qad");
    EXPECT_EQ(s.cells[3].parameters.method, "qad");
    EXPECT_DOUBLE_EQ(s.cells[3].parameters.lr, 3e-4);
    EXPECT_EQ(s.cells[3].parameters.steps, 5);
    EXPECT_EQ(s.cells[3].parameters.recipe, "NVFP4_DEFAULT");
    const std::vector<PlannedRun> plan = plan_runs(s);
    ASSERT_EQ(plan.size(), 8u);
    EXPECT_EQ(plan[0].seed, 10u);
    EXPECT_EQ(plan[3].replicate, 0);
    EXPECT_EQ(plan[4].replicate, 1);
    EXPECT_EQ(plan[4].seed, 11u);
    EXPECT_EQ(plan[4].cell->key, s.cells[0].key);
}

TEST(ExperimentSpec, MoreReplicatesKeepTheIdentityOtherChangesDoNot) {
    const ExperimentSpec a = parse_experiment(kSmall, "a");
    json j = json::parse(kSmall);
    j["replicates"] = 5;
    j["claim"] = "prose";
    EXPECT_EQ(parse_experiment(j.dump(), "b").identity_sha256, a.identity_sha256);
    j["base"]["steps"] = 6;
    EXPECT_NE(parse_experiment(j.dump(), "c").identity_sha256, a.identity_sha256);
}

TEST(ExperimentSpec, BadFieldsNameTheFileAndField) {
    EXPECT_NE(error_of("{").find("x.json"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 2, "name": "a"})").find("'quantlab_experiment'"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "A b"})").find("'name'"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "a", "bogus": 1})").find("'bogus'"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "a", "base": {"stepz": 3}})").find("'base.stepz'"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "a", "grid": {"method": ["ptq", "kd"]}})").find("'grid.method[1]'"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "a", "grid": {"steps": [1, 1]}})").find("twice"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "a", "grid": {"lr": [-1]}})").find("'grid.lr[0]'"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "a", "replicates": 0})").find("'replicates'"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "a", "metrics": ["speed"]})").find("'metrics'"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "a", "grid": {"method": ["ptq", "qat"]},
        "comparisons": [{"a": {"method": "qad"}, "b": {"method": "ptq"}}]})").find("'comparisons[0].a.method'"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "a", "base": {"eval_split": "train"}})")
                  .find("'base.eval_split' must be validation or all"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "a", "name": "b"})").find("duplicate"), std::string::npos);
    EXPECT_THROW(load_experiment("/nonexistent/e.json"), UserError);
}

TEST(ExperimentSpec, EveryTemplateParsesAndTheOverridesApply) {
    const std::vector<std::string> names = experiment_template_names();
    EXPECT_EQ(names.front(), "qad-vs-qat");
    for (const std::string& name : names) {
        const ExperimentSpec s = load_experiment(name);
        EXPECT_EQ(s.name, name);
        EXPECT_FALSE(s.claim.empty()) << name;
        EXPECT_FALSE(s.source.empty()) << name;
        EXPECT_FALSE(s.cells.empty()) << name;
    }
    ExperimentOverrides o;
    o.replicates = 2;
    o.model = "/some/model";
    o.steps = 4;
    const ExperimentSpec q = load_experiment("qad-vs-qat", o);
    EXPECT_EQ(q.replicates, 2);
    ASSERT_EQ(q.cells.size(), 3u);
    EXPECT_EQ(q.cells[1].key, "method=qat");
    EXPECT_EQ(q.cells[1].parameters.model, "/some/model");
    EXPECT_EQ(q.cells[1].parameters.steps, 4);
    // Inline recipes: a cell names them, the run gets the recipe JSON.
    const ExperimentSpec n = load_experiment("nvfp4-vs-mxfp4");
    bool inline_seen = false;
    for (const Cell& c : n.cells)
        if (c.values.at("recipe") == "INT4_W4A4_G64") {
            inline_seen = true;
            EXPECT_EQ(json::parse(c.parameters.recipe_json)["quant_cfg"][1]["cfg"]["format"], "int4");
        }
    EXPECT_TRUE(inline_seen);
}

std::string load_error(const std::string& name, const ExperimentOverrides& o) {
    try {
        load_experiment(name, o);
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

std::string models_error(const std::string& text) {
    try {
        check_experiment_models(parse_experiment(text, "m.json"));
    } catch (const UserError& e) {
        return e.what();
    }
    return "no error";
}

const std::string kBert = std::string(QUANTLAB_TEST_DATA_DIR) + "/models/bert";
const std::string kLlama = std::string(QUANTLAB_TEST_DATA_DIR) + "/models/llama";

TEST(ExperimentSpec, TemplatesTakeTheirEncoderFormOnASentenceEncoder) {
    char tmpl[] = "/tmp/quantlab-encoder-form-XXXXXX";
    const std::string dir = mkdtemp(tmpl);
    const std::string sentences = dir + "/sentences.txt";
    {
        std::ofstream out(sentences);
        for (int i = 0; i < 90; ++i) out << "Sentence number " << i << " of the corpus.\n";
    }
    ExperimentOverrides o;
    o.model = kBert;
    o.encoder = true;
    o.data = sentences;
    o.pairs = "/data/pairs.tsv";
    // qad-vs-qat keeps its three methods: QAT trains the encoder's contrastive loss.
    const ExperimentSpec q = load_experiment("qad-vs-qat", o);
    ASSERT_EQ(q.cells.size(), 3u);
    EXPECT_EQ(q.cells[0].key, "method=ptq");
    EXPECT_EQ(q.cells[1].key, "method=qat");
    EXPECT_EQ(q.cells[2].key, "method=qad");
    EXPECT_EQ(q.metrics, (std::vector<std::string>{"cosine_mean", "cosine_p5", "cosine_min", "spearman", "fp_spearman",
                                                   "contrastive_loss"}));
    ASSERT_EQ(q.comparisons.size(), 3u);
    EXPECT_EQ(q.comparisons[0].name, "QAD − QAT");
    for (const Cell& c : q.cells) {
        EXPECT_EQ(c.parameters.data, sentences);
        EXPECT_EQ(c.parameters.eval_data, "");  // the data's validation split
        EXPECT_EQ(c.parameters.calib, "");
        EXPECT_EQ(c.parameters.pairs, "/data/pairs.tsv");
        EXPECT_EQ(c.parameters.model, kBert);
    }
    EXPECT_NO_THROW(check_experiment_models(q));
    // The formats keep bits_per_parameter; the frontier's mixed budgets move above the 16-bit embeddings.
    o.pairs.clear();
    const ExperimentSpec f = load_experiment("bits-frontier", o);
    EXPECT_EQ(f.metrics, (std::vector<std::string>{"cosine_mean", "cosine_p5", "cosine_min", "bits_per_parameter"}));
    std::set<double> budgets;
    for (const Cell& c : f.cells)
        if (c.parameters.method == "mixed") budgets.insert(c.parameters.bits);
    EXPECT_EQ(budgets, (std::set<double>{11, 12, 13}));
    // NVFP4_MLP_ONLY names a decoder's `mlp` modules, which BERT does not have: its cell and its
    // comparison are left out (they failed at their first run on MiniLM).
    int uniform = 0;
    for (const Cell& c : f.cells) {
        EXPECT_NE(c.parameters.recipe, "NVFP4_MLP_ONLY") << c.key;
        uniform += c.parameters.method == "ptq";
    }
    EXPECT_EQ(uniform, 4);
    for (const Comparison& c : f.comparisons) EXPECT_EQ(c.name.find("MLP"), std::string::npos) << c.name;
    EXPECT_FALSE(f.comparisons.empty());
    EXPECT_NO_THROW(check_experiment_models(f));
    EXPECT_EQ(load_experiment("nvfp4-vs-mxfp4", o).cells.size(), 5u);
    // data-robustness: the arithmetic domains become the sentences and their first third (90
    // lines: 1-30), random tokens stay; calibration and scoring on the whole sentences.
    const ExperimentSpec d = load_experiment("data-robustness", o);
    ASSERT_EQ(d.cells.size(), 6u);
    std::set<std::string> data;
    for (const Cell& c : d.cells) {
        data.insert(c.parameters.data);
        EXPECT_EQ(c.parameters.calib, sentences);
        EXPECT_EQ(c.parameters.eval_data, sentences);
    }
    EXPECT_EQ(data, (std::set<std::string>{sentences, sentences + "#lines=1-30", "synthetic:random-tokens"}));
    ASSERT_EQ(d.comparisons.size(), 3u);
    EXPECT_EQ(d.comparisons[1].name, "first third − all, QAD");
    EXPECT_EQ(d.comparisons[1].a.at("data"), sentences + "#lines=1-30");
    EXPECT_EQ(d.comparisons[1].b.at("data"), sentences);
    EXPECT_EQ(d.metrics, (std::vector<std::string>{"cosine_mean", "cosine_p5", "cosine_min", "contrastive_loss"}));
    EXPECT_NO_THROW(check_experiment_models(d));
    // cooldown-fusion is QAT with and without an FP phase; qat-fraction fine-tunes the encoder.
    // Sizes for ~10 minutes on 2 cores: 30 steps (40 with an FP phase of 20), 2 replicates
    // where a template has more than three training cells.
    EXPECT_EQ(q.replicates, 3);
    EXPECT_EQ(q.cells[1].parameters.steps, 30);
    EXPECT_EQ(d.replicates, 2);
    const ExperimentSpec c = load_experiment("cooldown-fusion", o);
    EXPECT_EQ(c.cells.size(), 4u);
    EXPECT_EQ(c.replicates, 2);
    std::set<int64_t> fp_steps;
    for (const Cell& cell : c.cells) {
        EXPECT_EQ(cell.parameters.steps, 40);
        fp_steps.insert(cell.parameters.fp_steps);
    }
    EXPECT_EQ(fp_steps, (std::set<int64_t>{0, 20}));
    ASSERT_EQ(c.comparisons.size(), 1u);
    EXPECT_EQ(c.comparisons[0].a.at("fp_steps"), "20");
    EXPECT_NO_THROW(check_experiment_models(c));
    const ExperimentSpec fr = load_experiment("qat-fraction", o);
    std::set<int64_t> steps;
    for (const Cell& cell : fr.cells) {
        steps.insert(cell.parameters.total_steps);
        EXPECT_DOUBLE_EQ(cell.parameters.lr, 1e-4);
        EXPECT_EQ(cell.parameters.batch_size, 32);
    }
    EXPECT_EQ(steps, (std::set<int64_t>{20, 40}));
    EXPECT_EQ(fr.title, "Token budgets x QAT fractions of fine-tuning the pretrained encoder, INT2 weights, beside the "
                        "planner's predicted fraction");
    EXPECT_EQ(fr.metrics, (std::vector<std::string>{"cosine_mean", "cosine_p5", "cosine_min", "contrastive_loss",
                                                    "planner_qat_fraction", "tokens_per_parameter_byte"}));
    EXPECT_NO_THROW(check_experiment_models(fr));
    // Sentences are required.
    o.data.clear();
    EXPECT_NE(load_error("qad-vs-qat", o).find("--data"), std::string::npos);
    o.data = dir + "/missing.txt";
    EXPECT_NE(load_error("data-robustness", o).find("cannot read " + dir + "/missing.txt (--data"), std::string::npos);
    // A file is kept as written (the model check below then names its fields).
    EXPECT_EQ(parse_experiment(R"({"quantlab_experiment": 1, "name": "a", "metrics": ["cosine_mean", "spearman", "fp_spearman"]})",
                               "a.json").metrics.size(), 3u);
    std::filesystem::remove_all(dir);
}

TEST(ExperimentSpec, TemplatesTakeTheirDecoderFormOnALanguageModelWithText) {
    char tmpl[] = "/tmp/quantlab-decoder-form-XXXXXX";
    const std::string dir = mkdtemp(tmpl);
    const std::string text = dir + "/train.txt";
    {
        std::ofstream out(text);
        for (int i = 0; i < 60; ++i) out << "Paragraph " << i << " of a manual, in plain English prose.\n\n";
    }
    ExperimentOverrides o;
    o.model = kLlama;
    o.data = text;
    o.eval_data = dir + "/eval.txt";
    // qad-vs-qat: the three methods, scored by the held-out text's KL, agreement and loss; the
    // sizes of a 135 M decoder's fine-tune (4 x 256 tokens a step, 30 steps, 2 replicates).
    const ExperimentSpec q = load_experiment("qad-vs-qat", o);
    ASSERT_EQ(q.cells.size(), 3u);
    EXPECT_EQ(q.metrics, (std::vector<std::string>{"kl", "agreement", "loss"}));
    EXPECT_EQ(q.replicates, 2);
    for (const Cell& c : q.cells) {
        EXPECT_EQ(c.parameters.data, text);
        EXPECT_EQ(c.parameters.eval_data, dir + "/eval.txt");
        EXPECT_EQ(c.parameters.eval_split, "all");  // a separate evaluation text is scored whole
        EXPECT_EQ(c.parameters.batch_size, 4);
        EXPECT_EQ(c.parameters.steps, 30);
        EXPECT_EQ(c.parameters.eval_samples, 32);
        EXPECT_EQ(c.parameters.calib_samples, 16);
        EXPECT_DOUBLE_EQ(c.parameters.lr, 1e-4);
    }
    EXPECT_NO_THROW(check_experiment_models(q));
    // --steps, --replicates and --eval-samples still scale it.
    o.steps = 5, o.replicates = 1, o.eval_samples = 8;
    const ExperimentSpec small = load_experiment("qad-vs-qat", o);
    EXPECT_EQ(small.replicates, 1);
    EXPECT_EQ(small.cells[2].parameters.steps, 5);
    EXPECT_EQ(small.cells[2].parameters.eval_samples, 8);
    o.steps = 0, o.replicates = 0, o.eval_samples = 0;
    // bits-frontier keeps NVFP4_MLP_ONLY (a decoder has mlp modules); its budgets lie between NVFP4
    // and FP8 everywhere of a decoder whose embedding stays in 16 bits.
    const ExperimentSpec f = load_experiment("bits-frontier", o);
    EXPECT_EQ(f.metrics, (std::vector<std::string>{"kl", "agreement", "loss", "bits_per_parameter"}));
    std::set<double> budgets;
    bool mlp_only = false;
    for (const Cell& c : f.cells) {
        if (c.parameters.method == "mixed") budgets.insert(c.parameters.bits);
        mlp_only = mlp_only || c.parameters.recipe == "NVFP4_MLP_ONLY";
    }
    EXPECT_EQ(budgets, (std::set<double>{7.5, 8.5, 9.5}));
    EXPECT_TRUE(mlp_only);
    EXPECT_EQ(f.comparisons.back().name, "mixed 8.5 − 7.5 bits");
    EXPECT_EQ(f.comparisons.back().a.at("bits"), "8.5");
    // data-robustness: the text, the first third of its lines (120 lines: 1-40) and random tokens;
    // every cell calibrates on the whole text and is scored on --eval-data.
    const ExperimentSpec d = load_experiment("data-robustness", o);
    std::set<std::string> data;
    for (const Cell& c : d.cells) {
        data.insert(c.parameters.data);
        EXPECT_EQ(c.parameters.calib, text);
        EXPECT_EQ(c.parameters.eval_data, dir + "/eval.txt");
    }
    EXPECT_EQ(data, (std::set<std::string>{text, text + "#lines=1-40", "synthetic:random-tokens"}));
    EXPECT_EQ(d.comparisons[1].name, "first third − all, QAD");
    EXPECT_EQ(d.metrics, (std::vector<std::string>{"kl", "agreement", "loss"}));
    // Without --eval-data the data-varying study is scored on the whole text's held-out tail.
    o.eval_data.clear();
    for (const Cell& c : load_experiment("data-robustness", o).cells) {
        EXPECT_EQ(c.parameters.eval_data, text);
        EXPECT_EQ(c.parameters.eval_split, "validation");
    }
    // qat-fraction fine-tunes the pretrained model; the fitted loss comes first.
    const ExperimentSpec fr = load_experiment("qat-fraction", o);
    std::set<int64_t> steps;
    for (const Cell& cell : fr.cells) {
        steps.insert(cell.parameters.total_steps);
        EXPECT_EQ(cell.parameters.batch_size, 4);
        EXPECT_EQ(cell.parameters.warmup_steps, 0);
    }
    EXPECT_EQ(steps, (std::set<int64_t>{20, 40}));
    EXPECT_EQ(fr.title, "Token budgets x QAT fractions of fine-tuning the pretrained model, INT2 weights, beside the "
                        "planner's predicted fraction");
    EXPECT_EQ(fr.metrics, (std::vector<std::string>{"loss", "kl", "agreement", "planner_qat_fraction",
                                                    "tokens_per_parameter_byte"}));
    const ExperimentSpec c = load_experiment("cooldown-fusion", o);
    for (const Cell& cell : c.cells) EXPECT_EQ(cell.parameters.steps, 40);
    EXPECT_EQ(c.comparisons[0].a.at("fp_steps"), "20");
    // The demo's synthetic tasks keep the template as it is (exact match), on any token model.
    o.data = "synthetic:arith";
    EXPECT_EQ(load_experiment("qad-vs-qat", o).metrics, (std::vector<std::string>{"exact_match", "kl", "agreement", "loss"}));
    o.data.clear();
    EXPECT_EQ(load_experiment("qad-vs-qat", o).replicates, 3);
    std::filesystem::remove_all(dir);
}

TEST(ExperimentSpec, MetricsThatTheModelDoesNotReportAreErrorsBeforeAnyRun) {
    const std::string bert = R"({"quantlab_experiment": 1, "name": "e", "base": {"model": ")" + kBert +
                             R"(", "data": "s.txt"}, "grid": {"method": ["ptq", "qad"]}, )";
    EXPECT_EQ(models_error(bert + R"("metrics": ["cosine_mean", "cosine_min", "bits_per_parameter"]})"), "no error");
    const std::string decoder_metric = models_error(bert + R"("metrics": ["cosine_mean", "exact_match"]})");
    EXPECT_NE(decoder_metric.find("experiment 'm.json': field 'metrics[1]'"), std::string::npos) << decoder_metric;
    EXPECT_NE(decoder_metric.find("exact_match"), std::string::npos) << decoder_metric;
    EXPECT_NE(decoder_metric.find("sentence encoder"), std::string::npos) << decoder_metric;
    EXPECT_NE(models_error(bert + R"("metrics": ["spearman"]})").find("pairs"), std::string::npos);
    const std::string llama = R"({"quantlab_experiment": 1, "name": "e", "base": {"model": ")" + kLlama +
                              R"(", "data": "synthetic:arith"}, )";
    EXPECT_EQ(models_error(llama + R"("metrics": ["kl", "bits_per_parameter"]})"), "no error");
    const std::string encoder_metric = models_error(llama + R"("metrics": ["kl", "cosine_mean"]})");
    EXPECT_NE(encoder_metric.find("field 'metrics[1]'"), std::string::npos) << encoder_metric;
    const std::string pairs = models_error(R"({"quantlab_experiment": 1, "name": "e", "base": {"model": ")" + kLlama +
                                           R"(", "pairs": "p.tsv"}, "metrics": ["kl"]})");
    EXPECT_NE(pairs.find("field 'base.pairs'"), std::string::npos) << pairs;
    // QAT of an encoder is its contrastive loss; random sentences are training data it takes
    // (with real sentences to calibrate on and be scored by), synthetic tasks never.
    EXPECT_EQ(models_error(R"({"quantlab_experiment": 1, "name": "e", "base": {"model": ")" + kBert +
                           R"(", "data": "s.txt"}, "grid": {"method": ["ptq", "qat"]}, "metrics": ["cosine_mean"]})"),
              "no error");
    EXPECT_EQ(models_error(R"({"quantlab_experiment": 1, "name": "e", "base": {"model": ")" + kBert +
                           R"(", "method": "qat", "data": "synthetic:random-tokens", "calib": "s.txt", "eval_data": "s.txt"}, )"
                           R"("metrics": ["contrastive_loss"]})"),
              "no error");
    const std::string random_scored = models_error(R"({"quantlab_experiment": 1, "name": "e", "base": {"model": ")" + kBert +
                                                   R"(", "method": "qat", "data": "synthetic:random-tokens"}, "metrics": ["cosine_mean"]})");
    EXPECT_NE(random_scored.find("field 'base.data'"), std::string::npos) << random_scored;
    const std::string synthetic = models_error(R"({"quantlab_experiment": 1, "name": "e", "base": {"model": ")" + kBert +
                                               R"("}, "metrics": ["cosine_mean"]})");
    EXPECT_NE(synthetic.find("field 'base.data'"), std::string::npos) << synthetic;
    EXPECT_TRUE(model_is_sentence_encoder(kBert));
    EXPECT_FALSE(model_is_sentence_encoder(kLlama));
    EXPECT_FALSE(model_is_sentence_encoder("demo"));
}

TEST(ExperimentSpec, ASuiteOverrideAddsItsParametersAndTheAnswersMetrics) {
    ExperimentOverrides o;
    o.suite = "default";
    o.suite_categories = "arithmetic,facts";
    o.suite_limit = 12;
    o.suite_metric_categories = {"arithmetic", "facts"};
    o.suite_has_json = true;
    const ExperimentSpec s = load_experiment("qad-vs-qat", o);
    // The study's own metrics first, then the answers'.
    EXPECT_EQ(s.metrics, (std::vector<std::string>{"exact_match", "kl", "agreement", "loss", "evalsuite/success", "evalsuite/json_valid",
                                                   "evalsuite/right_to_wrong", "evalsuite/wrong_to_right",
                                                   "evalsuite/success/arithmetic", "evalsuite/success/facts"}));
    for (const Cell& c : s.cells) {
        EXPECT_EQ(c.parameters.suite, "default");
        EXPECT_EQ(c.parameters.suite_categories, "arithmetic,facts");
        EXPECT_EQ(c.parameters.suite_limit, 12);
    }
    // Without JSON items in the selection there is no schema-validity metric.
    o.suite_has_json = false;
    EXPECT_EQ(load_experiment("qad-vs-qat", o).metrics,
              (std::vector<std::string>{"exact_match", "kl", "agreement", "loss", "evalsuite/success", "evalsuite/right_to_wrong",
                                        "evalsuite/wrong_to_right", "evalsuite/success/arithmetic", "evalsuite/success/facts"}));
    // A different suite selection is a different experiment.
    EXPECT_NE(s.identity_sha256, load_experiment("qad-vs-qat").identity_sha256);
    EXPECT_TRUE(is_token_model_metric("evalsuite/success/facts"));
    EXPECT_FALSE(is_encoder_metric("evalsuite/success"));
    // A file asks for them with the run parameter; without it the metric is an error before any run.
    const std::string llama = R"({"quantlab_experiment": 1, "name": "e", "base": {"model": ")" + kLlama +
                              R"(", "data": "synthetic:arith")";
    EXPECT_EQ(models_error(llama + R"(, "suite": "default"}, "metrics": ["kl", "evalsuite/success"]})"), "no error");
    const std::string no_suite = models_error(llama + R"(}, "metrics": ["kl", "evalsuite/success"]})");
    EXPECT_NE(no_suite.find("field 'metrics[1]'"), std::string::npos) << no_suite;
    EXPECT_NE(no_suite.find("the run parameter suite"), std::string::npos) << no_suite;
    const std::string category = models_error(llama + R"(, "suite": "default", "suite_categories": "facts,poetry"}, "metrics": ["kl"]})");
    EXPECT_NE(category.find("field 'base.suite_categories'"), std::string::npos) << category;
    EXPECT_NE(category.find("'poetry'"), std::string::npos) << category;
    const std::string encoder = models_error(R"({"quantlab_experiment": 1, "name": "e", "base": {"model": ")" + kBert +
                                             R"(", "data": "s.txt", "suite": "default"}, "metrics": ["cosine_mean"]})");
    EXPECT_NE(encoder.find("field 'base.suite'"), std::string::npos) << encoder;
    try {
        parse_experiment(R"({"quantlab_experiment": 1, "name": "e", "base": {"suite_limit": -1}})", "l.json");
        ADD_FAILURE() << "a negative suite_limit was accepted";
    } catch (const UserError& e) {
        EXPECT_NE(std::string(e.what()).find("field 'base.suite_limit'"), std::string::npos) << e.what();
    }
}

TEST(ExperimentSpec, MixedCellsNeedABudgetAndAMenuWithBf16) {
    const ExperimentSpec f = load_experiment("bits-frontier");
    // Uniform recipes beside mixed budgets × menus: a list of grids.
    ASSERT_EQ(f.cells.size(), 5u + 3u * 2u);
    EXPECT_EQ(f.cells[0].key, "recipe=MXFP4");
    EXPECT_EQ(f.cells[5].key, "bits=5,menu=NVFP4+FP8+BF16,method=mixed");
    EXPECT_EQ(f.cells[5].parameters.menu, (std::vector<std::string>{"NVFP4", "FP8", "BF16"}));
    EXPECT_DOUBLE_EQ(f.cells[5].parameters.bits, 5);
    EXPECT_EQ(f.cells[6].parameters.menu, (std::vector<std::string>{"NVFP4", "BF16"}));
    EXPECT_EQ(f.axes, (std::vector<std::string>{"bits", "menu", "method", "recipe"}));
    // The menu default is NVFP4, FP8 and BF16.
    const ExperimentSpec d = parse_experiment(R"({"quantlab_experiment": 1, "name": "m", "base": {"method": "mixed", "bits": 6}})", "m");
    EXPECT_EQ(d.cells[0].parameters.menu, (std::vector<std::string>{"NVFP4", "FP8", "BF16"}));
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "m", "base": {"method": "mixed"}})").find("'base.bits'"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "m", "base": {"method": "mixed", "bits": 5, "menu": ["NVFP4", "FP8"]}})")
                  .find("'base.menu' must list BF16"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "m", "base": {"method": "mixed", "bits": 5, "menu": ["BF16"]}})")
                  .find("'base.menu'"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "m", "grid": [{"method": ["ptq"]}, {"method": ["ptq"]}]})")
                  .find("'grid[1]'"), std::string::npos);
    EXPECT_NE(error_of(R"({"quantlab_experiment": 1, "name": "m", "grid": [{"bits": [0]}]})").find("'grid[0].bits[0]'"),
              std::string::npos);
    // Comparisons select among every grid's values, and pair within a grid.
    std::vector<RunResult> runs;
    for (int r = 0; r < 2; ++r)
        for (const Cell& c : f.cells) runs.push_back({c.key, r, 1, {{"kl", c.parameters.bits + 0.1 * r}}, 10});
    const ExperimentResult res = analyse(f, runs);
    bool seen = false;
    for (const auto& c : res.comparisons)
        if (c.comparison->name == "mixed 6 − 5 bits") {
            seen = true;
            EXPECT_NEAR(c.metrics[0].value.mean, 1.0, 1e-12) << c.a;
        }
    EXPECT_TRUE(seen);
}

TEST(ExperimentAnalysis, TheMeasuredOptimumQatFractionPerBudgetBesideThePlanners) {
    const ExperimentSpec s = parse_experiment(R"({"quantlab_experiment": 1, "name": "f", "replicates": 2,
        "base": {"method": "fp-then-qat"}, "grid": {"total_steps": [100, 200], "qat_fraction": [0.1, 0.3, 0.5, 0.6]},
        "metrics": ["loss", "planner_qat_fraction"]})", "f");
    // Cell means: 100 steps loss = 3 + 2 (f − 0.25)², 200 steps 2 + (f − 0.4)²; replicates ± 0.01
    // around them (so the means are exact). The 100-step budget lacks f = 0.6.
    std::vector<RunResult> runs;
    for (const Cell& c : s.cells) {
        const double f = c.parameters.qat_fraction;
        const bool small = c.parameters.total_steps == 100;
        if (small && f == 0.6) continue;
        const double loss = small ? 3 + 2 * (f - 0.25) * (f - 0.25) : 2 + (f - 0.4) * (f - 0.4);
        for (int r = 0; r < 2; ++r)
            runs.push_back({c.key, r, 1, {{"loss", loss + (r ? 0.01 : -0.01)}, {"planner_qat_fraction", small ? 0.12 : 0.2}}, 10});
    }
    const ExperimentResult res = analyse(s, runs);
    ASSERT_EQ(res.qat_fraction_optima.size(), 2u);
    const QatFractionOptimum& a = res.qat_fraction_optima[0];
    EXPECT_EQ(a.group, "total_steps=100");
    EXPECT_EQ(a.total_steps, 100);
    ASSERT_EQ(a.points.size(), 3u);
    EXPECT_DOUBLE_EQ(a.points[0].first, 0.1);
    EXPECT_NEAR(a.points[0].second, 3 + 2 * 0.15 * 0.15, 1e-12);
    EXPECT_TRUE(a.fitted);
    EXPECT_TRUE(a.convex);
    EXPECT_NEAR(a.optimum_fraction, 0.25, 1e-9);
    EXPECT_NEAR(a.optimum_loss, 3.0, 1e-9);
    EXPECT_NEAR(a.rms_residual, 0.0, 1e-9);  // three points: the quadratic passes through them
    ASSERT_TRUE(a.planner_fraction.has_value());
    EXPECT_DOUBLE_EQ(*a.planner_fraction, 0.12);
    const QatFractionOptimum& b = res.qat_fraction_optima[1];
    EXPECT_EQ(b.group, "total_steps=200");
    EXPECT_EQ(b.points.size(), 4u);
    EXPECT_NEAR(b.optimum_fraction, 0.4, 1e-9);
    EXPECT_NEAR(b.optimum_loss, 2.0, 1e-9);
    const json j = json::parse(result_json(s, res));
    ASSERT_EQ(j["qat_fraction_optima"].size(), 2u);
    EXPECT_NEAR(j["qat_fraction_optima"][1]["optimum_fraction"].get<double>(), 0.4, 1e-9);
    EXPECT_DOUBLE_EQ(j["qat_fraction_optima"][1]["planner_fraction"].get<double>(), 0.2);
    EXPECT_NE(result_text(s, res).find("optimum f = 0.250"), std::string::npos) << result_text(s, res);
    // Two fractions are not a fit: said so, no optimum.
    std::vector<RunResult> two;
    for (const RunResult& r : runs)
        if (r.cell.find("qat_fraction=0.5") == std::string::npos && r.cell.find("qat_fraction=0.6") == std::string::npos) two.push_back(r);
    const ExperimentResult few = analyse(s, two);
    ASSERT_EQ(few.qat_fraction_optima.size(), 2u);
    EXPECT_FALSE(few.qat_fraction_optima[0].fitted);
    EXPECT_NE(few.qat_fraction_optima[0].note.find("3 QAT fractions"), std::string::npos);
    EXPECT_EQ(json::parse(result_json(s, few))["qat_fraction_optima"][0]["optimum_fraction"], nullptr);
    // Other methods have none.
    EXPECT_TRUE(analyse(load_experiment("qad-vs-qat"), {}).qat_fraction_optima.empty());
}

TEST(ExperimentAnalysis, CellMeansAndPairedDifferencesWithTIntervals) {
    const ExperimentSpec s = parse_experiment(R"({"quantlab_experiment": 1, "name": "t", "replicates": 3,
        "grid": {"method": ["qat", "qad"]}, "metrics": ["exact_match", "kl"],
        "comparisons": [{"name": "QAD − QAT", "a": {"method": "qad"}, "b": {"method": "qat"}}]})", "t");
    std::vector<RunResult> runs;
    const double qad[] = {0.9713, 0.9650, 0.9702}, qat[] = {0.9600, 0.9573, 0.9655};
    for (int r = 0; r < 3; ++r) {
        runs.push_back({"method=qad", r, 10 + r, {{"exact_match", qad[r]}, {"kl", 0.01}}, 500});
        runs.push_back({"method=qat", r, 20 + r, {{"exact_match", qat[r]}}, 500});
    }
    const ExperimentResult res = analyse(s, runs);
    ASSERT_EQ(res.cells.size(), 2u);
    EXPECT_EQ(res.cells[0].cell->key, "method=qat");
    const MetricSummary& m = res.cells[1].metrics[0];
    EXPECT_EQ(m.interval, "t");
    EXPECT_NEAR(m.value.ci.low, 0.9604741699460312, 1e-12);  // scipy.stats.t.interval (statistics test)
    EXPECT_EQ(res.cells[0].metrics.size(), 1u);               // qat runs reported no kl
    ASSERT_EQ(res.comparisons.size(), 1u);
    EXPECT_EQ(res.comparisons[0].a, "method=qad");
    EXPECT_EQ(res.comparisons[0].b, "method=qat");
    EXPECT_NEAR(res.comparisons[0].metrics[0].value.mean, 0.0079, 1e-12);
    EXPECT_NEAR(res.comparisons[0].metrics[0].value.ci.high, 0.016108938217983475, 1e-12);
    const json j = json::parse(result_json(s, res));
    EXPECT_EQ(j["cells"][1]["metrics"]["exact_match"]["n"], 3);
    EXPECT_NEAR(j["comparisons"][0]["metrics"]["exact_match"]["ci_low"].get<double>(), -0.00030893821798351137, 1e-12);
    EXPECT_NE(result_text(s, res).find("QAD − QAT"), std::string::npos);
}

// Two replicates of a rate near 100 %: t(0.975, 1) = 12.7 puts the unclipped interval far past
// 1; a rate's interval stops at [0, 1] (a difference's at [-1, 1]), a loss's at 0.
TEST(ExperimentAnalysis, RateIntervalsStayWithinTheirRange) {
    const ExperimentSpec s = parse_experiment(R"({"quantlab_experiment": 1, "name": "t", "replicates": 2,
        "grid": {"method": ["qat", "qad"]}, "metrics": ["exact_match", "loss"],
        "comparisons": [{"a": {"method": "qad"}, "b": {"method": "qat"}}]})", "t");
    const std::vector<RunResult> runs = {{"method=qad", 0, 1, {{"exact_match", 1.0}, {"loss", 0.5}}, 200},
                                         {"method=qad", 1, 2, {{"exact_match", 0.95}, {"loss", 0.7}}, 200},
                                         {"method=qat", 0, 3, {{"exact_match", 0.10}, {"loss", 0.5}}, 200},
                                         {"method=qat", 1, 4, {{"exact_match", 0.02}, {"loss", 0.7}}, 200}};
    const ExperimentResult res = analyse(s, runs);
    const MetricSummary& qad = res.cells[1].metrics[0];
    EXPECT_NEAR(qad.value.mean, 0.975, 1e-12);
    EXPECT_EQ(qad.value.ci.high, 1.0);                                        // 0.975 + 12.706 * 0.025 = 1.29
    EXPECT_NEAR(qad.value.ci.low, 0.975 - 12.706204736174707 * 0.025, 1e-9);  // inside: unchanged
    EXPECT_EQ(res.cells[0].metrics[0].value.ci.low, 0.0);                     // 0.06 - 0.51 < 0
    EXPECT_EQ(res.cells[0].metrics[1].value.ci.low, 0.0);                     // loss: 0.6 - 1.27, never negative
    EXPECT_NEAR(res.cells[0].metrics[1].value.ci.high, 0.6 + 12.706204736174707 * 0.1, 1e-9);
    const MetricSummary& d = res.comparisons[0].metrics[0];                   // 0.9 and 0.93: 0.915 ± 0.19
    EXPECT_NEAR(d.value.mean, 0.915, 1e-12);
    EXPECT_EQ(d.value.ci.high, 1.0);
    EXPECT_NEAR(d.value.ci.low, 0.915 - 12.706204736174707 * 0.015, 1e-9);
}

// An eval suite's success is a rate (printed in %, its interval within [0, 1]); its flips are
// item counts (printed as counts, never below 0).
TEST(ExperimentAnalysis, SuiteSuccessIsARateAndItsFlipsAreCounts) {
    const ExperimentSpec s = parse_experiment(R"({"quantlab_experiment": 1, "name": "t", "replicates": 2,
        "base": {"suite": "default"}, "grid": {"recipe": ["FP8_DEFAULT", "MXFP4"]},
        "metrics": ["evalsuite/success", "evalsuite/right_to_wrong"]})", "t");
    const std::vector<RunResult> runs = {{"recipe=FP8_DEFAULT", 0, 1, {{"evalsuite/success", 0.98}, {"evalsuite/right_to_wrong", 1}}, 500},
                                         {"recipe=FP8_DEFAULT", 1, 2, {{"evalsuite/success", 0.90}, {"evalsuite/right_to_wrong", 9}}, 500},
                                         {"recipe=MXFP4", 0, 3, {{"evalsuite/success", 0.1}, {"evalsuite/right_to_wrong", 40}}, 500},
                                         {"recipe=MXFP4", 1, 4, {{"evalsuite/success", 0.1}, {"evalsuite/right_to_wrong", 40}}, 500}};
    const ExperimentResult res = analyse(s, runs);
    const MetricSummary& success = res.cells[0].metrics[0];
    EXPECT_NEAR(success.value.mean, 0.94, 1e-12);
    EXPECT_EQ(success.value.ci.high, 1.0);  // 0.94 + 12.7 * 0.04, clipped
    const MetricSummary& flips = res.cells[0].metrics[1];
    EXPECT_EQ(flips.value.ci.low, 0.0);     // 5 − 12.7 * 4, clipped
    EXPECT_EQ(flips.interval, "t");         // not a binomial interval on the held-out examples
    const std::string text = result_text(s, res);
    EXPECT_NE(text.find("evalsuite/success %"), std::string::npos) << text;
    EXPECT_NE(text.find("94.00"), std::string::npos) << text;
    EXPECT_NE(text.find("40.0"), std::string::npos) << text;
}

TEST(ExperimentAnalysis, OneReplicateGetsBinomialIntervals) {
    const ExperimentSpec s = parse_experiment(R"({"quantlab_experiment": 1, "name": "t", "replicates": 1,
        "grid": {"method": ["qat", "qad"]}, "metrics": ["exact_match", "kl"],
        "comparisons": [{"a": {"method": "qad"}, "b": {"method": "qat"}}]})", "t");
    const std::vector<RunResult> runs = {{"method=qad", 0, 1, {{"exact_match", 56.0 / 70}, {"kl", 0.01}}, 70},
                                         {"method=qat", 0, 2, {{"exact_match", 48.0 / 80}, {"kl", 0.02}}, 80}};
    const ExperimentResult res = analyse(s, runs);
    EXPECT_EQ(res.cells[1].metrics[0].interval, "wilson");
    EXPECT_NEAR(res.cells[1].metrics[0].value.ci.low, wilson_interval(56, 70).low, 1e-15);
    EXPECT_EQ(res.cells[1].metrics[1].interval, "none");  // a KL has no interval from one run
    EXPECT_TRUE(std::isnan(res.cells[1].metrics[1].value.ci.low));
    EXPECT_EQ(res.comparisons[0].metrics[0].interval, "newcombe");
    EXPECT_NEAR(res.comparisons[0].metrics[0].value.ci.low, 0.0524, 5e-5);
    EXPECT_EQ(json::parse(result_json(s, res))["cells"][1]["metrics"]["kl"]["ci_low"], nullptr);
}

}  // namespace
}  // namespace ql::experiments
