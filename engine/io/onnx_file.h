// SPDX-License-Identifier: GPL-3.0-or-later
// The subset of the ONNX model file (onnx/onnx.proto, proto2 wire format) that QuantLab writes
// and the Export Doctor reads: ModelProto with one GraphProto of nodes, initializers (inline raw
// bytes or external data), inputs / outputs with tensor types, and attributes of the kinds the
// ONNX QDQ export uses (shared/design/EXPORT_LAYOUTS_2.md section 2.4 lists the field numbers).
// Hand-encoded: Debian 12's libonnx-dev is ONNX 1.12 (opset 17: no INT4, no blocked Q/DQ), and
// linking Debian's libprotobuf beside the PyPI LibTorch (which carries its own) risks two
// protobuf runtimes in one process. Fields outside the subset are skipped when reading and
// keep their bytes nowhere (a reader, not a round-trip editor).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ql {

// onnx.TensorProto.DataType codes.
enum class OnnxType : int32_t {
    Undefined = 0, Float = 1, Uint8 = 2, Int8 = 3, Uint16 = 4, Int16 = 5, Int32 = 6, Int64 = 7, String = 8, Bool = 9,
    Float16 = 10, Double = 11, Uint32 = 12, Uint64 = 13, Bfloat16 = 16, Float8E4M3FN = 17, Float8E4M3FNUZ = 18,
    Float8E5M2 = 19, Float8E5M2FNUZ = 20, Uint4 = 21, Int4 = 22, Float4E2M1 = 23, Float8E8M0 = 24, Uint2 = 25, Int2 = 26
};
// "FLOAT", "INT4", ... ("type 99" for a code outside the enum).
std::string onnx_type_name(int32_t type);
// Storage bits per element (4 for INT4 / UINT4 / FLOAT4E2M1, 2 for INT2 / UINT2), 0 for an
// unknown code or STRING.
int onnx_type_bits(int32_t type);
// Bytes `numel` elements take in raw_data (sub-byte types: packed, rounded up).
int64_t onnx_raw_bytes(int32_t type, int64_t numel);

// A TensorProto: an initializer or an attribute value. Either `raw` holds the bytes (little
// endian, sub-byte types packed two per byte, first element in the low nibble) or, for
// `external`, the bytes lie in `location` at [offset, offset + length).
struct OnnxTensor {
    std::string name;
    int32_t type = 0;             // OnnxType code
    std::vector<int64_t> dims;    // empty: a scalar
    std::string raw;              // raw_data
    // Typed fields some writers use instead of raw_data (read only; QuantLab writes raw_data).
    std::vector<float> float_data;
    std::vector<int32_t> int32_data;
    std::vector<int64_t> int64_data;
    bool external = false;        // data_location EXTERNAL
    std::string location;         // external_data "location" (relative to the model file's folder)
    int64_t offset = 0, length = -1;  // external_data "offset" / "length" (-1: absent = to the end)
    int64_t numel() const;        // product of dims (1 for a scalar)
};

struct OnnxAttribute {
    enum Kind : int32_t { Undefined = 0, Float = 1, Int = 2, String = 3, Tensor = 4, Floats = 6, Ints = 7 };
    std::string name;
    Kind kind = Undefined;
    float f = 0;
    int64_t i = 0;
    std::string s;
    std::vector<OnnxTensor> t;    // one tensor for Kind::Tensor (a vector to keep the type copyable)
    std::vector<float> floats;
    std::vector<int64_t> ints;
    static OnnxAttribute of_int(std::string name, int64_t v);
    static OnnxAttribute of_float(std::string name, float v);
    static OnnxAttribute of_ints(std::string name, std::vector<int64_t> v);
    static OnnxAttribute of_string(std::string name, std::string v);
    static OnnxAttribute of_tensor(std::string name, OnnxTensor v);
};

struct OnnxNode {
    std::string op_type, domain, name;  // domain "" = the default ONNX domain
    std::vector<std::string> inputs, outputs;  // "" = an omitted optional input
    std::vector<OnnxAttribute> attributes;
    const OnnxAttribute* attribute(const std::string& name) const;  // nullptr when absent
};

// A graph input / output: a tensor of elem_type with dims given as a value (>= 0) or a symbolic
// name (dim_params[i] non-empty; dims[i] is then -1). An unknown rank has no dims.
struct OnnxValueInfo {
    std::string name;
    int32_t elem_type = 0;
    std::vector<int64_t> dims;
    std::vector<std::string> dim_params;  // same length as dims
};

struct OnnxOpset {
    std::string domain;  // "" = ai.onnx
    int64_t version = 0;
};

struct OnnxModel {
    int64_t ir_version = 0;
    std::string producer_name, producer_version;
    std::vector<OnnxOpset> opsets;
    std::string graph_name;
    std::vector<OnnxNode> nodes;
    std::vector<OnnxTensor> initializers;
    std::vector<OnnxValueInfo> inputs, outputs;
    int64_t opset(const std::string& domain = "") const;  // 0 when not imported
};

// The wire bytes of `m` (deterministic: fields in field-number order, as protobuf writes them).
// std::length_error when the result would pass protobuf's 2 GiB message limit (put the
// initializers' bytes in external data instead).
std::string serialize_onnx(const OnnxModel& m);

// Parses wire bytes. UserError naming `what` (the file) and the field path ("graph.node[12].
// attribute[0].t.dims: truncated varint") for malformed input: truncated or overlong fields,
// wrong wire types for known fields, lengths past the end, nesting deeper than 64, negative
// dims. Unknown fields are skipped.
OnnxModel parse_onnx(const std::string& bytes, const std::string& what);
// parse_onnx of a file's contents (UserError naming the file when it cannot be read).
OnnxModel read_onnx_file(const std::string& path);

}  // namespace ql
