// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for the ONNX reader (plain C++, no LibTorch): any input either parses or
// throws ql::UserError; a parsed model written back reads again into a model that writes the
// same bytes (the writer and the reader agree). Build and run with scripts/fuzz-safetensors.
// Built with -DQL_ONNX_FUZZ_SEED instead, it is a program writing the seed model to argv[1].
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/core/errors.h"
#include "engine/io/onnx_file.h"

#ifndef QL_ONNX_FUZZ_SEED

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ql::OnnxModel m;
    try {
        m = ql::parse_onnx(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    } catch (const ql::UserError&) {
        return 0;
    }
    for (const ql::OnnxTensor& t : m.initializers)
        if (t.numel() < 0 || ql::onnx_raw_bytes(t.type, t.numel()) < 0) std::abort();
    m.opset();
    const std::string once = ql::serialize_onnx(m);
    const std::string twice = ql::serialize_onnx(ql::parse_onnx(once, "fuzz (written back)"));  // no UserError here
    if (once != twice) std::abort();
    return 0;
}

#else

#include <fstream>

// A small model with every field the reader knows: each attribute kind, inline, typed and
// external tensors, symbolic and unknown dimensions.
int main(int argc, char** argv) {
    if (argc != 2) return 2;
    using namespace ql;
    OnnxModel m;
    m.ir_version = 10;
    m.producer_name = "QuantLab";
    m.producer_version = "seed";
    m.opsets = {{"", 21}, {"com.microsoft", 1}};
    m.graph_name = "seed";
    OnnxTensor raw;
    raw.name = "w";
    raw.type = static_cast<int32_t>(OnnxType::Int4);
    raw.dims = {2, 2};
    raw.raw = "\x21\x43";
    OnnxTensor typed;
    typed.name = "typed";
    typed.type = static_cast<int32_t>(OnnxType::Float);
    typed.dims = {2};
    typed.float_data = {0.5f, -1.0f};
    typed.int32_data = {-1, 2};
    typed.int64_data = {3, -4};
    OnnxTensor external;
    external.name = "big";
    external.type = static_cast<int32_t>(OnnxType::Float16);
    external.dims = {64, 64};
    external.external = true;
    external.location = "big.bin";
    external.offset = 4096;
    external.length = 8192;
    m.initializers = {raw, typed, external};
    OnnxAttribute floats;
    floats.name = "floats";
    floats.kind = OnnxAttribute::Floats;
    floats.floats = {1.0f, 2.5f};
    OnnxNode n;
    n.op_type = "DequantizeLinear";
    n.name = "dq";
    n.inputs = {"w", "typed", ""};
    n.outputs = {"y"};
    n.attributes = {OnnxAttribute::of_int("axis", -1), OnnxAttribute::of_float("alpha", 0.25f),
                    OnnxAttribute::of_string("mode", "tanh"), OnnxAttribute::of_tensor("value", typed), floats,
                    OnnxAttribute::of_ints("perm", {1, 0})};
    OnnxNode custom = n;
    custom.domain = "com.microsoft";
    m.nodes = {n, custom};
    m.inputs = {{"x", 1, {-1, 2, -1}, {"batch", "", ""}}};
    m.outputs = {{"y", 1, {}, {}}};
    std::ofstream(argv[1], std::ios::binary) << serialize_onnx(m);
    return 0;
}

#endif
