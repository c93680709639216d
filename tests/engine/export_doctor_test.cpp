// SPDX-License-Identifier: GPL-3.0-or-later
// The Export Doctor (engine/export/export_doctor.h) on real exports of the tiny Llama: the good
// ones pass (compressed-tensors, hf-modelopt, fakequant, GGUF), and a corpus of broken exports,
// one defect each, is caught with an error naming the layer or tensor: missing scale, extra scale
// for an excluded layer, unfused global scales, inverted global scale, wrong nibble order,
// truncated shard, a config that names another algorithm; plus KV-cache scales missing, unknown
// config keys, a GGUF tensor that is not what its plan says, and an export refused by the doctor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/api/doctor_api.h"
#include "engine/api/export_api.h"
#include "engine/core/errors.h"
#include "engine/export/compressed_tensors_export.h"
#include "engine/export/export_doctor.h"
#include "engine/export/gguf_export.h"
#include "engine/export/hf_modelopt_export.h"
#include "engine/io/safetensors_file.h"
#include "engine/io/whole_file.h"
#include "engine/quant/quantized_checkpoint.h"
#include "export_test_support.h"
#include "user_error_text.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test::quantize_tiny;
using test::recipe;

std::string shared(const std::string& r) { return r.substr(0, r.size() - 1) + R"(, "share_fused_scales": true})"; }

const std::string kNvfp4 = shared(recipe("max", R"({"format": "nvfp4"})", R"({"format": "nvfp4"})"));
const std::string kInt4 = recipe("max", R"({"format": "int4", "granularity": "group", "group_size": 32})");
const char* kQ = "model.layers.0.self_attn.q_proj";

// Every tensor of a single-file checkpoint, editable, written back in place.
struct Tensors {
    std::string path;
    std::map<std::string, std::string> metadata{{"format", "pt"}};
    std::map<std::string, ExportTensor> t;
    explicit Tensors(const std::string& folder) : path(folder + "/model.safetensors") {
        const SafetensorsFile f = SafetensorsFile::open(path);
        for (const auto& info : f.tensors()) {
            const TensorBytes b = f.bytes(info);
            t[info.name] = ExportTensor{info.name, info.dtype, info.shape, std::vector<uint8_t>(b.data, b.data + b.size)};
        }
    }
    void write() {
        std::vector<SafetensorsWriteEntry> e;
        for (const auto& [n, x] : t) e.push_back({n, x.dtype, x.shape, x.bytes.data(), x.bytes.size()});
        write_safetensors(path, std::move(e), metadata);
    }
    float scalar(const std::string& n) const {
        float v;
        std::memcpy(&v, t.at(n).bytes.data(), 4);
        return v;
    }
    void set_scalar(const std::string& n, float v) { std::memcpy(t.at(n).bytes.data(), &v, 4); }
};

class ExportDoctor : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = test::temp_dir("doctor");
        NullJobSink sink;
        CancellationToken cancel;
        nvfp4_ = std::make_unique<test::QuantizedTiny>(quantize_tiny(kNvfp4));
        export_compressed_tensors(*nvfp4_->q, test::tiny_llama(), dir_ + "/ct-nvfp4", false, sink, cancel);
        export_hf_modelopt(*nvfp4_->q, test::tiny_llama(), dir_ + "/mo-nvfp4", false, sink, cancel);
        test::QuantizedTiny int4 = quantize_tiny(kInt4);
        export_compressed_tensors(*int4.q, test::tiny_llama(), dir_ + "/ct-int4", false, sink, cancel);
        export_hf_modelopt(*int4.q, test::tiny_llama(), dir_ + "/mo-int4", false, sink, cancel);
        // The same NVFP4 recipe without shared scales: each q/k/v keeps its own global scale.
        test::QuantizedTiny unfused = quantize_tiny(recipe("max", R"({"format": "nvfp4"})", R"({"format": "nvfp4"})"));
        export_compressed_tensors(*unfused.q, test::tiny_llama(), dir_ + "/ct-unfused", false, sink, cancel);
        export_hf_modelopt(*unfused.q, test::tiny_llama(), dir_ + "/mo-unfused", false, sink, cancel);
    }
    static void TearDownTestSuite() {
        nvfp4_.reset();
        fs::remove_all(dir_);
    }
    // A fresh copy of a good export to break.
    std::string copy(const std::string& name) {
        const std::string to = dir_ + "/broken-" + name + "-" + std::to_string(++copies_);
        fs::copy(dir_ + "/" + name, to, fs::copy_options::recursive);
        return to;
    }
    static const DoctorFinding* find(const DoctorReport& r, DoctorSeverity s, const std::string& check, const std::string& where) {
        for (const DoctorFinding& f : r.findings)
            if (f.severity == s && f.check == check && f.where.find(where) != std::string::npos) return &f;
        return nullptr;
    }
    static std::string all(const DoctorReport& r) { return doctor_report_json(r); }
    static inline std::string dir_;
    static inline std::unique_ptr<test::QuantizedTiny> nvfp4_;
    static inline int copies_ = 0;  // per suite: every copy gets its own folder
};

