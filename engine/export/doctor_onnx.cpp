// SPDX-License-Identifier: GPL-3.0-or-later
// The Export Doctor on an ONNX model (a folder with model.onnx, or a .onnx file): the checks
// ONNX Runtime makes when it loads the file and builds its CPU session, done without it -- the
// protobuf parses, external data lies inside its files, the opset has every operator the graph
// uses, every value is defined before it is used, Q/DQ scales and zero points have the shapes
// and types their operators need, and no operator needs a kernel ORT's CPU EP lacks
// (FLOAT4E2M1; EXPORT_LAYOUTS_2.md 2.2) -- and, with QuantLab's manifest beside the file, that
// every quantized weight decodes to exactly the weight QuantLab evaluated.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "engine/core/errors.h"
#include "engine/export/doctor_context.h"
#include "engine/export/export_manifest.h"
#include "engine/io/onnx_file.h"
#include "engine/io/whole_file.h"
#include "kernels/minifloat.h"

namespace ql {
namespace fs = std::filesystem;
namespace {

constexpr const char* kOrt = "ONNX Runtime";

// The opset each operator of the export (and of common QDQ graphs) first appeared in, as far as
// the check needs it: Attention, RMSNormalization and RotaryEmbedding are opset 23; blocked and
// 4-bit Q/DQ are 21.
const std::map<std::string, int64_t>& first_opset() {
    static const std::map<std::string, int64_t> m = {
        {"Attention", 23}, {"RMSNormalization", 23}, {"RotaryEmbedding", 23}, {"LayerNormalization", 17}, {"Gelu", 20},
        {"QuantizeLinear", 10}, {"DequantizeLinear", 10}, {"MatMul", 1}, {"Gemm", 1}, {"Add", 1}, {"Mul", 1}, {"Div", 1},
        {"Sub", 1}, {"Sigmoid", 1}, {"Gather", 1}, {"Shape", 1}, {"Range", 11}, {"Expand", 8}, {"Unsqueeze", 1},
        {"Reshape", 5}, {"Concat", 1}, {"Identity", 1}, {"Abs", 1}, {"ReduceMax", 1}, {"Max", 1}, {"Softmax", 1},
        {"Transpose", 1}, {"Cast", 1}, {"Where", 9}, {"Equal", 1}, {"Tanh", 1}, {"Erf", 9}, {"Sqrt", 1}, {"Pow", 1},
        {"ReduceMean", 1}, {"Slice", 1}, {"Split", 2}, {"Constant", 1}, {"MatMulInteger", 10}, {"Neg", 1}, {"Squeeze", 1},
        {"Clip", 1}, {"Relu", 1}, {"Softplus", 1}, {"Exp", 1}, {"Log", 1}, {"Min", 1}, {"ReduceSum", 1}, {"Trilu", 14}};
    return m;
}

// Reads initializers' bytes, inline or from external data files, bounds-checked.
class OnnxTensorData {
public:
    OnnxTensorData(std::string folder, std::string shown) : folder_(std::move(folder)), shown_(std::move(shown)) {}
    // UserError naming the tensor and file for data that is absent, outside the folder or too short.
    std::string bytes(const OnnxTensor& t) const {
        const int64_t need = onnx_raw_bytes(t.type, t.numel());
        if (!t.external) {
            if (!t.raw.empty()) {
                if (static_cast<int64_t>(t.raw.size()) != need)
                    throw UserError("raw_data holds " + std::to_string(t.raw.size()) + " bytes; " + onnx_type_name(t.type) + " " +
                                    dims_text(t.dims) + " needs " + std::to_string(need));
                return t.raw;
            }
            if (static_cast<OnnxType>(t.type) == OnnxType::Float && static_cast<int64_t>(t.float_data.size()) == t.numel())
                return std::string(reinterpret_cast<const char*>(t.float_data.data()), t.float_data.size() * 4);
            if (static_cast<OnnxType>(t.type) == OnnxType::Int64 && static_cast<int64_t>(t.int64_data.size()) == t.numel())
                return std::string(reinterpret_cast<const char*>(t.int64_data.data()), t.int64_data.size() * 8);
            if (t.numel() == 0) return {};
            throw UserError("holds no data for " + onnx_type_name(t.type) + " " + dims_text(t.dims));
        }
        const int64_t length = check_bounds(t);
        const fs::path file = fs::path(folder_) / t.location;
        std::ifstream in(file, std::ios::binary);
        std::string b(static_cast<size_t>(length), '\0');
        in.seekg(t.offset);
        if (!in.read(b.data(), length)) throw UserError("external data file " + t.location + ": read failed");
        return b;
    }
    // The external data's bounds (no read); returns its length. Inline data is checked whole.
    int64_t check_bounds(const OnnxTensor& t) const {
        if (!t.external) return static_cast<int64_t>(bytes(t).size());
        if (t.location.empty() || fs::path(t.location).is_absolute() || t.location.find("..") != std::string::npos)
            throw UserError("external data location '" + t.location + "' is not a file name inside the model's folder (" + kOrt +
                            " refuses it)");
        std::error_code ec;
        const auto size = fs::file_size(fs::path(folder_) / t.location, ec);
        if (ec) throw UserError("external data file " + t.location + " cannot be read: " + ec.message());
        const int64_t need = onnx_raw_bytes(t.type, t.numel());
        const int64_t length = t.length >= 0 ? t.length : static_cast<int64_t>(size) - t.offset;
        if (length != need)
            throw UserError("external data length " + std::to_string(length) + " bytes; " + onnx_type_name(t.type) + " " + dims_text(t.dims) +
                            " needs " + std::to_string(need));
        if (t.offset < 0 || length < 0 || t.offset > static_cast<int64_t>(size) || length > static_cast<int64_t>(size) - t.offset)
            throw UserError("external data at offset " + std::to_string(t.offset) + " (" + std::to_string(length) + " bytes) lies past the end of " +
                            t.location + " (" + std::to_string(size) + " bytes)");
        return length;
    }
    static std::string dims_text(const std::vector<int64_t>& d) {
        std::string s = "[";
        for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
        return s + "]";
    }

private:
    std::string folder_, shown_;
};

// Element i of a tensor's raw bytes as a float (the integer and float8 types Q/DQ use).
float element(const std::string& b, int32_t type, int64_t i) {
    const auto* u = reinterpret_cast<const uint8_t*>(b.data());
    switch (static_cast<OnnxType>(type)) {
        case OnnxType::Float: {
            float v;
            std::memcpy(&v, u + i * 4, 4);
            return v;
        }
        case OnnxType::Int8: return static_cast<float>(static_cast<int8_t>(u[i]));
        case OnnxType::Uint8: return static_cast<float>(u[i]);
        case OnnxType::Int4: {
            const int nib = (u[i / 2] >> (4 * (i % 2))) & 0x0F;
            return static_cast<float>(nib >= 8 ? nib - 16 : nib);
        }
        case OnnxType::Uint4: return static_cast<float>((u[i / 2] >> (4 * (i % 2))) & 0x0F);
        case OnnxType::Float8E4M3FN: return kernels::decode_element<kernels::E4M3>(u[i]);
        case OnnxType::Float8E5M2: return kernels::decode_element<kernels::E5M2>(u[i]);
        default: return std::nanf("");
    }
}

bool decodable(int32_t type) {
    const auto o = static_cast<OnnxType>(type);
    return o == OnnxType::Int8 || o == OnnxType::Uint8 || o == OnnxType::Int4 || o == OnnxType::Uint4 || o == OnnxType::Float8E4M3FN ||
           o == OnnxType::Float8E5M2;
}

struct QdqParams {
    int64_t axis = 1, block = 0;
};

// Why scale `s` (and zero point `zp`, may be null) do not fit input dims `x` for Q/DQ, or "".
std::string qdq_shape_problem(const std::vector<int64_t>& x, const OnnxTensor& s, const OnnxTensor* zp, QdqParams p) {
    const int64_t rank = static_cast<int64_t>(x.size());
    if (zp && zp->dims != s.dims)
        return "zero point " + OnnxTensorData::dims_text(zp->dims) + " and scale " + OnnxTensorData::dims_text(s.dims) + " differ in shape";
    if (s.dims.empty() || (s.dims.size() == 1 && s.dims[0] == 1 && p.block == 0)) return "";  // per tensor
    int64_t axis = p.axis < 0 ? p.axis + rank : p.axis;
    if (axis < 0 || axis >= rank) return "axis " + std::to_string(p.axis) + " is outside the input's rank " + std::to_string(rank);
    if (p.block == 0) {
        if (s.dims.size() != 1 || s.dims[0] != x[static_cast<size_t>(axis)])
            return "per-axis scale " + OnnxTensorData::dims_text(s.dims) + " along axis " + std::to_string(axis) + " of " +
                   OnnxTensorData::dims_text(x) + " needs [" + std::to_string(x[static_cast<size_t>(axis)]) + "]";
        return "";
    }
    if (static_cast<int64_t>(s.dims.size()) != rank) return "blocked scale " + OnnxTensorData::dims_text(s.dims) + " needs the input's rank";
    for (int64_t d = 0; d < rank; ++d) {
        const int64_t D = x[static_cast<size_t>(d)], S = s.dims[static_cast<size_t>(d)];
        if (d != axis) {
            if (S != D) return "blocked scale " + OnnxTensorData::dims_text(s.dims) + " differs from the input " + OnnxTensorData::dims_text(x) + " off the axis";
            continue;
        }
        // ONNX: valid iff ceil(D / S) <= B <= ceil(D / (S - 1)) - 1.
        const bool ok = S > 0 && (D + S - 1) / S <= p.block && (S == 1 || p.block <= (D + S - 2) / (S - 1) - 1);
        if (!ok)
            return "block_size " + std::to_string(p.block) + " with " + std::to_string(S) + " scales along an axis of " + std::to_string(D) +
                   " (ONNX needs ceil(D/S) <= block_size <= ceil(D/(S-1)) - 1)";
    }
    return "";
}

}  // namespace

bool is_onnx_artifact(const std::string& path) {
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) return fs::path(path).extension() == ".onnx";
    return fs::is_regular_file(fs::path(path) / "model.onnx", ec);
}

