// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/export_doctor.h"

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/export/doctor_context.h"
#include "engine/io/strict_json.h"
#include "engine/io/whole_file.h"
#include "engine/lora/peft_adapter.h"

namespace ql {
namespace fs = std::filesystem;

std::string detect_artifact_layout(const std::string& path) {
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) {
        const std::string ext = fs::path(path).extension().string();
        return ext == ".gguf" ? "gguf" : ext == ".onnx" ? "onnx" : "unknown";
    }
    if (!fs::is_directory(path, ec)) return "unknown";
    if (is_onnx_artifact(path)) return "onnx";  // before config.json, which the ONNX export copies
    if (is_peft_adapter_folder(path)) return "peft";
    if (fs::is_regular_file(fs::path(path) / "hf_quant_config.json", ec)) return "hf-modelopt";
    const fs::path config = fs::path(path) / "config.json";
    if (fs::is_regular_file(config, ec)) {
        try {
            const std::string text = read_whole_file(config.string(), "config.json");
            const nlohmann::json j = parse_strict_json(text.data(), text.data() + text.size());
            if (j.is_object() && j.contains("quantization_config") && j["quantization_config"].is_object()) {
                const auto& q = j["quantization_config"];
                if (q.contains("quant_method") && q["quant_method"] == "compressed-tensors") return "compressed-tensors";
                if (q.contains("quant_method") && q["quant_method"] == "modelopt") return "hf-modelopt";
            }
        } catch (const std::exception&) {
            // An unreadable config.json is reported by the checks.
        }
        return "hf";
    }
    for (const auto& e : fs::directory_iterator(path, ec))
        if (e.path().extension() == ".safetensors") return "hf";
    return "unknown";
}

DoctorReport run_export_doctor(const std::string& path, const std::string& display) {
    std::error_code ec;
    if (!fs::exists(path, ec)) throw UserError("doctor: " + path + " does not exist");
    std::string shown = display.empty() ? path : display;
    while (shown.size() > 1 && shown.back() == '/') shown.pop_back();
    std::string disk = path;
    while (disk.size() > 1 && disk.back() == '/') disk.pop_back();
    DoctorReport report;
    report.path = shown;
    report.layout = detect_artifact_layout(disk);
    DoctorContext ctx(report);
    if (report.layout == "gguf") {
        report.consumer = "llama.cpp";
        check_gguf_file(disk, shown, ctx);
        return report;
    }
    if (report.layout == "onnx") {
        report.consumer = "ONNX Runtime";
        check_onnx_model(disk, shown, ctx);
        return report;
    }
    if (report.layout == "peft") {
        // A LoRA adapter (engine/lora/peft_adapter.h): its files as PEFT reads them. Whether the
        // base it is applied to is the one it was trained on needs that base (doctor --base).
        report.consumer = "PEFT";
        ctx.check("files", "adapter_config.json and adapter_model.safetensors as PEFT loads them");
        try {
            const PeftAdapter a = read_peft_adapter(disk);
            report.layers = static_cast<int64_t>(a.modules.size());
            ctx.ran("files", std::to_string(a.modules.size()) + " adapted modules, rank " + std::to_string(a.settings.rank));
            ctx.check("adapter-base", "the adapter's base is the base it was trained on");
            if (a.record.is_object() && a.record.contains("base_fingerprint"))
                ctx.skipped("adapter-base", "needs the base it will be applied to: quantlab-cli doctor " + shown + " --base MODEL");
            else
                ctx.skipped("adapter-base", "the adapter records no base fingerprint (not written by QuantLab)");
        } catch (const UserError& e) {
            ctx.error("files", shown, e.what(), "PEFT fails to load the adapter, or loads wrong numbers",
                      "export the adapter again (quantlab-cli export RUN --as peft)");
            ctx.ran("files");
        }
        return report;
    }
    if (report.layout == "unknown") {
        report.consumer = "-";
        ctx.check("files", "the artifact is a model folder or a GGUF file");
        ctx.error("files", shown, "neither a model folder (config.json, *.safetensors) nor a .gguf file",
                  "no consumer can load it", "point the doctor at an export folder or a .gguf file");
        ctx.ran("files");
        return report;
    }
    report.consumer = report.layout == "compressed-tensors" ? "vLLM (compressed-tensors)"
                      : report.layout == "hf-modelopt"      ? "vLLM / TensorRT-LLM (modelopt)"
                                                            : "transformers";
    const HfFolderView folder = read_hf_folder(disk, shown, report.consumer, ctx);
    check_config_tokenizer(folder, ctx);
    if (report.layout == "compressed-tensors") check_compressed_tensors_folder(folder, ctx);
    else if (report.layout == "hf-modelopt") check_modelopt_folder(folder, ctx);
    return report;
}

}  // namespace ql