TEST_F(ExportDoctor, GoodExportsPassEveryCheck) {
    for (const char* name : {"ct-nvfp4", "mo-nvfp4", "ct-int4", "mo-int4"}) {
        const DoctorReport r = run_export_doctor(dir_ + "/" + name);
        EXPECT_TRUE(r.ok()) << name << "\n" << all(r);
        // The golden tiny Llama has no tokenizer files: the only warning.
        for (const DoctorFinding& f : r.findings)
            if (f.severity == DoctorSeverity::Warning) EXPECT_EQ(f.check, "config-tokenizer") << name << ": " << f.problem;
        EXPECT_EQ(r.layers, 14) << name;
        for (const char* check : {"files", "coverage", "dtypes-shapes", "fused-scales", "scale-conventions", "reproduces-quantlab", "kv-cache"}) {
            bool ran = false;
            for (const DoctorCheck& c : r.checks) ran = ran || (c.id == check && c.ran);
            EXPECT_TRUE(ran) << name << " " << check << "\n" << all(r);
        }
    }
    EXPECT_EQ(run_export_doctor(dir_ + "/ct-nvfp4").layout, "compressed-tensors");
    EXPECT_EQ(run_export_doctor(dir_ + "/mo-nvfp4").layout, "hf-modelopt");
    // compressed-tensors' NVFP4 arithmetic: counted, reported as information, never an error.
    const DoctorReport r = run_export_doctor(dir_ + "/ct-nvfp4");
    for (const DoctorFinding& f : r.findings)
        if (f.check != "config-tokenizer") EXPECT_EQ(f.severity, DoctorSeverity::Info) << f.problem;
}

TEST_F(ExportDoctor, MissingScaleIsAnErrorNamingTheTensor) {
    for (const char* name : {"ct-int4", "mo-int4"}) {
        const std::string d = copy(name);
        Tensors t(d);
        t.t.erase(std::string(kQ) + ".weight_scale");
        t.write();
        const DoctorReport r = run_export_doctor(d);
        const DoctorFinding* f = find(r, DoctorSeverity::Error, "coverage", std::string(kQ) + ".weight_scale");
        ASSERT_NE(f, nullptr) << name << "\n" << all(r);
        EXPECT_NE(f->consumer.find("fails to load"), std::string::npos);
        EXPECT_FALSE(r.ok());
    }
}

TEST_F(ExportDoctor, ExtraScaleForAnExcludedLayerIsAnError) {
    for (const char* name : {"ct-nvfp4", "mo-nvfp4"}) {
        const std::string d = copy(name);
        Tensors t(d);
        t.t["lm_head.weight_scale"] = ExportTensor{"lm_head.weight_scale", SafetensorsDtype::F32, {1}, std::vector<uint8_t>(4)};
        if (!t.t.count("lm_head.weight")) {  // tied: the doctor sees lm_head only through its scale
            const ExportTensor& e = t.t.at("model.embed_tokens.weight");
            t.t["lm_head.weight"] = ExportTensor{"lm_head.weight", e.dtype, e.shape, e.bytes};
        }
        t.write();
        const DoctorReport r = run_export_doctor(d);
        const DoctorFinding* f = find(r, DoctorSeverity::Error, "coverage", "lm_head");
        ASSERT_NE(f, nullptr) << name << "\n" << all(r);
        EXPECT_NE(f->problem.find(name[0] == 'c' ? "is in `ignore`" : "is in exclude_modules"), std::string::npos) << f->problem;
    }
}

