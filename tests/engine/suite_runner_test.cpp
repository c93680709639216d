// SPDX-License-Identifier: GPL-3.0-or-later
// The eval-suite runner (engine/evaluation/suite_runner.h) on the shipped demo model and a
// quantized demo checkpoint: answers checked item by item, the manifest, greedy and seeded
// replicates, cancellation between items with one progress count, the serving cost (weights in
// the export layouts' bytes, counted here from the formats' definitions; KV cache; measured
// speed; the bandwidth estimate), runs with other settings refused side by side, the chat
// template probes (default system message, templates that ignore tools), and evaluation runs
// written and read back with bad fields named.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>

#include "engine/api/evalsuite_api.h"
#include "engine/api/ptq_api.h"
#include "engine/core/errors.h"
#include "engine/evaluation/eval_suite.h"
#include "engine/evaluation/evaluation_tables.h"
#include "engine/evaluation/suite_runner.h"
#include "engine/evaluation/weight_memory.h"
#include "engine/export/compressed_tensors_layout.h"
#include "engine/export/export_report.h"
#include "engine/loading/model_source.h"
#include "engine/quant/quant_plan.h"
#include "tests/demo_suite.h"
#include "tests/engine/user_error_text.h"

namespace ql::evaluation {
namespace {

namespace fs = std::filesystem;
using test::user_error_text;


class SuiteRunner : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir() = (fs::temp_directory_path() / ("quantlab-suite-runner-" + std::to_string(getpid()))).string();
        fs::create_directories(dir());
        std::ofstream(dir() + "/demo.jsonl") << test::kDemoSuite;
        PtqRequest req;  // an NVFP4 demo checkpoint (W4A4), as ptq writes it
        req.model = "demo";
        req.recipe = "NVFP4_DEFAULT";
        req.calibration = "synthetic:arith";
        req.samples = 16;
        req.out_dir = dir() + "/nvfp4";
        NullJobSink sink;
        run_ptq(req, sink, CancellationToken{});
        req.recipe = "INT8_SMOOTHQUANT";
        req.out_dir = dir() + "/int8";
        run_ptq(req, sink, CancellationToken{});
    }
    static void TearDownTestSuite() {
        std::error_code ec;
        fs::remove_all(dir(), ec);
    }
    static std::string& dir() {
        static std::string d;
        return d;
    }
    static EvalSuite suite() { return load_eval_suite(dir() + "/demo.jsonl"); }
};

struct CountingSink : JobSink {
    std::vector<std::pair<int64_t, int64_t>> points;
    std::function<void()> on_progress;
    void progress(int64_t done, int64_t total, const std::string& phase) override {
        if (phase != "evalsuite") return;
        points.emplace_back(done, total);
        if (on_progress) on_progress();
    }
};

