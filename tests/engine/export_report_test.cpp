// SPDX-License-Identifier: GPL-3.0-or-later
// The fake-quant export and the report (engine/export/fakequant_export.h, export_report.h,
// report_plots.h) and the export facade (engine/api/export_api.h).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "engine/core/errors.h"
#include "engine/api/export_api.h"
#include "engine/export/export_report.h"
#include "engine/export/fakequant_export.h"
#include "engine/export/report_plots.h"
#include "engine/io/sha256.h"
#include "engine/io/safetensors_tensors.h"
#include "engine/io/sha256.h"
#include "engine/io/whole_file.h"
#include "engine/quant/quantized_checkpoint.h"
#include "export_test_support.h"
#include "user_error_text.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
using test::recipe;
using test::user_error_text;

TEST(FakequantExport, WeightsAreTheDequantizedValuesInTheSourceLayout) {
    test::QuantizedTiny m = test::quantize_tiny(recipe("max", R"({"format": "nvfp4"})", R"({"format": "nvfp4"})"));
    const std::string dir = test::temp_dir("fqexp");
    NullJobSink sink;
    CancellationToken cancel;
    const FolderExportResult r = export_fakequant(*m.q, test::tiny_llama(), dir + "/fq", false, sink, cancel);
    ASSERT_EQ(r.warnings.size(), 1u);  // inputs are not represented
    EXPECT_NE(r.warnings[0].find("weights only"), std::string::npos);
    EXPECT_TRUE(fs::exists(dir + "/fq/quantlab_recipe.json"));
    EXPECT_TRUE(fs::exists(dir + "/fq/config.json"));
    const SafetensorsFile f = SafetensorsFile::open(dir + "/fq/model.safetensors");
    LayerQuantizer& l = *m.q->find("model.layers.1.mlp.down_proj");
    EXPECT_TRUE(at::equal(load_float32(f, "model.layers.1.mlp.down_proj.weight"), l.quantized_weight()));
    EXPECT_EQ(f.info("model.layers.1.mlp.down_proj.weight").dtype, SafetensorsDtype::F32);
    // lm_head is not quantized: unchanged.
    EXPECT_TRUE(at::equal(load_float32(f, "lm_head.weight"), m.opened.model->find_layer("lm_head")->weight));
    // Loaded as a plain FP model with input quantization off, it equals the quantized model with
    // input quantizers off.
    OpenedModel back = open_model(dir + "/fq");
    EXPECT_FALSE(back.quantization);
    for (const auto& lq : m.q->layers()) lq->set_input_enabled(false);
    const Dataset eval = test::tokens_for(m.opened, 2, 3);
    EXPECT_TRUE(at::equal(test::logits(*m.opened.model, eval), test::logits(*back.model, eval)));
    EXPECT_NE(user_error_text([&] { export_fakequant(*m.q, test::tiny_llama(), dir + "/fq", false, sink, cancel); })
                  .find("already exists"),
              std::string::npos);
    fs::remove_all(dir);
}

TEST(ReportPlots, TicksAreRoundNumbersCoveringTheRange) {
    EXPECT_EQ(nice_ticks(0, 10), (std::vector<double>{0, 2, 4, 6, 8, 10}));
    EXPECT_EQ(nice_ticks(0.13, 0.91), (std::vector<double>{0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0}));
    EXPECT_EQ(base64_encode("Man"), "TWFu");
    EXPECT_EQ(base64_encode("Ma"), "TWE=");
    EXPECT_EQ(base64_encode("M"), "TQ==");
}

TEST(ReportPlots, LinePlotsAndBarChartsArePngs) {
    const std::string line = line_plot_png("loss", "step", "loss", {0, 1, 2, 3}, {2.0, 1.5, NAN, 1.0});
    ASSERT_GT(line.size(), 8u);
    EXPECT_EQ(line.substr(1, 3), "PNG");
    const std::string bars = bar_chart_png("sqnr", "dB", {"a", "b"}, {12.5, -3.0}, PlotSize{300, 200});
    EXPECT_EQ(bars.substr(1, 3), "PNG");
    // IHDR width and height, big-endian at bytes 16..23.
    auto be32 = [&](size_t o) { return (uint8_t(bars[o]) << 24) | (uint8_t(bars[o + 1]) << 16) | (uint8_t(bars[o + 2]) << 8) | uint8_t(bars[o + 3]); };
    EXPECT_EQ(be32(16), 300u);
    EXPECT_EQ(be32(20), 200u);
}