TEST_F(ExportDoctor, UnfusedGlobalScalesAreAnErrorNamingTheFusedLayers) {
    for (const char* name : {"ct-unfused", "mo-unfused"}) {
        const DoctorReport r = run_export_doctor(dir_ + "/" + name);
        const DoctorFinding* f = find(r, DoctorSeverity::Error, "fused-scales", "model.layers.0.self_attn.q_proj");
        ASSERT_NE(f, nullptr) << name << "\n" << all(r);
        EXPECT_NE(f->problem.find(name[0] == 'c' ? "weight_global_scale differ" : "weight_scale_2 differ"), std::string::npos) << f->problem;
        EXPECT_NE(f->consumer.find("wrong numbers"), std::string::npos);
        EXPECT_NE(f->fix.find("share_fused_scales"), std::string::npos);
    }
}

// Both checks see it: scale-conventions (the convention is wrong) and reproduces-quantlab (the
// weights decode, with the global scale the file holds, to other values than QuantLab evaluated).
TEST_F(ExportDoctor, InvertedGlobalScaleIsAnError) {
    {
        const std::string d = copy("ct-nvfp4");
        Tensors t(d);
        const std::string n = std::string(kQ) + ".weight_global_scale";
        t.set_scalar(n, 1.0f / t.scalar(n));  // Model Optimizer's weight_scale_2 where compressed-tensors multiplies
        t.write();
        const DoctorReport r = run_export_doctor(d);
        EXPECT_NE(find(r, DoctorSeverity::Error, "scale-conventions", n), nullptr) << all(r);
        // One wrong tensor, one scale-conventions error (both of its tests' evidence in it).
        int64_t on_it = 0;
        for (const DoctorFinding& f : r.findings) on_it += f.check == "scale-conventions" && f.where == n;
        EXPECT_EQ(on_it, 1) << all(r);
        EXPECT_NE(find(r, DoctorSeverity::Error, "reproduces-quantlab", kQ), nullptr) << all(r);
    }
    {
        const std::string d = copy("mo-nvfp4");
        Tensors t(d);
        const std::string n = std::string(kQ) + ".weight_scale_2";
        t.set_scalar(n, 1.0f / t.scalar(n));
        t.write();
        const DoctorReport r = run_export_doctor(d);
        EXPECT_NE(find(r, DoctorSeverity::Error, "scale-conventions", n), nullptr) << all(r);
        EXPECT_NE(find(r, DoctorSeverity::Error, "reproduces-quantlab", kQ), nullptr) << all(r);
    }
    {
        // One ulp off is no convention mix-up, but the weights are not QuantLab's any more.
        const std::string d = copy("ct-nvfp4");
        Tensors t(d);
        const std::string n = std::string(kQ) + ".weight_global_scale";
        t.set_scalar(n, std::nextafter(t.scalar(n), 0.0f));
        t.write();
        const DoctorReport r = run_export_doctor(d);
        const DoctorFinding* f = find(r, DoctorSeverity::Error, "reproduces-quantlab", kQ);
        ASSERT_NE(f, nullptr) << all(r);
        EXPECT_NE(f->fix.find("weight_global_scale = 1 / g"), std::string::npos) << f->fix;
        EXPECT_EQ(find(r, DoctorSeverity::Error, "reproduces-quantlab", "model.layers.0.self_attn.k_proj"), nullptr) << all(r);
    }
}