TEST_F(SuiteRunner, TheDemoAnswersItsArithmeticAndTheManifestSaysHow) {
    OpenedModel m = open_model("demo");
    SuiteRunSettings s;
    CountingSink sink;
    std::vector<std::string> seen;
    const EvaluationRun run = run_suite(m, "demo", suite(), s, sink, CancellationToken{},
                                        [&](int64_t r, const ItemOutcome& o) { seen.push_back(std::to_string(r) + o.id); });
    ASSERT_EQ(run.replicates.size(), 1u);
    const ModelEvalReport& rep = run.replicates[0];
    ASSERT_EQ(rep.items.size(), 6u);
    for (const ItemOutcome& o : rep.items) {
        EXPECT_TRUE(o.passed) << o.id << ": " << o.output;
        EXPECT_EQ(o.tokens_generated, 5) << o.id;  // four digits and <eos>
        EXPECT_GT(o.seconds, 0.0);
    }
    EXPECT_EQ(rep.items[0].output, "9590");
    EXPECT_EQ(seen, (std::vector<std::string>{"0add-1", "0add-2", "0sub-1", "0mul-1", "0mul-2", "0add-3"}));
    // One progress count of all generations, 0 first.
    ASSERT_EQ(sink.points.size(), 7u);
    EXPECT_EQ(sink.points.front(), (std::pair<int64_t, int64_t>{0, 6}));
    EXPECT_EQ(sink.points.back(), (std::pair<int64_t, int64_t>{6, 6}));

    const RunManifest& mf = run.manifest;
    EXPECT_EQ(mf.label, "demo");
    EXPECT_EQ(mf.model_kind, "demo");
    EXPECT_EQ(mf.quant_scheme, "fp");
    EXPECT_EQ(mf.weight_bits, 16);
    EXPECT_EQ(mf.prompt_format, "plain");
    EXPECT_EQ(mf.chat_template_sha256, "");
    EXPECT_EQ(mf.tools_mode, "");
    EXPECT_EQ(mf.decoding.description, "greedy");
    EXPECT_EQ(mf.decoding.max_tokens, 256);
    EXPECT_EQ(mf.suite_sha256, suite().sha256);
    EXPECT_EQ(mf.item_ids.size(), 6u);
    EXPECT_EQ(mf.model_sha256.size(), 64u);
    EXPECT_EQ(mf.model_sha256, content_sha256(m.path));
    EXPECT_FALSE(mf.quantlab_version.empty());
    EXPECT_FALSE(mf.torch_version.empty());
    ASSERT_EQ(run.prompts.size(), 6u);
    EXPECT_EQ(run.prompts[0].user_text, "240+719=");

    // Serving cost: every parameter BF16; K and V of every attention at 16 bits.
    const ServingCost& c = run.cost;
    EXPECT_EQ(c.weights.bytes(), 2 * m.model->parameter_count());
    EXPECT_EQ(c.weights.quantized_parameters, 0);
    double kv_bits = 0;
    for (const AttentionSite* a : m.model->attention_sites()) kv_bits += 2.0 * static_cast<double>(a->num_kv_heads * a->head_dim) * 16;
    EXPECT_DOUBLE_EQ(c.kv.bytes_per_token, kv_bits / 8);
    ASSERT_EQ(c.kv.contexts.size(), 3u);
    EXPECT_DOUBLE_EQ(c.kv.contexts[1].second, 8192 * kv_bits / 8);
    EXPECT_EQ(c.measured.generations, 6);
    EXPECT_EQ(c.measured.generated_tokens, 30);
    int64_t prompt_tokens = 0;
    for (const char* p : {"240+719=", "100+100=", "999-100=", "210*333=", "500*222=", "123+000="})
        prompt_tokens += static_cast<int64_t>(m.text.encode_prompt(p).size());
    EXPECT_EQ(c.measured.prompt_tokens, prompt_tokens);
    EXPECT_GT(c.measured.decode_tokens_per_second, 0);
    EXPECT_EQ(c.successes, 6);
    EXPECT_NEAR(c.seconds_per_success, (c.measured.prefill_seconds + c.measured.decode_seconds) / 6, 1e-12);
    ASSERT_EQ(c.estimates.size(), 1u);
    EXPECT_EQ(c.estimates[0].gpu, "H200");
    EXPECT_DOUBLE_EQ(c.estimates[0].bytes_per_token, static_cast<double>(c.weights.bytes()) + 2048 * kv_bits / 8);
    EXPECT_DOUBLE_EQ(c.estimates[0].decode_tokens_per_second, 4.8e12 / c.estimates[0].bytes_per_token);
    EXPECT_DOUBLE_EQ(c.estimates[0].seconds_per_success, 5.0 / c.estimates[0].decode_tokens_per_second);
}

TEST_F(SuiteRunner, SeededSamplesAreReplicatesThatRepeat) {
    OpenedModel m = open_model("demo");
    SuiteRunSettings s;
    s.samples = 3;
    s.sampling.temperature = 3.0;  // hot enough that the demo's sure answers vary
    s.sampling.seed = 5;
    s.item_ids = {"add-1", "mul-1"};
    NullJobSink sink;
    const EvaluationRun a = run_suite(m, "demo", suite(), s, sink, CancellationToken{});
    const EvaluationRun b = run_suite(m, "demo", suite(), s, sink, CancellationToken{});
    ASSERT_EQ(a.replicates.size(), 3u);
    std::set<std::string> outputs;
    for (size_t r = 0; r < 3; ++r) {
        ASSERT_EQ(a.replicates[r].items.size(), 2u);
        EXPECT_EQ(a.replicates[r].settings["replicate"], r);
        for (size_t i = 0; i < 2; ++i) {
            EXPECT_EQ(a.replicates[r].items[i].output, b.replicates[r].items[i].output);
            outputs.insert(a.replicates[r].items[i].output);
        }
    }
    EXPECT_GT(outputs.size(), 1u) << "every sample gave the same answer";
    EXPECT_EQ(a.manifest.decoding.samples, 3);
    EXPECT_EQ(a.manifest.decoding.description, "sampled: temperature 3, seed 5, 3 samples per item");
    EXPECT_EQ(a.cost.measured.generations, 6);
    EXPECT_EQ(replicate_success_rates(a).size(), 3u);

    s.sampling.temperature = 0;
    EXPECT_NE(user_error_text([&] { run_suite(m, "demo", suite(), s, sink, CancellationToken{}); }).find("would all be the same"),
              std::string::npos);
    s.samples = 1;
    s.item_ids = {"nope"};
    EXPECT_NE(user_error_text([&] { run_suite(m, "demo", suite(), s, sink, CancellationToken{}); }).find("has no item 'nope'"),
              std::string::npos);
    s.item_ids = {};
    s.gpus = {"H300"};
    EXPECT_NE(user_error_text([&] { run_suite(m, "demo", suite(), s, sink, CancellationToken{}); }).find("known: H200"),
              std::string::npos);
}