TEST(ExportApi, ReportIsOneSelfContainedPageWithCsvAndRecipe) {
    test::QuantizedTiny m = test::quantize_tiny(recipe("max", R"({"format": "fp8_e4m3"})", R"({"format": "fp8_e4m3"})"));
    const std::string dir = test::temp_dir("report");
    save_quantized_checkpoint(*m.q, test::tiny_llama(), dir + "/ckpt", false,
                              {{"ptq_report.json", R"({"calibration": "synthetic:random-tokens", "layers": [
                                  {"layer": "model.layers.0.self_attn.q_proj", "method": "max", "output_sqnr_db": 31.5}]})"}});
    ExportRequest req;
    req.model = dir + "/ckpt";
    req.as = "report";
    req.out = dir + "/report";
    req.series = {{"train/loss", {0, 10, 20}, {3.0, 2.0, 1.5}}};
    req.run_config_json = R"({"seed": 1234})";
    NullJobSink sink;
    CancellationToken cancel;
    const ExportReport r = run_export(req, sink, cancel);
    EXPECT_EQ(r.files.size(), 3u);
    const std::string html = read_whole_file(dir + "/report/report.html", "t");
    EXPECT_NE(html.find("<img alt=\"train/loss\" src=\"data:image/png;base64,iVBORw0KGgo"), std::string::npos);
    EXPECT_NE(html.find("output SQNR per layer"), std::string::npos);
    EXPECT_NE(html.find("31.5"), std::string::npos);
    EXPECT_NE(html.find("<th>seed</th><td>1234</td>"), std::string::npos);
    EXPECT_NE(html.find("SHA-256 model.safetensors</th><td><code>" +
                        sha256_file_hex(dir + "/ckpt/model.safetensors")),
              std::string::npos);
    EXPECT_EQ(html.find("http://"), std::string::npos);  // no external assets
    EXPECT_EQ(html.find("https://"), std::string::npos);
    EXPECT_EQ(read_whole_file(dir + "/report/metrics.csv", "t"),
              "series,step,value\n\"train/loss\",0,3\n\"train/loss\",10,2\n\"train/loss\",20,1.5\n");
    EXPECT_EQ(read_whole_file(dir + "/report/recipe.json", "t"), recipe_to_json(m.q->recipe()));
    // Without series: curves from the checkpoint's ptq_report.json.
    req.series.clear();
    req.force = true;
    run_export(req, sink, cancel);
    EXPECT_NE(read_whole_file(dir + "/report/metrics.csv", "t").find("\"ptq/output_sqnr_db by layer index\",0,31.5"),
              std::string::npos);
    fs::remove_all(dir);
}

TEST(ExportApi, RefusesBadRequestsBeforeWorking) {
    NullJobSink sink;
    CancellationToken cancel;
    ExportRequest req;
    req.model = test::tiny_llama();
    req.as = "tflite";
    // A path that does not exist: every refusal below must leave it so.
    const std::string never = (std::filesystem::temp_directory_path() / ("quantlab-never-" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(never);
    req.out = never;
    EXPECT_NE(user_error_text([&] { run_export(req, sink, cancel); }).find("--as must be one of"), std::string::npos);
    req.as = "gguf";
    req.gguf_type = "q3_xx";  // not a llama.cpp file type
    EXPECT_NE(user_error_text([&] { run_export(req, sink, cancel); }).find("q3_xx"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(never));
    req.gguf_type.clear();
    req.as = "hf-modelopt";
    EXPECT_NE(user_error_text([&] { run_export(req, sink, cancel); }).find("is not a quantized model"), std::string::npos);
    req.out = test::tiny_llama();
    EXPECT_NE(user_error_text([&] { run_export(req, sink, cancel); }).find("already exists (pass --force"), std::string::npos);
    EXPECT_EQ(export_kinds(), (std::vector<std::string>{"hf-modelopt", "compressed-tensors", "gguf", "onnx", "fakequant", "report"}));
}

}  // namespace
}  // namespace ql