TEST_F(ExportDoctor, WrongNibbleOrderIsCaughtAgainstTheWeightsQuantLabEvaluated) {
    for (const char* name : {"ct-nvfp4", "mo-nvfp4", "ct-int4"}) {
        const std::string d = copy(name);
        Tensors t(d);
        const std::string n = std::string(kQ) + (name[0] == 'c' ? ".weight_packed" : ".weight");
        for (uint8_t& b : t.t.at(n).bytes) b = static_cast<uint8_t>((b << 4) | (b >> 4));
        t.write();
        const DoctorReport r = run_export_doctor(d);
        const DoctorFinding* f = find(r, DoctorSeverity::Error, "reproduces-quantlab", kQ);
        ASSERT_NE(f, nullptr) << name << "\n" << all(r);
        EXPECT_NE(f->fix.find("nibble order"), std::string::npos);
        // The other layers still pass.
        EXPECT_EQ(find(r, DoctorSeverity::Error, "reproduces-quantlab", "model.layers.1."), nullptr) << all(r);
    }
}

TEST_F(ExportDoctor, TruncatedShardIsAnErrorNamingTheFile) {
    for (const char* name : {"ct-nvfp4", "mo-int4"}) {
        const std::string d = copy(name);
        fs::resize_file(d + "/model.safetensors", fs::file_size(d + "/model.safetensors") - 100);
        const DoctorReport r = run_export_doctor(d);
        const DoctorFinding* f = find(r, DoctorSeverity::Error, "files", d);
        ASSERT_NE(f, nullptr) << all(r);
        EXPECT_NE(f->problem.find("model.safetensors"), std::string::npos) << f->problem;
        bool skipped = false;
        for (const DoctorCheck& c : r.checks) skipped = skipped || (c.id == "reproduces-quantlab" && !c.ran);
        EXPECT_TRUE(skipped);
    }
}

TEST_F(ExportDoctor, ConfigNamingAnotherAlgorithmIsAnError) {
    {
        const std::string d = copy("ct-int4");
        json c = json::parse(read_whole_file(d + "/config.json", "t"));
        auto& g = c["quantization_config"]["config_groups"]["group_0"];
        g["format"] = "nvfp4-pack-quantized";
        g["weights"] = json::parse(R"({"num_bits": 4, "type": "float", "symmetric": true, "group_size": 16,
                                       "strategy": "tensor_group", "dynamic": false, "scale_dtype": "torch.float8_e4m3fn"})");
        c["quantization_config"]["format"] = "nvfp4-pack-quantized";
        std::ofstream(d + "/config.json") << c.dump(2);
        const DoctorReport r = run_export_doctor(d);
        const DoctorFinding* f = find(r, DoctorSeverity::Error, "dtypes-shapes", std::string(kQ) + ".weight_packed");
        ASSERT_NE(f, nullptr) << all(r);
        EXPECT_NE(f->problem.find("the config names another format"), std::string::npos) << f->problem;
    }
    {
        const std::string d = copy("mo-nvfp4");
        json q = json::parse(read_whole_file(d + "/hf_quant_config.json", "t"));
        q["quantization"]["quant_algo"] = "FP8";
        std::ofstream(d + "/hf_quant_config.json") << q.dump(2);
        const DoctorReport r = run_export_doctor(d);
        EXPECT_NE(find(r, DoctorSeverity::Error, "config-schema", "config.json quantization_config.quant_algo"), nullptr) << all(r);
        EXPECT_NE(find(r, DoctorSeverity::Error, "dtypes-shapes", std::string(kQ) + ".weight"), nullptr) << all(r);
    }
}