TEST_F(SuiteRunner, CancellingStopsBetweenItems) {
    OpenedModel m = open_model("demo");
    CancellationToken cancel;
    CountingSink sink;
    sink.on_progress = [&] {
        if (sink.points.back().first == 2) cancel.cancel();
    };
    EXPECT_THROW(run_suite(m, "demo", suite(), SuiteRunSettings{}, sink, cancel), JobCancelled);
    EXPECT_EQ(sink.points.back().first, 2);  // the third item never started
}

TEST_F(SuiteRunner, DemoItemsItCannotPromptAreRefused) {
    OpenedModel m = open_model("demo");
    const EvalSuite tools = parse_eval_suite(
        R"({"id": "t", "category": "c", "prompt": "1+1=", "tools": [{"type": "function", "function": {"name": "f"}}], "check": {"type": "tool_call", "name": "f"}})"
        "\n",
        "tools.jsonl");
    NullJobSink sink;
    EXPECT_NE(user_error_text([&] { run_suite(m, "demo", tools, SuiteRunSettings{}, sink, CancellationToken{}); })
                  .find("offers tools, and " + m.path + " has no chat template"),
              std::string::npos);
    const EvalSuite chat = parse_eval_suite(
        R"({"id": "c", "category": "c", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "1+1="}], "check": {"type": "exact", "answer": "2"}})"
        "\n",
        "chat.jsonl");
    EXPECT_NE(user_error_text([&] { run_suite(m, "demo", chat, SuiteRunSettings{}, sink, CancellationToken{}); })
                  .find("is a conversation of 2 messages"),
              std::string::npos);
}

// Bytes of a layer [out, in] in the export layouts (shared/design/EXPORT.md, docs/EXPORT.md).
struct LayoutBytes {
    int64_t codes = 0, scales = 0, global = 0;
};

TEST_F(SuiteRunner, WeightMemoryCountsTheExportLayoutsBytes) {
    for (const std::string& name : {std::string("nvfp4"), std::string("int8")}) {
        const OpenedModel m = open_model(dir() + "/" + name);
        ASSERT_TRUE(m.quantization);
        LayoutBytes expected;
        int64_t quantized = 0, layers = 0, estimated = 0;
        for (const auto& l : m.quantization->layers()) {
            if (!l->weight_enabled()) continue;
            const std::vector<int64_t> shape = weight_matrix_shape(l->layer());
            const int64_t out = shape[0], in = shape[1];
            quantized += out * in;
            if (name == "int8") {
                // Layers whose SmoothQuant pre_quant_scale cannot be folded have no compressed-tensors
                // layout (ct_scheme_of refuses them): the format's estimate counts the same codes and
                // per-channel scales, without a stored input scale.
                bool refused = false;
                try {
                    ct_scheme_of(*l);
                } catch (const UserError&) {
                    refused = true;
                }
                if (refused) {
                    ++estimated;
                    expected.codes += out * in;
                    expected.scales += 4 * out;
                    continue;
                }
            }
            ++layers;
            if (name == "nvfp4") {
                // Model Optimizer NVFP4: U8 [out, in/2], F8_E4M3 [out, in/16], weight_scale_2 F32, input_scale F32.
                expected.codes += out * in / 2;
                expected.scales += out * in / 16;
                expected.global += 4 + (l->input_enabled() ? 4 : 0);
            } else {
                // compressed-tensors int-quantized (W8A8): I8 [out, in], F32 [out, 1], input_scale F32 [1].
                expected.codes += out * in;
                expected.scales += 4 * out;
                expected.global += 4;
            }
        }
        ASSERT_GT(layers, 0) << name;
        const WeightMemory w = measure_weight_memory(m);
        EXPECT_EQ(w.code_bytes, expected.codes) << name;
        EXPECT_EQ(w.scale_bytes, expected.scales) << name;
        EXPECT_EQ(w.global_scale_bytes, expected.global) << name;
        EXPECT_EQ(w.quantized_parameters, quantized) << name;
        EXPECT_EQ(w.high_precision_bytes, 2 * (m.model->parameter_count() - quantized)) << name;
        EXPECT_NE(w.layout.find(name == "nvfp4" ? "Model Optimizer HF checkpoint (" + std::to_string(layers) + " layers)"
                                                : "compressed-tensors (" + std::to_string(layers) + " layers), format estimate (" +
                                                      std::to_string(estimated) + " layers)"),
                  std::string::npos)
            << w.layout;
        EXPECT_EQ(weight_element_bits(m), name == "nvfp4" ? 4 : 8);
        EXPECT_NE(describe_quant_formats(m).find(name == "nvfp4" ? "weights nvfp4" : "weights int8"), std::string::npos)
            << describe_quant_formats(m);
    }
}

