// SPDX-License-Identifier: GPL-3.0-or-later
// quantlab-cli fakequant: fake-quantize / encode a float32 .npy array. The contract is at the end
// of shared/design/FORMATS.md; scripts rely on it, so options and outputs only ever grow.
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/cli/arg_parser.h"
#include "app/cli/cli_command.h"
#include "engine/core/errors.h"
#include "engine/api/fake_quant_api.h"
#include "engine/core/format_catalog.h"
#include "engine/io/npy_file.h"

namespace ql::cli {
namespace {

const char* kUsage =
    "quantlab-cli fakequant --format NAME --in X.npy --out Y.npy\n"
    "    [--granularity tensor|channel|group] [--group-size N] [--axis A] [--asym]\n"
    "    [--double-quant] [--mx-scale floor|rceil] [--importance I.npy]\n"
    "    [--codes C.npy] [--scales S.npy] [--packed P.npy] [--json]\n\n"
    "X: float32 .npy of any shape. Y: float32, same shape, the fake-quantized values.\n"
    "C: unpacked element codes (uint8; int8 for signed integers). S: decoded scales (float32; for nvfp4\n"
    "the E4M3 block scales without the global scale; for int8_vectorwise / llm_int8 the row absmax,\n"
    "bitsandbytes' row_stats / SCB). P: packed bytes as the export formats store them.\n"
    "I (GGUF formats): float32 [cols] importance per column (an imatrix row), as llama-quantize --imatrix.\n"
    "--json prints the resolved settings, NVFP4's global scale, zero points, LLM.int8()'s outlier columns and the\n"
    "error (MSE, SQNR).\n"
    "Formats: see 'quantlab-cli formats'.";

int run(const std::vector<std::string>& args) {
    ArgParser p("fakequant",
                {"--format", "--in", "--out", "--granularity", "--group-size", "--block", "--axis", "--codes", "--scales",
                 "--packed", "--mx-scale", "--importance"},
                {"--asym", "--double-quant", "--json"});
    p.parse(args);
    if (!p.positional().empty()) throw UserError("fakequant: unexpected argument '" + p.positional()[0] + "'");
    FakeQuantRequest req;
    req.options.format = p.required("--format");
    format_info(req.options.format);  // unknown names fail before any file is read
    const std::string in_path = p.required("--in");
    const std::string out_path = p.required("--out");
    req.options.granularity = p.value("--granularity").value_or("");
    req.options.group_size = p.integer("--group-size", p.integer("--block", 0));
    if (p.has("--group-size") && p.has("--block")) throw UserError("fakequant: give --group-size or --block, not both");
    if (req.options.group_size < 0 || ((p.has("--group-size") || p.has("--block")) && req.options.group_size == 0))
        throw UserError("fakequant: --group-size must be a positive integer");
    req.options.axis = static_cast<int>(p.integer("--axis", 0));
    req.options.asymmetric = p.has("--asym");
    req.options.double_quant = p.has("--double-quant");
    req.options.mx_scale = p.value("--mx-scale").value_or("floor");
    req.want_codes = p.has("--codes");
    req.want_scales = p.has("--scales");
    req.want_packed = p.has("--packed");

    req.input = read_npy(in_path);
    if (req.input.dtype != DType::Float32)
        throw UserError(in_path + ": expected a float32 array, got " + dtype_name(req.input.dtype));
    if (const auto imp = p.value("--importance")) {
        const NdArray a = read_npy(*imp);
        if (a.dtype != DType::Float32) throw UserError(*imp + ": expected a float32 array, got " + dtype_name(a.dtype));
        if (a.shape.size() != 1) throw UserError(*imp + ": expected a 1-D array (one value per column), got " + shape_string(a.shape));
        req.importance.assign(a.as<float>(), a.as<float>() + a.numel());
        req.importance_source = *imp;
    }
    const FakeQuantResult r = run_fake_quant(req);

    nlohmann::json outputs = {{"values", out_path}};
    write_npy(out_path, r.values);
    if (req.want_codes) {
        write_npy(p.required("--codes"), *r.codes);
        outputs["codes"] = p.required("--codes");
    }
    if (req.want_scales) {
        write_npy(p.required("--scales"), *r.scales);
        outputs["scales"] = p.required("--scales");
    }
    if (req.want_packed) {
        write_npy(p.required("--packed"), *r.packed);
        outputs["packed"] = p.required("--packed");
    }
    if (p.has("--json")) {
        const FormatInfo& f = format_info(r.format);
        nlohmann::json j = {{"format", r.format},
                            {"shape", req.input.shape},
                            {"granularity", r.granularity},
                            {"block_size", r.block_size},
                            {"axis", r.axis},
                            {"asymmetric", req.options.asymmetric},
                            {"double_quant", req.options.double_quant},
                            {"mx_scale", f.supports_scale_rule ? nlohmann::json(req.options.mx_scale) : nlohmann::json(nullptr)},
                            {"element_bits", f.element_bits},
                            {"bits_per_element", f.bits_per_element},
                            {"global_scale", r.global_scale ? nlohmann::json(*r.global_scale) : nlohmann::json(nullptr)},
                            {"zero_points", r.zero_points},
                            {"offset", r.offset ? nlohmann::json(*r.offset) : nlohmann::json(nullptr)},
                            {"outlier_columns", f.family == "llm_int8" ? nlohmann::json(r.outlier_columns) : nlohmann::json(nullptr)},
                            {"mse", r.mse},
                            {"sqnr_db", std::isfinite(r.sqnr_db) ? nlohmann::json(r.sqnr_db) : nlohmann::json(nullptr)},
                            {"nonfinite_inputs", r.nonfinite_inputs},
                            {"importance", req.importance.empty() ? nlohmann::json(nullptr) : nlohmann::json(*p.value("--importance"))},
                            {"outputs", outputs}};
        std::printf("%s\n", j.dump(2).c_str());
    }
    return 0;
}

}  // namespace

Command fakequant_command() {
    return Command{"fakequant", kUsage, "fake-quantize or encode a float32 .npy array in any format", run};
}

}  // namespace ql::cli