void check_onnx_model(const std::string& disk_path, const std::string& shown, DoctorContext& ctx) {
    std::error_code ec;
    const bool folder = fs::is_directory(disk_path, ec);
    const std::string file = folder ? (fs::path(disk_path) / "model.onnx").string() : disk_path;
    const std::string shown_file = folder ? shown + "/model.onnx" : shown;
    const std::string dir = folder ? disk_path : fs::path(disk_path).parent_path().string();
    ctx.check("files", "model.onnx parses as ONNX Runtime's protobuf reader reads it; external data lies inside its files");
    ctx.check("onnx-opset", "the IR version and opset import cover every operator the graph uses");
    ctx.check("onnx-graph", "every value is defined before it is used; the graph's outputs are produced");
    ctx.check("ort-kernels", "ONNX Runtime's CPU execution provider has a kernel for every Q/DQ type used, and its default QDQ "
                             "fusions keep QuantLab's numbers");
    ctx.check("qdq-shapes", "Q/DQ scales and zero points: shapes (per tensor, per axis, blocked), types and values");
    ctx.check("reproduces-quantlab", "every quantized weight decodes to the weight QuantLab evaluated (quantlab_export.json)");
    const std::string fix = "export it again (quantlab-cli export MODEL --as onnx)";
    OnnxModel m;
    try {
        m = parse_onnx(read_whole_file(file, "ONNX model"), shown_file);
    } catch (const UserError& e) {
        ctx.error("files", shown_file, with_path_shown(e.what(), disk_path, shown), std::string(kOrt) + " fails to load the model", fix);
        ctx.ran("files");
        for (const char* id : {"onnx-opset", "onnx-graph", "ort-kernels", "qdq-shapes", "reproduces-quantlab"}) ctx.skipped(id, "the model does not parse");
        return;
    }
    const OnnxTensorData data(dir, shown);
    std::map<std::string, const OnnxTensor*> inits;
    int64_t external = 0;
    for (const OnnxTensor& t : m.initializers) {
        inits[t.name] = &t;
        try {
            data.check_bounds(t);
            external += t.external;
        } catch (const UserError& e) {
            ctx.error("files", "initializer " + t.name, e.what(), std::string(kOrt) + " fails to load the model", fix);
        }
    }
    ctx.ran("files", std::to_string(m.nodes.size()) + " nodes, " + std::to_string(m.initializers.size()) + " initializers (" +
                         std::to_string(external) + " in external data)");

    // Opset and IR version.
    const int64_t opset = m.opset("");
    if (opset == 0) {
        ctx.error("onnx-opset", "opset_import", "imports no default-domain opset", std::string(kOrt) + " fails to load the model", fix);
    } else {
        if (opset > 25)
            ctx.warning("onnx-opset", "opset_import", "default-domain opset " + std::to_string(opset) + " is newer than ONNX Runtime 1.31 implements (25)",
                        std::string(kOrt) + " may refuse the model", "export with opset 25 or lower");
        std::map<std::string, int64_t> too_new;
        for (const OnnxNode& n : m.nodes) {
            if (!n.domain.empty() && n.domain != "ai.onnx") continue;
            const auto it = first_opset().find(n.op_type);
            if (it != first_opset().end() && it->second > opset) too_new[n.op_type] = it->second;
        }
        for (const auto& [op, v] : too_new)
            ctx.error("onnx-opset", op, "needs opset " + std::to_string(v) + " but the model imports opset " + std::to_string(opset),
                      std::string(kOrt) + " fails to load the model (no such operator in that opset)", fix);
        const int64_t min_ir = opset >= 25 ? 13 : opset >= 24 ? 12 : opset >= 23 ? 11 : opset >= 21 ? 10 : 3;
        if (m.ir_version < min_ir)
            ctx.error("onnx-opset", "ir_version", "IR version " + std::to_string(m.ir_version) + " is older than opset " + std::to_string(opset) +
                                                      " needs (" + std::to_string(min_ir) + ")",
                      std::string(kOrt) + " fails to load the model", fix);
    }
    for (const OnnxOpset& o : m.opsets)
        if (!o.domain.empty() && o.domain != "ai.onnx" && o.domain != "com.microsoft")
            ctx.warning("onnx-opset", "opset_import " + o.domain, "a custom operator domain", std::string(kOrt) + " needs its custom-op library",
                        "register the library with the session, or export without custom operators");
    ctx.ran("onnx-opset", "IR " + std::to_string(m.ir_version) + ", opset " + std::to_string(opset));

    // Values defined before use.
    std::set<std::string> defined;
    for (const OnnxValueInfo& v : m.inputs) defined.insert(v.name);
    for (const OnnxTensor& t : m.initializers) defined.insert(t.name);
    int64_t undefined = 0;
    for (size_t i = 0; i < m.nodes.size(); ++i) {
        const OnnxNode& n = m.nodes[i];
        for (const std::string& in : n.inputs)
            if (!in.empty() && !defined.count(in) && ++undefined <= 8)
                ctx.error("onnx-graph", "node " + n.name + " (" + n.op_type + ")", "reads " + in + ", which no earlier node, input or initializer defines",
                          std::string(kOrt) + " fails to load the model", fix);
        for (const std::string& out : n.outputs)
            if (!out.empty() && !defined.insert(out).second)
                ctx.error("onnx-graph", "node " + n.name + " (" + n.op_type + ")", "writes " + out + ", which is already defined",
                          std::string(kOrt) + " fails to load the model", fix);
    }
    for (const OnnxValueInfo& v : m.outputs)
        if (!defined.count(v.name))
            ctx.error("onnx-graph", "output " + v.name, "no node produces it", std::string(kOrt) + " fails to load the model", fix);
    ctx.ran("onnx-graph", std::to_string(m.inputs.size()) + " input(s), " + std::to_string(m.outputs.size()) + " output(s)");

    // Q/DQ: types, kernels, shapes, values; and the weights' decoding.
    std::map<std::string, const OnnxNode*> dq_of;  // weight initializer -> its DequantizeLinear
    int64_t qdq = 0;
    for (const OnnxNode& n : m.nodes) {
        const bool dq = n.op_type == "DequantizeLinear", qn = n.op_type == "QuantizeLinear";
        if (!dq && !qn) continue;
        ++qdq;
        const std::string where = "node " + n.name + " (" + n.op_type + ")";
        if (n.inputs.size() < 2) {
            ctx.error("qdq-shapes", where, "has no scale input", std::string(kOrt) + " fails to load the model", fix);
            continue;
        }
        const OnnxTensor* x = dq && inits.count(n.inputs[0]) ? inits[n.inputs[0]] : nullptr;
        const OnnxTensor* s = inits.count(n.inputs[1]) ? inits[n.inputs[1]] : nullptr;
        const OnnxTensor* zp = n.inputs.size() > 2 && !n.inputs[2].empty() && inits.count(n.inputs[2]) ? inits[n.inputs[2]] : nullptr;
        int32_t q_type = x ? x->type : zp ? zp->type : 0;
        if (const OnnxAttribute* a = n.attribute("output_dtype"); qn && a && a->i) q_type = static_cast<int32_t>(a->i);
        if (q_type == static_cast<int32_t>(OnnxType::Float4E2M1))
            ctx.error("ort-kernels", where, "FLOAT4E2M1 " + std::string(dq ? "Dequantize" : "Quantize") + "Linear",
                      std::string(kOrt) + "'s CPU execution provider has no kernel for it (NOT_IMPLEMENTED; TensorRT runs it)",
                      "deploy the NVFP4 model with TensorRT, or export INT4 / FP8 for ONNX Runtime");
        if (x) dq_of[x->name] = &n;
        if (zp && q_type && zp->type != q_type)
            ctx.error("qdq-shapes", where, "zero point type " + onnx_type_name(zp->type) + " differs from the quantized type " + onnx_type_name(q_type),
                      std::string(kOrt) + " fails to load the model (type constraint T2)", fix);
        if (!s) continue;  // a scale computed in the graph (dynamic): checked at run time
        if (static_cast<OnnxType>(s->type) != OnnxType::Float && static_cast<OnnxType>(s->type) != OnnxType::Float16 &&
            static_cast<OnnxType>(s->type) != OnnxType::Bfloat16)
            ctx.error("qdq-shapes", where, "scale type " + onnx_type_name(s->type) + " (float, float16 or bfloat16 expected)",
                      std::string(kOrt) + " fails to load the model", fix);
        QdqParams p;
        if (const OnnxAttribute* a = n.attribute("axis")) p.axis = a->i;
        if (const OnnxAttribute* a = n.attribute("block_size")) p.block = a->i;
        if (x) {
            const std::string why = qdq_shape_problem(x->dims, *s, zp, p);
            if (!why.empty()) ctx.error("qdq-shapes", where, why, std::string(kOrt) + " fails to load or run the model", fix);
        }
        if (static_cast<OnnxType>(s->type) == OnnxType::Float) {
            try {
                const std::string b = data.bytes(*s);
                int64_t bad = 0;
                float first = 0;
                for (int64_t i = 0; i < s->numel(); ++i) {
                    const float v = element(b, s->type, i);
                    if (!(v > 0) || !std::isfinite(v)) first = bad++ ? first : v;
                }
                if (bad)
                    ctx.error("qdq-shapes", "initializer " + s->name,
                              std::to_string(bad) + " scale(s) not positive and finite (first " + std::to_string(first) + ")",
                              std::string(kOrt) + " computes NaN or Inf through them", fix);
            } catch (const UserError&) {
                // reported by "files"
            }
        }
    }
    // ONNX Runtime's default session (ORT_ENABLE_ALL) fuses Q/DQ around MatMul into integer
    // kernels (onnx_runtime_peer.py measures both on the golden and the real models).
    int64_t fp8_inputs = 0, int8_inputs = 0, wide_int8_weights = 0;
    for (const OnnxNode& n : m.nodes) {
        if (n.op_type != "QuantizeLinear" && n.op_type != "DequantizeLinear") continue;
        const OnnxTensor* zp = n.inputs.size() > 2 && inits.count(n.inputs[2]) ? inits[n.inputs[2]] : nullptr;
        const OnnxTensor* x = n.op_type == "DequantizeLinear" && inits.count(n.inputs[0]) ? inits[n.inputs[0]] : nullptr;
        if (n.op_type == "QuantizeLinear" && zp) {
            const auto t = static_cast<OnnxType>(zp->type);
            fp8_inputs += t == OnnxType::Float8E4M3FN || t == OnnxType::Float8E5M2;
            int8_inputs += t == OnnxType::Int8;
        }
        if (x && static_cast<OnnxType>(x->type) == OnnxType::Int8) {
            try {
                const std::string b = data.bytes(*x);
                // u8 x s8 pairs summed in 16 bits: 2 * 255 * 63 fits, 2 * 255 * 127 does not.
                wide_int8_weights += std::any_of(b.begin(), b.end(), [](char c) { return static_cast<int8_t>(c) < -64 || static_cast<int8_t>(c) > 63; });
            } catch (const UserError&) {
                // reported by "files"
            }
        }
    }
    if (fp8_inputs)
        ctx.warning("ort-kernels", std::to_string(fp8_inputs) + " FLOAT8 QuantizeLinear node(s)",
                    "ONNX Runtime 1.31's QDQ fusion (ORT_ENABLE_EXTENDED and ORT_ENABLE_ALL, its default) turns FP8 Q/DQ around "
                    "MatMul into MatMulIntegerToFloat, which rejects float8",
                    "ONNX Runtime's default session fails to build (INVALID_GRAPH); TensorRT runs the model",
                    "run ONNX Runtime with session config session.disable_quant_qdq=1 (or ORT_ENABLE_BASIC), or deploy with TensorRT");
    if (int8_inputs && wide_int8_weights)
        ctx.warning("ort-kernels", std::to_string(wide_int8_weights) + " INT8 weight(s) with codes outside [-64, 63]",
                    "ONNX Runtime's default session fuses INT8 Q/DQ + MatMul into integer kernels, which on x86 CPUs without VNNI "
                    "(AVX2) sum u8 x s8 pairs in 16 bits: full 8-bit weights saturate",
                    "ONNX Runtime computes other numbers than QuantLab evaluated on such CPUs (its own quantizer uses 7-bit "
                    "weights there: reduce_range)",
                    "run ONNX Runtime with session config session.disable_quant_qdq=1 (QDQ kept in float), or on a CPU with VNNI");
    ctx.ran("ort-kernels", std::to_string(qdq) + " Q/DQ nodes");
    ctx.ran("qdq-shapes", std::to_string(qdq) + " Q/DQ nodes");

    // The weights against QuantLab's manifest.
    const fs::path manifest_path = fs::path(dir) / kExportManifestFile;
    if (!fs::is_regular_file(manifest_path, ec)) {
        ctx.skipped("reproduces-quantlab", std::string("no ") + kExportManifestFile + " beside the model (not written by QuantLab)");
        return;
    }
    ExportManifest manifest;
    try {
        manifest = parse_export_manifest(read_whole_file(manifest_path.string(), "export manifest"), shown + "/" + kExportManifestFile);
    } catch (const UserError& e) {
        ctx.error("reproduces-quantlab", kExportManifestFile, with_path_shown(e.what(), disk_path, shown), "the weights cannot be checked",
                  fix);
        ctx.ran("reproduces-quantlab");
        return;
    }
    int64_t checked = 0;
    for (const auto& [layer, ml] : manifest.layers) {
        const std::string wname = layer + ".weight_quantized";
        const auto it = dq_of.find(wname);
        if (it == dq_of.end()) {
            ctx.error("reproduces-quantlab", layer, "the manifest lists it but the graph has no DequantizeLinear of " + wname,
                      "the model computes with other weights than QuantLab evaluated", fix);
            continue;
        }
        const OnnxNode& n = *it->second;
        const OnnxTensor& w = *inits[wname];
        const OnnxTensor& s = *inits.at(n.inputs[1]);
        const OnnxTensor* zp = n.inputs.size() > 2 && inits.count(n.inputs[2]) ? inits[n.inputs[2]] : nullptr;
        if (w.dims.size() != 2 || !decodable(w.type)) {
            ctx.error("reproduces-quantlab", layer, "weight " + onnx_type_name(w.type) + " " + OnnxTensorData::dims_text(w.dims) +
                                                        " is not a 2-D INT4/UINT4/INT8/UINT8/FLOAT8 matrix",
                      "the weights cannot be checked", fix);
            continue;
        }
        try {
            const std::string wb = data.bytes(w), sb = data.bytes(s), zb = zp ? data.bytes(*zp) : std::string();
            const int64_t in = w.dims[0], out = w.dims[1];
            QdqParams p;
            if (const OnnxAttribute* a = n.attribute("axis")) p.axis = a->i < 0 ? a->i + 2 : a->i;
            if (const OnnxAttribute* a = n.attribute("block_size")) p.block = a->i;
            if (const std::string why = qdq_shape_problem(w.dims, s, zp, p); !why.empty()) throw UserError(why);
            std::vector<float> y(static_cast<size_t>(in * out));  // [out, in], as QuantLab digests it
            for (int64_t k = 0; k < in; ++k)
                for (int64_t o = 0; o < out; ++o) {
                    int64_t si = 0;
                    if (s.numel() > 1) si = p.block == 0 ? (p.axis == 1 ? o : k) : (p.axis == 0 ? (k / p.block) * out + o : k * s.dims[1] + o / p.block);
                    const float q = element(wb, w.type, k * out + o);
                    const float z = zp ? element(zb, zp->type, si) : 0.0f;
                    y[static_cast<size_t>(o * in + k)] = (q - z) * element(sb, s.type, si);
                }
            if (weight_digest(y.data(), static_cast<int64_t>(y.size())) != ml.weight_sha256)
                ctx.error("reproduces-quantlab", layer, "the DequantizeLinear of its weight gives other values than the weight QuantLab evaluated (" +
                                                            ml.format + ")",
                          std::string(kOrt) + " computes with other weights: the model's accuracy is not the one measured", fix);
            ++checked;
        } catch (const UserError& e) {
            ctx.error("reproduces-quantlab", layer, e.what(), "the weights cannot be checked", fix);
        }
    }
    ctx.report().layers = checked;
    ctx.ran("reproduces-quantlab", std::to_string(checked) + " of " + std::to_string(manifest.layers.size()) + " quantized weights decoded");
}

}  // namespace ql