TEST_F(SuiteRunner, RunsWithOtherSettingsAreRefusedSideBySideUnlessAllowed) {
    EvalSuiteRequest req;
    req.models = {"demo", dir() + "/nvfp4"};
    req.labels = {"fp"};
    req.suite = dir() + "/demo.jsonl";
    req.max_tokens = 8;
    NullJobSink sink;
    const EvalSuiteResult first = run_evalsuite(req, sink, CancellationToken{});
    ASSERT_EQ(first.runs.size(), 2u);
    EXPECT_EQ(first.runs[0].manifest.label, "fp");
    EXPECT_EQ(first.runs[1].manifest.label, "NVFP4_DEFAULT");
    EXPECT_EQ(first.runs[1].manifest.weight_bits, 4);
    EXPECT_LT(first.runs[1].cost.weights.bytes(), first.runs[0].cost.weights.bytes());
    EXPECT_EQ(first.tables.stats.comparisons.size(), 1u);
    EXPECT_EQ(first.tables.checklist.size(), 10u);

    // A saved baseline with the same settings stands in for the model.
    save_evaluation_run(first.runs[0], dir() + "/fp.json");
    req.models = {dir() + "/fp.json", dir() + "/nvfp4"};
    req.labels = {};
    const EvalSuiteResult again = run_evalsuite(req, sink, CancellationToken{});
    EXPECT_TRUE(again.loaded[0]);
    EXPECT_FALSE(again.loaded[1]);
    EXPECT_EQ(again.runs[0].manifest.label, "fp");
    // The same greedy answers as the run that was saved.
    for (size_t i = 0; i < again.runs[1].replicates[0].items.size(); ++i)
        EXPECT_EQ(again.runs[1].replicates[0].items[i].output, first.runs[1].replicates[0].items[i].output);

    req.max_tokens = 16;
    EXPECT_NE(user_error_text([&] { run_evalsuite(req, sink, CancellationToken{}); })
                  .find("NVFP4_DEFAULT was run with other settings than fp: decoding.max_tokens: 8 vs 16"),
              std::string::npos);
    req.allow_mixed_settings = true;
    const EvalSuiteResult mixed = run_evalsuite(req, sink, CancellationToken{});
    ASSERT_EQ(mixed.tables.warnings.size(), 1u);
    EXPECT_NE(mixed.tables.warnings[0].find("decoding.max_tokens: 8 vs 16"), std::string::npos);
}

TEST_F(SuiteRunner, TheHtmlReportCarriesTheEvaluation) {
    EvalSuiteRequest req;
    req.models = {"demo", dir() + "/nvfp4"};
    req.labels = {"fp"};
    req.suite = dir() + "/demo.jsonl";
    req.max_tokens = 8;
    NullJobSink sink;
    const EvalSuiteResult r = run_evalsuite(req, sink, CancellationToken{});
    const OpenedModel q = open_model(dir() + "/nvfp4");
    ReportInputs in;
    in.model_name = "nvfp4";
    in.folder = q.path;
    in.quantized = q.quantization.get();
    const std::string without = report_html(in, {});
    EXPECT_EQ(without.find("<h2>Evaluation</h2>"), std::string::npos);
    for (const EvaluationRun& run : r.runs) in.evaluations.push_back(evaluation_run_json(run).dump());
    const std::string html = report_html(in, {});
    ASSERT_NE(html.find("<h2>Evaluation</h2>"), std::string::npos);
    EXPECT_NE(html.find("Baseline: fp."), std::string::npos);
    EXPECT_NE(html.find("<th>NVFP4_DEFAULT</th>"), std::string::npos);
    const RateInterval& overall = r.tables.stats.summaries[1].overall;
    char rate[64];
    std::snprintf(rate, sizeof rate, "(%lld/6)", static_cast<long long>(overall.successes));
    EXPECT_NE(html.find(rate), std::string::npos);
    EXPECT_NE(html.find("task success per category</td><td>&#x2611;"), std::string::npos);
    EXPECT_NE(html.find(r.runs[1].manifest.model_sha256), std::string::npos);
}