// compressed-tensors 0.20's pydantic models: QuantizationScheme and QuantizationArgs are
// extra="forbid" (QuantizationConfig.model_validate fails: "config_groups.group_0...weights.
// observer_arg Extra inputs are not permitted"), QuantizationConfig itself is extra="ignore" (a
// top-level `producer` validates and is dropped). So the first two are errors naming the field,
// the third a warning, as the peer behaves (checked with the peers venv's compressed-tensors 0.20).
TEST_F(ExportDoctor, UnknownConfigKeysFailTheSchemaAsCompressedTensorsWould) {
    const std::string d = copy("ct-int4");
    json c = json::parse(read_whole_file(d + "/config.json", "t"));
    c["quantization_config"]["producer"] = {{"name", "someone"}};
    c["quantization_config"]["config_groups"]["group_0"]["weights"]["observer_arg"] = 1;
    c["quantization_config"]["config_groups"]["group_0"]["weight_observer"] = "minmax";
    std::ofstream(d + "/config.json") << c.dump(2);
    const DoctorReport r = run_export_doctor(d);
    EXPECT_FALSE(r.ok());
    const DoctorFinding* args = find(r, DoctorSeverity::Error, "config-schema", "config_groups.group_0.weights.observer_arg");
    ASSERT_NE(args, nullptr) << all(r);
    EXPECT_NE(args->problem.find("QuantizationArgs forbids extra keys"), std::string::npos) << args->problem;
    EXPECT_NE(find(r, DoctorSeverity::Error, "config-schema", "config_groups.group_0.weight_observer"), nullptr) << all(r);
    EXPECT_EQ(find(r, DoctorSeverity::Error, "config-schema", "quantization_config.producer"), nullptr) << all(r);
    const DoctorFinding* top = find(r, DoctorSeverity::Warning, "config-schema", "quantization_config.producer");
    ASSERT_NE(top, nullptr) << all(r);
    EXPECT_NE(top->problem.find("ignores extra keys"), std::string::npos) << top->problem;
    // A top-level key alone: the config loads in compressed-tensors and vLLM, so no error.
    const std::string only_top = copy("ct-int4");
    json t = json::parse(read_whole_file(only_top + "/config.json", "t"));
    t["quantization_config"]["producer"] = {{"name", "someone"}};
    std::ofstream(only_top + "/config.json") << t.dump(2);
    const DoctorReport ok = run_export_doctor(only_top);
    EXPECT_TRUE(ok.ok()) << all(ok);
    EXPECT_NE(find(ok, DoctorSeverity::Warning, "config-schema", "quantization_config.producer"), nullptr) << all(ok);
}

TEST_F(ExportDoctor, KvCacheSchemeWithoutItsScalesIsAnError) {
    const std::string d = copy("ct-nvfp4");
    json c = json::parse(read_whole_file(d + "/config.json", "t"));
    c["quantization_config"]["kv_cache_scheme"] =
        json::parse(R"({"num_bits": 8, "type": "float", "symmetric": true, "strategy": "tensor", "dynamic": false})");
    std::ofstream(d + "/config.json") << c.dump(2);
    const DoctorReport r = run_export_doctor(d);
    const DoctorFinding* f = find(r, DoctorSeverity::Error, "kv-cache", "model.layers.0.self_attn.k_scale");
    ASSERT_NE(f, nullptr) << all(r);
    EXPECT_NE(f->consumer.find("1.0"), std::string::npos);
}

TEST_F(ExportDoctor, TokenizerBeyondTheEmbeddingIsAnError) {
    const std::string d = copy("ct-int4");
    json c = json::parse(read_whole_file(d + "/config.json", "t"));
    c["eos_token_id"] = c["vocab_size"].get<int64_t>() + 5;
    std::ofstream(d + "/config.json") << c.dump(2);
    const DoctorReport r = run_export_doctor(d);
    EXPECT_NE(find(r, DoctorSeverity::Error, "config-tokenizer", "eos_token_id"), nullptr) << all(r);
}