TEST_F(SuiteRunner, ChecklistTicksWhatWasMeasured) {
    EvaluationRun fp, q8, q4;
    for (EvaluationRun* r : {&fp, &q8, &q4}) {
        ModelEvalReport rep;
        rep.suite_sha256 = std::string(64, 'a');
        ItemOutcome a;
        a.id = "a";
        a.category = "c";
        a.check = "tool_call";
        a.passed = true;
        a.tool_name_correct = a.tool_arguments_correct = true;
        ItemOutcome b = a;
        b.id = "b";
        b.check = "json_schema";
        b.json_valid = true;
        b.tool_name_correct = b.tool_arguments_correct = std::nullopt;
        ItemOutcome v = b;
        v.id = "v";
        v.variant_of = "b";
        v.variant = "typo";
        v.passed = r != &q4;
        rep.items = {a, b, v};
        r->replicates = {rep};
        r->manifest.model_sha256 = "x";
        r->manifest.quant_scheme = "s";
        r->manifest.quantlab_version = "0.1.0";
        r->cost.weights.high_precision_bytes = 10;
        r->cost.measured.generations = 3;
        r->cost.measured.decode_tokens_per_second = 5;
        r->cost.seconds_per_success = 1;
    }
    fp.manifest.label = "fp";
    q8.manifest.label = "int8";
    q8.manifest.weight_bits = 8;
    q4.manifest.label = "int4";
    q4.manifest.weight_bits = 4;
    const EvaluationTables t = compare_runs({fp, q8, q4});
    ASSERT_EQ(t.checklist.size(), 10u);
    for (const ChecklistEntry& c : t.checklist) EXPECT_TRUE(c.done) << c.item << ": " << c.evidence;
    ASSERT_EQ(t.flips.size(), 1u);
    EXPECT_EQ(t.flips[0].id, "v");
    EXPECT_EQ(t.flips[0].model, "int4");
    EXPECT_EQ(t.flips[0].direction, "right_to_wrong");
    const EvaluationTables no_int4 = compare_runs({fp, q8});
    EXPECT_FALSE(no_int4.checklist[1].done);
    EXPECT_NE(no_int4.checklist[1].evidence.find("4-bit weights: none"), std::string::npos);
    q8.cost.measured.generations = 0;
    EXPECT_FALSE(compare_runs({fp, q8}).checklist[7].done);
    EXPECT_NE(user_error_text([&] { compare_runs({fp, fp}); }).find("two runs are labelled 'fp'"), std::string::npos);
}

TEST_F(SuiteRunner, EvaluationRunsRoundTripAndBadFieldsAreNamed) {
    OpenedModel m = open_model("demo");
    SuiteRunSettings s;
    s.item_ids = {"add-1", "sub-1"};
    NullJobSink sink;
    EvaluationRun run = run_suite(m, "demo", suite(), s, sink, CancellationToken{});
    run.logits = LogitMetrics{"t.txt", "hf", 512, 16, 1000, 12.5, "fp", 12.0, 0.5, 0.01, 0.2, 0.97, 1.5};
    const std::string path = dir() + "/run.json";
    save_evaluation_run(run, path);
    const EvaluationRun back = load_evaluation_run(path);
    // Same content (a reloaded report's free-form settings object keeps its keys sorted).
    EXPECT_EQ(nlohmann::json::parse(evaluation_run_json(back).dump()), nlohmann::json::parse(evaluation_run_json(run).dump()));

    nlohmann::json j = evaluation_run_json(run);
    j["replicates"][0]["items"][1]["passed"] = "yes";
    EXPECT_EQ(user_error_text([&] { evaluation_run_from_json(j, "r.json"); }), "r.json: replicates[0]: items[1].passed: expected true or false");
    j = evaluation_run_json(run);
    j["manifest"]["decoding"]["max_tokens"] = 0;
    EXPECT_EQ(user_error_text([&] { evaluation_run_from_json(j, "r.json"); }),
              "r.json: manifest.decoding.max_tokens: expected an integer >= 1");
    j = evaluation_run_json(run);
    j["cost"]["weights"]["bytes"] = 1;
    EXPECT_NE(user_error_text([&] { evaluation_run_from_json(j, "r.json"); }).find("r.json: cost.weights.bytes: is not the sum"),
              std::string::npos);
    j = evaluation_run_json(run);
    j["extra"] = 1;
    EXPECT_EQ(user_error_text([&] { evaluation_run_from_json(j, "r.json"); }), "r.json: extra: unknown key");
    std::ofstream(dir() + "/broken.json") << "{\"format\": ";
    EXPECT_NE(user_error_text([&] { load_evaluation_run(dir() + "/broken.json"); }).find("not an evaluation run (JSON)"),
              std::string::npos);
}

// Minimal ChatML templates: one with SmolLM2's default system message and no tools (as
// SmolLM2-135M-Instruct's), one that writes the tools, one without a default.
const char* kSmolLikeTemplate =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
const char* kToolTemplate =
    "{% if tools %}<tools>{% for t in tools %}{{ t.function.name }};{% endfor %}</tools>\n{% endif %}"
    "{% for message in messages %}{{ message['role'] + ': ' + message['content'] + '\n' }}{% endfor %}";

ModelText template_text(const char* source) {
    ModelText t;
    t.chat_template = source;
    t.chat_template_origin = "test template";
    t.encode_rendered = [](const std::string&) { return std::vector<int64_t>{1}; };
    return t;
}

TEST(SuiteRunnerTemplates, TheDefaultSystemMessageAndToolAwarenessAreFoundByRendering) {
    const nlohmann::ordered_json conversation = nlohmann::ordered_json::array({{{"role", "user"}, {"content", "hi"}}});
    const nlohmann::ordered_json tools = nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "get_weather"}}])");
    const ModelText smol = template_text(kSmolLikeTemplate);
    EXPECT_EQ(template_default_system(smol), "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
    EXPECT_FALSE(template_renders_tools(smol, conversation, tools));
    const ModelText aware = template_text(kToolTemplate);
    EXPECT_EQ(template_default_system(aware), "");
    EXPECT_TRUE(template_renders_tools(aware, conversation, tools));
}

TEST(ServingCost, MeasuredSpeedAndEstimatesFollowTheirDefinitions) {
    const MeasuredSpeed s = measured_speed({{10, 5, 0.5, 2.0}, {30, 1, 1.5, 0.0}, {20, 3, 1.0, 1.0}}, "cpu");
    EXPECT_EQ(s.generations, 3);
    EXPECT_EQ(s.prompt_tokens, 60);
    EXPECT_EQ(s.generated_tokens, 9);
    EXPECT_DOUBLE_EQ(s.prefill_tokens_per_second, 60 / 3.0);
    EXPECT_DOUBLE_EQ(s.decode_tokens_per_second, (4 + 0 + 2) / 3.0);  // tokens after each first, over decode time
    EXPECT_DOUBLE_EQ(s.ttft_mean_s, 1.0);
    EXPECT_DOUBLE_EQ(s.ttft_p50_s, 1.0);
    EXPECT_DOUBLE_EQ(s.ttft_p95_s, 1.0 + 0.9 * 0.5);  // numpy.percentile([0.5, 1, 1.5], 95)
    WeightMemory w;
    w.code_bytes = 600;
    w.high_precision_bytes = 400;
    KvCacheCost kv;
    kv.bytes_per_token = 2;
    const GpuEstimate e = estimate_decode(w, kv, find_gpu("h100"), 100, 10);
    EXPECT_EQ(e.gpu, "H100");
    EXPECT_DOUBLE_EQ(e.bytes_per_token, 1200);
    EXPECT_DOUBLE_EQ(e.decode_tokens_per_second, 3.35e12 / 1200);
    EXPECT_DOUBLE_EQ(e.seconds_per_success, 10 / (3.35e12 / 1200));
    EXPECT_TRUE(std::isnan(estimate_decode(w, kv, find_gpu("H200"), 0, NAN).seconds_per_success));
}

}  // namespace
}  // namespace ql::evaluation