TEST_F(ExportDoctor, GgufTypesAreCheckedAgainstThePlanBesideTheFile) {
    NullJobSink sink;
    CancellationToken cancel;
    GgufExportOptions o;
    o.type = "q8_0";
    const std::string file = dir_ + "/m.gguf";
    export_gguf(test::tiny_llama(), file, o, sink, cancel);
    // The export writes its plan beside the file, and the doctor checks every tensor against it.
    const json plan = json::parse(read_whole_file(file + ".plan.json", "plan"));
    EXPECT_EQ(plan["file_type"], "q8_0");
    EXPECT_EQ(plan["tensors"]["blk.0.attn_q.weight"], "Q8_0");
    EXPECT_EQ(plan["tensors"]["blk.0.attn_norm.weight"], "F32");
    DoctorReport r = run_export_doctor(file);
    EXPECT_EQ(r.layout, "gguf");
    EXPECT_TRUE(r.ok()) << all(r);
    bool plan_checked = false;
    for (const DoctorCheck& c : r.checks)
        if (c.id == "gguf-plan") plan_checked = c.ran && c.note.find(std::to_string(plan["tensors"].size()) + " tensor(s)") == 0;
    EXPECT_TRUE(plan_checked) << all(r);
    // A plan that expects a type the file does not have.
    std::ofstream(file + ".plan.json") << R"({"tensors": {"blk.0.attn_q.weight": "q4_0", "blk.0.ffn_up.weight": "q8_0"}})";
    r = run_export_doctor(file);
    const DoctorFinding* f = find(r, DoctorSeverity::Error, "gguf-plan", "blk.0.attn_q.weight");
    ASSERT_NE(f, nullptr) << all(r);
    EXPECT_NE(f->problem.find("is Q8_0, the plan says Q4_0"), std::string::npos) << f->problem;
    EXPECT_EQ(find(r, DoctorSeverity::Error, "gguf-plan", "blk.0.ffn_up.weight"), nullptr);
    fs::remove(file + ".plan.json");
    // A truncated GGUF.
    fs::resize_file(file, fs::file_size(file) / 2);
    r = run_export_doctor(file);
    EXPECT_NE(find(r, DoctorSeverity::Error, "files", file), nullptr) << all(r);
}

TEST_F(ExportDoctor, ExportsRefuseWhatTheDoctorFindsAndLeaveNothingBehind) {
    // A QuantLab checkpoint of the unfused NVFP4 recipe: run_export checks before the rename.
    test::QuantizedTiny unfused = quantize_tiny(recipe("max", R"({"format": "nvfp4"})", R"({"format": "nvfp4"})"));
    save_quantized_checkpoint(*unfused.q, test::tiny_llama(), dir_ + "/ckpt-unfused", false);
    NullJobSink sink;
    CancellationToken cancel;
    for (const char* as : {"compressed-tensors", "hf-modelopt"}) {
        ExportRequest req;
        req.model = dir_ + "/ckpt-unfused";
        req.as = as;
        req.out = dir_ + "/refused-" + as;
        const std::string e = test::user_error_text([&] { run_export(req, sink, cancel); });
        EXPECT_NE(e.find("the Export Doctor found"), std::string::npos) << e;
        EXPECT_NE(e.find("differ"), std::string::npos) << e;
        EXPECT_FALSE(fs::exists(req.out));
        EXPECT_FALSE(fs::exists(req.out + ".partial"));
    }
    // With shared scales it goes through, and the report comes with the result.
    save_quantized_checkpoint(*nvfp4_->q, test::tiny_llama(), dir_ + "/ckpt-shared", false);
    ExportRequest req;
    req.model = dir_ + "/ckpt-shared";
    req.as = "compressed-tensors";
    req.out = dir_ + "/accepted";
    const ExportReport rep = run_export(req, sink, cancel);
    EXPECT_EQ(rep.doctor.layout, "compressed-tensors");
    EXPECT_EQ(rep.doctor.path, req.out);
    EXPECT_TRUE(rep.doctor.ok());
    EXPECT_TRUE(fs::exists(req.out + "/quantlab_export.json"));
}

TEST(ExportDoctorPaths, MissingPathIsAUserErrorAndStrangeOnesAreFindings) {
    EXPECT_NE(test::user_error_text([] { run_export_doctor("/nonexistent/quantlab"); }).find("does not exist"), std::string::npos);
    const std::string d = test::temp_dir("doctor-empty");
    const DoctorReport r = run_export_doctor(d);
    EXPECT_EQ(r.layout, "unknown");
    EXPECT_FALSE(r.ok());
    fs::remove_all(d);
}

}  // namespace
}  // namespace ql
