// SPDX-License-Identifier: GPL-3.0-or-later
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/core/errors.h"
#include "engine/io/onnx_file.h"
#include "tests/engine/user_error_text.h"

namespace ql {
namespace {

// ---- protobuf wire bytes, written out by hand for the parser's inputs ----

std::string varint(uint64_t v) {
    std::string s;
    for (; v >= 0x80; v >>= 7) s += static_cast<char>((v & 0x7F) | 0x80);
    return s + static_cast<char>(v);
}
std::string tag(uint32_t field, int wire) { return varint((uint64_t{field} << 3) | static_cast<uint64_t>(wire)); }
std::string vfield(uint32_t field, int64_t v) { return tag(field, 0) + varint(static_cast<uint64_t>(v)); }
std::string lfield(uint32_t field, const std::string& payload) { return tag(field, 2) + varint(payload.size()) + payload; }
std::string le32(uint32_t u) {
    std::string s;
    for (int k = 0; k < 4; ++k) s += static_cast<char>((u >> (8 * k)) & 0xFF);
    return s;
}
std::string le32f(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return le32(u);
}
std::string ffield(uint32_t field, float f) { return tag(field, 5) + le32f(f); }

std::string hex(const std::string& bytes) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (unsigned char c : bytes) {
        if (!s.empty()) s += ' ';
        s += digits[c >> 4];
        s += digits[c & 15];
    }
    return s;
}
std::string unhex(const std::string& text) {
    std::string s;
    for (size_t k = 0; k < text.size();) {
        if (text[k] == ' ') {
            ++k;
            continue;
        }
        s += static_cast<char>(std::stoi(text.substr(k, 2), nullptr, 16));
        k += 2;
    }
    return s;
}

// A model whose graph holds `graph` (GraphProto bytes).
std::string with_graph(const std::string& graph) { return vfield(1, 10) + lfield(7, graph); }
std::string with_node(const std::string& node) { return with_graph(lfield(1, node)); }
std::string with_attribute(const std::string& attribute) { return with_node(lfield(4, "Op") + lfield(5, attribute)); }
std::string with_initializer(const std::string& tensor) { return with_graph(lfield(5, tensor)); }

std::string parse_error(const std::string& bytes) {
    return test::user_error_text([&] { parse_onnx(bytes, "m.onnx"); });
}

// ---- field-by-field comparison (the header's structs have no operator==) ----

void expect_same(const OnnxTensor& a, const OnnxTensor& b) {
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.type, b.type);
    EXPECT_EQ(a.dims, b.dims);
    EXPECT_EQ(a.raw, b.raw);
    EXPECT_EQ(a.float_data, b.float_data);
    EXPECT_EQ(a.int32_data, b.int32_data);
    EXPECT_EQ(a.int64_data, b.int64_data);
    EXPECT_EQ(a.external, b.external);
    EXPECT_EQ(a.location, b.location);
    EXPECT_EQ(a.offset, b.offset);
    EXPECT_EQ(a.length, b.length);
}
void expect_same(const OnnxAttribute& a, const OnnxAttribute& b) {
    SCOPED_TRACE("attribute " + a.name);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.f, b.f);
    EXPECT_EQ(a.i, b.i);
    EXPECT_EQ(a.s, b.s);
    ASSERT_EQ(a.t.size(), b.t.size());
    for (size_t k = 0; k < a.t.size(); ++k) expect_same(a.t[k], b.t[k]);
    EXPECT_EQ(a.floats, b.floats);
    EXPECT_EQ(a.ints, b.ints);
}
void expect_same(const OnnxValueInfo& a, const OnnxValueInfo& b) {
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.elem_type, b.elem_type);
    EXPECT_EQ(a.dims, b.dims);
    EXPECT_EQ(a.dim_params, b.dim_params);
}
void expect_same(const OnnxModel& a, const OnnxModel& b) {
    EXPECT_EQ(a.ir_version, b.ir_version);
    EXPECT_EQ(a.producer_name, b.producer_name);
    EXPECT_EQ(a.producer_version, b.producer_version);
    ASSERT_EQ(a.opsets.size(), b.opsets.size());
    for (size_t k = 0; k < a.opsets.size(); ++k) {
        EXPECT_EQ(a.opsets[k].domain, b.opsets[k].domain);
        EXPECT_EQ(a.opsets[k].version, b.opsets[k].version);
    }
    EXPECT_EQ(a.graph_name, b.graph_name);
    ASSERT_EQ(a.nodes.size(), b.nodes.size());
    for (size_t k = 0; k < a.nodes.size(); ++k) {
        const OnnxNode& x = a.nodes[k];
        const OnnxNode& y = b.nodes[k];
        EXPECT_EQ(x.op_type, y.op_type);
        EXPECT_EQ(x.domain, y.domain);
        EXPECT_EQ(x.name, y.name);
        EXPECT_EQ(x.inputs, y.inputs);
        EXPECT_EQ(x.outputs, y.outputs);
        ASSERT_EQ(x.attributes.size(), y.attributes.size());
        for (size_t j = 0; j < x.attributes.size(); ++j) expect_same(x.attributes[j], y.attributes[j]);
    }
    ASSERT_EQ(a.initializers.size(), b.initializers.size());
    for (size_t k = 0; k < a.initializers.size(); ++k) expect_same(a.initializers[k], b.initializers[k]);
    ASSERT_EQ(a.inputs.size(), b.inputs.size());
    for (size_t k = 0; k < a.inputs.size(); ++k) expect_same(a.inputs[k], b.inputs[k]);
    ASSERT_EQ(a.outputs.size(), b.outputs.size());
    for (size_t k = 0; k < a.outputs.size(); ++k) expect_same(a.outputs[k], b.outputs[k]);
}

// The model of the exact-bytes test: Transpose(x) with perm [1, 0], an inline initializer and an
// external one, a symbolic input dimension and an output of unknown rank.
OnnxModel tiny_model() {
    OnnxModel m;
    m.ir_version = 10;
    m.producer_name = "ql";
    m.opsets = {{"", 21}};
    m.graph_name = "g";
    OnnxNode n;
    n.op_type = "Transpose";
    n.inputs = {"x"};
    n.outputs = {"y"};
    n.attributes = {OnnxAttribute::of_ints("perm", {1, 0})};
    m.nodes = {n};
    OnnxTensor w;
    w.name = "w";
    w.type = static_cast<int32_t>(OnnxType::Uint8);
    w.dims = {2};
    w.raw = std::string("\x01\x02", 2);
    OnnxTensor e;
    e.name = "e";
    e.type = static_cast<int32_t>(OnnxType::Int8);
    e.dims = {3};
    e.external = true;
    e.location = "d";
    e.offset = 0;
    e.length = 3;
    m.initializers = {w, e};
    m.inputs = {{"x", static_cast<int32_t>(OnnxType::Float), {2, -1}, {"", "N"}}};
    m.outputs = {{"y", static_cast<int32_t>(OnnxType::Float), {}, {}}};
    return m;
}

TEST(OnnxFile, WritesTheBytesProtobufWrites) {
    // Worked out by hand from onnx.proto, fields in field-number order; python's protobuf
    // serializes the same message to the same bytes.
    const std::string expected = unhex(
        "08 0a"                                 // ir_version 10
        "12 02 71 6c"                           // producer_name "ql"
        "3a 87 01"                              // graph (135 bytes)
        "  0a 20"                               //   node (32)
        "    0a 01 78  12 01 79"                //     input "x", output "y"
        "    22 09 54 72 61 6e 73 70 6f 73 65"  //     op_type "Transpose"
        "    2a 0d"                             //     attribute (13)
        "      0a 04 70 65 72 6d"               //       name "perm"
        "      40 01  40 00"                    //       ints 1, ints 0 (not packed)
        "      a0 01 07"                        //       type INTS
        "  12 01 67"                            //   name "g"
        "  2a 0b"                               //   initializer (11)
        "    08 02  10 02  42 01 77"            //     dims 2, data_type UINT8, name "w"
        "    4a 02 01 02"                       //     raw_data
        "  2a 32"                               //   initializer (50)
        "    08 03  10 03  42 01 65"            //     dims 3, data_type INT8, name "e"
        "    6a 0d 0a 08 6c 6f 63 61 74 69 6f 6e 12 01 64"  // external_data location "d"
        "    6a 0b 0a 06 6f 66 66 73 65 74 12 01 30"        // external_data offset "0"
        "    6a 0b 0a 06 6c 65 6e 67 74 68 12 01 33"        // external_data length "3"
        "    70 01"                             //     data_location EXTERNAL
        "  5a 14"                               //   input (20)
        "    0a 01 78"                          //     name "x"
        "    12 0f 0a 0d"                       //     type, tensor_type
        "      08 01"                           //       elem_type FLOAT
        "      12 09 0a 02 08 02 0a 03 12 01 4e"  //     shape: dim_value 2, dim_param "N"
        "  62 09"                               //   output (9)
        "    0a 01 79  12 04 0a 02 08 01"       //     name "y", type FLOAT, no shape
        "42 02 10 15");                         // opset_import version 21
    const std::string bytes = serialize_onnx(tiny_model());
    EXPECT_EQ(hex(bytes), hex(expected));
    expect_same(parse_onnx(bytes, "tiny.onnx"), tiny_model());
    EXPECT_EQ(serialize_onnx(parse_onnx(bytes, "tiny.onnx")), bytes);
}

TEST(OnnxFile, RoundTripsEveryAttributeKindAndField) {
    OnnxModel m;
    m.ir_version = 11;
    m.producer_name = "QuantLab";
    m.producer_version = "0.1";
    m.opsets = {{"", 23}, {"com.microsoft", 1}};
    m.graph_name = "main";
    OnnxTensor scale;
    scale.type = static_cast<int32_t>(OnnxType::Float);
    scale.float_data = {0.5f, -2.25f};
    scale.dims = {2};
    OnnxTensor typed;
    typed.name = "typed";
    typed.type = static_cast<int32_t>(OnnxType::Int64);
    typed.dims = {1, 3};
    typed.int64_data = {-1, 0, std::numeric_limits<int64_t>::max()};
    typed.int32_data = {-7, 8};
    OnnxNode n;
    n.op_type = "DequantizeLinear";
    n.domain = "com.microsoft";
    n.name = "dq0";
    n.inputs = {"w", "s", ""};  // an omitted optional input stays
    n.outputs = {"y"};
    OnnxAttribute floats;
    floats.name = "floats";
    floats.kind = OnnxAttribute::Floats;
    floats.floats = {1.5f, -0.0f, 3e38f};
    n.attributes = {OnnxAttribute::of_int("axis", -1),
                    OnnxAttribute::of_float("alpha", 0.125f),
                    OnnxAttribute::of_string("mode", std::string("bytes\0and more", 14)),
                    OnnxAttribute::of_tensor("value", scale),
                    floats,
                    OnnxAttribute::of_ints("perm", {3, -2, 0, std::numeric_limits<int64_t>::min()})};
    OnnxNode empty;  // no inputs, no attributes
    empty.op_type = "Constant";
    m.nodes = {n, empty};
    OnnxTensor w;
    w.name = "w";
    w.type = static_cast<int32_t>(OnnxType::Int4);
    w.dims = {3, 2};
    w.raw = std::string("\x21\x43\x65", 3);
    OnnxTensor ext;
    ext.name = "big";
    ext.type = static_cast<int32_t>(OnnxType::Float16);
    ext.dims = {4096, 4096};
    ext.external = true;
    ext.location = "weights/big.bin";
    ext.offset = 4096;  // length absent: to the end of the file
    OnnxTensor scalar;
    scalar.name = "s";
    scalar.type = static_cast<int32_t>(OnnxType::Float);
    scalar.raw = le32f(0.25f);
    m.initializers = {w, ext, scalar, typed};
    m.inputs = {{"x", 1, {-1, 16, -1}, {"batch", "", ""}}, {"unranked", 10, {}, {}}};
    m.outputs = {{"y", 1, {0}, {""}}};

    const std::string bytes = serialize_onnx(m);
    const OnnxModel back = parse_onnx(bytes, "all.onnx");
    expect_same(back, m);
    EXPECT_EQ(serialize_onnx(back), bytes);  // deterministic
    EXPECT_EQ(back.nodes[0].attribute("perm")->ints.back(), std::numeric_limits<int64_t>::min());
    EXPECT_EQ(back.nodes[0].attribute("nope"), nullptr);
    EXPECT_EQ(back.opset(), 23);
    EXPECT_EQ(back.opset("ai.onnx"), 23);
    EXPECT_EQ(back.opset("com.microsoft"), 1);
    EXPECT_EQ(back.opset("ai.onnx.ml"), 0);
    EXPECT_EQ(back.initializers[1].numel(), 4096 * 4096);
    EXPECT_EQ(back.initializers[2].numel(), 1);
}

TEST(OnnxFile, PackedAndUnpackedRepeatedFieldsBothParse) {
    // dims packed, float_data unpacked, int32_data / int64_data either way; attribute ints and
    // floats packed (protobuf writes them unpacked, a proto3 writer packs them).
    const std::string tensor = lfield(1, varint(2) + varint(3)) + vfield(2, 1) + ffield(4, 1.0f) + ffield(4, -2.0f) +
                               vfield(5, -3) + lfield(5, varint(4)) + lfield(7, varint(5) + varint(6)) + vfield(7, 7) +
                               lfield(8, "t");
    const std::string attribute = lfield(1, "a") + lfield(8, varint(1) + varint(static_cast<uint64_t>(-1))) + vfield(8, 9) +
                                  lfield(7, le32f(0.5f) + le32f(4.0f)) + ffield(7, 8.0f) + vfield(20, 7);
    const OnnxModel m = parse_onnx(with_graph(lfield(1, lfield(4, "Op") + lfield(5, attribute)) + lfield(5, tensor)), "p.onnx");
    const OnnxTensor& t = m.initializers.at(0);
    EXPECT_EQ(t.dims, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(t.float_data, (std::vector<float>{1.0f, -2.0f}));
    EXPECT_EQ(t.int32_data, (std::vector<int32_t>{-3, 4}));
    EXPECT_EQ(t.int64_data, (std::vector<int64_t>{5, 6, 7}));
    const OnnxAttribute& a = m.nodes.at(0).attributes.at(0);
    EXPECT_EQ(a.ints, (std::vector<int64_t>{1, -1, 9}));
    EXPECT_EQ(a.floats, (std::vector<float>{0.5f, 4.0f, 8.0f}));
    EXPECT_EQ(a.kind, OnnxAttribute::Ints);

    // The writer packs exactly the fields onnx.proto declares [packed = true].
    OnnxModel w;
    OnnxTensor typed;
    typed.dims = {2};
    typed.type = 1;
    typed.float_data = {1.0f, 2.0f};
    w.initializers = {typed};
    EXPECT_NE(serialize_onnx(w).find(lfield(4, le32f(1.0f) + le32f(2.0f))), std::string::npos);
}

TEST(OnnxFile, SkipsUnknownFieldsOfEveryWireType) {
    const std::string unknown = vfield(99, 5) + tag(98, 1) + std::string(8, 'x') + lfield(97, "skipped") + tag(96, 5) + "abcd";
    const std::string tensor = unknown + vfield(1, 4) + vfield(2, 1) + lfield(12, "doc_string") + lfield(8, "w") + unknown;
    const std::string node = lfield(4, "Relu") + lfield(6, "doc") + unknown + lfield(1, "x");
    const std::string graph = lfield(1, node) + lfield(5, tensor) + lfield(13, lfield(1, "shape of an intermediate")) +
                              lfield(15, "sparse") + unknown;
    const OnnxModel m = parse_onnx(unknown + vfield(1, 9) + lfield(7, graph) + lfield(14, "metadata") + unknown, "u.onnx");
    EXPECT_EQ(m.ir_version, 9);
    ASSERT_EQ(m.nodes.size(), 1u);
    EXPECT_EQ(m.nodes[0].op_type, "Relu");
    EXPECT_EQ(m.nodes[0].inputs, std::vector<std::string>{"x"});
    ASSERT_EQ(m.initializers.size(), 1u);
    EXPECT_EQ(m.initializers[0].name, "w");
    EXPECT_EQ(m.initializers[0].dims, std::vector<int64_t>{4});
}

TEST(OnnxFile, ReadsWhatOtherWritersPutDifferently) {
    // An attribute without the type field (IR version 1) takes its kind from the field set;
    // dim_value / dim_param are a oneof, the last one wins; an empty Dimension is unknown.
    const std::string dims = lfield(1, vfield(1, 3)) + lfield(1, vfield(1, 4) + lfield(2, "n")) + lfield(1, "");
    const std::string input = lfield(1, "x") + lfield(2, lfield(1, vfield(1, 1) + lfield(2, dims)));
    const OnnxModel m = parse_onnx(with_graph(lfield(1, lfield(5, lfield(1, "k") + vfield(3, 5))) + lfield(11, input)), "o.onnx");
    EXPECT_EQ(m.nodes.at(0).attributes.at(0).kind, OnnxAttribute::Int);
    EXPECT_EQ(m.nodes.at(0).attributes.at(0).i, 5);
    EXPECT_EQ(m.inputs.at(0).dims, (std::vector<int64_t>{3, -1, -1}));
    EXPECT_EQ(m.inputs.at(0).dim_params, (std::vector<std::string>{"", "n", ""}));
    // An attribute kind outside the subset (GRAPH = 5) keeps its code.
    const OnnxModel g = parse_onnx(with_attribute(lfield(1, "then_branch") + lfield(6, "graph bytes") + vfield(20, 5)), "g.onnx");
    EXPECT_EQ(static_cast<int>(g.nodes.at(0).attributes.at(0).kind), 5);
    // external_data keys other than location / offset / length are skipped.
    const std::string entry = lfield(1, "checksum") + lfield(2, "not a number");
    const OnnxModel e = parse_onnx(with_initializer(lfield(13, entry) + lfield(13, lfield(1, "location") + lfield(2, "f")) +
                                                    vfield(14, 1)), "e.onnx");
    EXPECT_TRUE(e.initializers.at(0).external);
    EXPECT_EQ(e.initializers.at(0).location, "f");
    EXPECT_EQ(e.initializers.at(0).offset, 0);
    EXPECT_EQ(e.initializers.at(0).length, -1);
    // An empty file is an empty model (every field of a protobuf message is optional).
    EXPECT_EQ(parse_onnx("", "empty.onnx").nodes.size(), 0u);
}

TEST(OnnxFile, MalformedInputsGiveErrorsNamingTheFileAndFieldPath) {
    struct Bad {
        std::string bytes;
        std::string expect;  // part of the message
    };
    const std::string eleven_bytes = std::string(10, '\xff') + '\x01';
    const std::vector<Bad> cases = {
        // varints
        {"\x08", "m.onnx: ir_version: truncated varint"},
        {"\x08" + eleven_bytes, "m.onnx: ir_version: varint longer than 10 bytes"},
        {"\x88", "m.onnx: truncated field tag"},
        {std::string("\x08\x01\x00", 3), "m.onnx: field number 0 is out of range"},
        {with_attribute(lfield(1, "perm") + vfield(8, 1) + tag(8, 0)), "m.onnx: graph.node[0].attribute[0].ints: truncated varint"},
        {with_attribute(lfield(8, varint(1) + "\x80")), "graph.node[0].attribute[0].ints: truncated varint"},
        {with_attribute(lfield(8, eleven_bytes)), "graph.node[0].attribute[0].ints: varint longer than 10 bytes"},
        {with_node(lfield(1, "x") + lfield(1, "y") + lfield(5, lfield(1, "a")) + lfield(5, lfield(5, vfield(1, 2) + tag(2, 0)))),
         "graph.node[0].attribute[1].t.data_type: truncated varint"},
        // fixed-size values
        {with_attribute(tag(2, 5) + "ab"), "graph.node[0].attribute[0].f: truncated fixed32"},
        {with_graph(tag(99, 1) + "abc"), "graph.(field 99): truncated fixed64"},
        {with_attribute(lfield(7, "abcde")), "graph.node[0].attribute[0].floats: packed length 5 is not a multiple of 4"},
        // lengths past their parent
        {"\x12\x05" "ab", "m.onnx: producer_name: length 5 runs past the end of the model, 2 bytes left"},
        {with_graph(lfield(1, lfield(4, "Add")) + lfield(1, tag(3, 2) + varint(9) + "ab")),
         "graph.node[1].name: length 9 runs past the end of graph.node[1], 2 bytes left"},
        {with_graph(tag(2, 2) + eleven_bytes), "graph.name: length longer than 10 bytes"},
        {with_graph(tag(1, 2)), "graph.node: truncated length"},
        {vfield(1, 10) + tag(7, 2) + varint(uint64_t{1} << 40), "graph: length 1099511627776 runs past the end of the model"},
        // wire types
        {lfield(1, "x"), "m.onnx: ir_version: wire type 2 (length-delimited) where the field is varint"},
        {with_initializer(ffield(2, 1.0f)), "graph.initializer[0].data_type: wire type 5 (fixed32) where the field is varint"},
        {with_attribute(vfield(2, 1)), "graph.node[0].attribute[0].f: wire type 0 (varint) where the field is fixed32"},
        {with_attribute(vfield(7, 1)), "graph.node[0].attribute[0].floats: wire type 0 (varint) where the field is fixed32"},
        {with_graph(vfield(1, 1)), "graph.node: wire type 0 (varint) where the field is length-delimited"},
        {tag(1, 3), "m.onnx: ir_version: wire type 3 (group) is not used by ONNX"},
        {with_node(tag(99, 4)), "graph.node[0].(field 99): wire type 4 (group) is not used by ONNX"},
        {tag(1, 6), "m.onnx: ir_version: invalid wire type 6"},
        {with_graph(tag(50, 7)), "graph.(field 50): invalid wire type 7"},
        // tensor contents
        {with_initializer(vfield(1, 2) + vfield(1, -3)), "m.onnx: graph.initializer[0].dims: negative dimension -3"},
        {with_initializer(lfield(1, varint(2) + varint(static_cast<uint64_t>(-1)))), "graph.initializer[0].dims: negative dimension -1"},
        {with_initializer(vfield(1, int64_t{1} << 32) + vfield(1, int64_t{1} << 31)),
         "graph.initializer[0].dims: the product of the dimensions overflows int64"},
        {with_attribute(lfield(5, vfield(1, int64_t{1} << 62) + vfield(1, 4))),
         "graph.node[0].attribute[0].t.dims: the product of the dimensions overflows int64"},
        {with_initializer(vfield(2, int64_t{1} << 31)), "graph.initializer[0].data_type: value 2147483648 is outside int32"},
        {with_initializer(vfield(5, int64_t{1} << 40)), "graph.initializer[0].int32_data: value 1099511627776 is outside int32"},
        {with_graph(lfield(11, lfield(2, lfield(1, vfield(1, -(int64_t{1} << 40)))))),
         "graph.input[0].type.tensor_type.elem_type: value -1099511627776 is outside int32"},
        {with_initializer(vfield(14, 2)), "graph.initializer[0].data_location: data_location 2 is neither DEFAULT (0) nor EXTERNAL (1)"},
        {with_initializer(lfield(13, lfield(1, "location") + lfield(2, "f")) + lfield(13, lfield(1, "offset") + lfield(2, "12a"))),
         "graph.initializer[0].external_data[1].value: offset \"12a\" is not a non-negative decimal integer"},
        {with_initializer(lfield(13, lfield(1, "offset") + lfield(2, "-1"))),
         "graph.initializer[0].external_data[0].value: offset \"-1\" is not a non-negative decimal integer"},
        {with_initializer(lfield(13, lfield(1, "length") + lfield(2, ""))), "length \"\" is not a non-negative decimal integer"},
        {with_initializer(lfield(13, lfield(1, "length") + lfield(2, "9223372036854775808"))),
         "length \"9223372036854775808\" is not a non-negative decimal integer"},
        {with_initializer(lfield(13, lfield(1, "offset") + lfield(2, " 7"))), "offset \" 7\" is not a non-negative decimal integer"},
        {with_initializer(lfield(13, lfield(1, "offset"))), "offset \"\" is not a non-negative decimal integer"},
        // errors deep inside the value infos and opsets
        {lfield(8, vfield(2, 1) + tag(1, 2) + varint(4)), "m.onnx: opset_import[0].domain: length 4 runs past the end of opset_import[0]"},
        {with_graph(lfield(12, lfield(2, lfield(1, lfield(2, lfield(1, tag(2, 2))))))),
         "graph.output[0].type.tensor_type.shape.dim[0].dim_param: truncated length"},
    };
    for (const Bad& c : cases) {
        SCOPED_TRACE(hex(c.bytes));
        const std::string text = parse_error(c.bytes);
        EXPECT_NE(text.find(c.expect), std::string::npos) << text;
        EXPECT_EQ(text.rfind("m.onnx: ", 0), 0u) << text;
        EXPECT_NE(text.find("(at byte "), std::string::npos) << text;
    }
    // Every truncation of a valid model is an error or a smaller valid model, never a crash.
    const std::string good = serialize_onnx(tiny_model());
    for (size_t n = 0; n < good.size(); ++n) {
        try {
            parse_onnx(good.substr(0, n), "cut.onnx");
        } catch (const UserError& e) {
            EXPECT_EQ(std::string(e.what()).rfind("cut.onnx: ", 0), 0u);
        }
    }
}

TEST(OnnxFile, ReadsAFileAndNamesAMissingOne) {
    char tmpl[] = "/tmp/quantlab-onnx-XXXXXX";
    const std::string dir = mkdtemp(tmpl);
    const std::string path = dir + "/tiny.onnx";
    {
        FILE* f = std::fopen(path.c_str(), "wb");
        ASSERT_NE(f, nullptr);
        const std::string bytes = serialize_onnx(tiny_model());
        ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
        std::fclose(f);
    }
    expect_same(read_onnx_file(path), tiny_model());
    EXPECT_NE(test::user_error_text([&] { read_onnx_file(dir + "/missing.onnx"); }).find(dir + "/missing.onnx: cannot open"),
              std::string::npos);
    {
        FILE* f = std::fopen(path.c_str(), "wb");
        ASSERT_NE(f, nullptr);
        std::fputs("\x0a\x05", f);
        std::fclose(f);
    }
    EXPECT_NE(test::user_error_text([&] { read_onnx_file(path); }).find(path + ": ir_version: wire type 2"), std::string::npos);
    std::remove(path.c_str());
    rmdir(dir.c_str());
}

TEST(OnnxFile, TypeNamesBitsAndRawSizes) {
    EXPECT_EQ(onnx_type_name(1), "FLOAT");
    EXPECT_EQ(onnx_type_name(16), "BFLOAT16");
    EXPECT_EQ(onnx_type_name(17), "FLOAT8E4M3FN");
    EXPECT_EQ(onnx_type_name(22), "INT4");
    EXPECT_EQ(onnx_type_name(23), "FLOAT4E2M1");
    EXPECT_EQ(onnx_type_name(26), "INT2");
    EXPECT_EQ(onnx_type_name(99), "type 99");
    EXPECT_EQ(onnx_type_name(-1), "type -1");
    EXPECT_EQ(onnx_type_bits(1), 32);
    EXPECT_EQ(onnx_type_bits(10), 16);
    EXPECT_EQ(onnx_type_bits(7), 64);
    EXPECT_EQ(onnx_type_bits(21), 4);
    EXPECT_EQ(onnx_type_bits(22), 4);
    EXPECT_EQ(onnx_type_bits(23), 4);
    EXPECT_EQ(onnx_type_bits(24), 8);
    EXPECT_EQ(onnx_type_bits(25), 2);
    EXPECT_EQ(onnx_type_bits(8), 0);  // STRING
    EXPECT_EQ(onnx_type_bits(0), 0);
    EXPECT_EQ(onnx_type_bits(99), 0);
    EXPECT_EQ(onnx_raw_bytes(1, 3), 12);
    EXPECT_EQ(onnx_raw_bytes(22, 3), 2);   // two per byte, rounded up
    EXPECT_EQ(onnx_raw_bytes(22, 4), 2);
    EXPECT_EQ(onnx_raw_bytes(26, 5), 2);   // four per byte
    EXPECT_EQ(onnx_raw_bytes(3, 0), 0);
    EXPECT_EQ(onnx_raw_bytes(7, std::numeric_limits<int64_t>::max()), std::numeric_limits<int64_t>::max());
    OnnxTensor t;
    EXPECT_EQ(t.numel(), 1);
    t.dims = {2, 0, 5};
    EXPECT_EQ(t.numel(), 0);
}

TEST(OnnxFile, RefusesToWriteAMessagePastProtobufsLimit) {
    // int32_data of -1: ten varint bytes each (sign-extended, as protobuf writes int32), so
    // 0.86 GB of values make a 2 GiB message; the size is counted before anything is written.
    OnnxModel m;
    OnnxTensor t;
    t.type = static_cast<int32_t>(OnnxType::Int32);
    t.int32_data.assign((uint64_t{1} << 31) / 10 + 1, -1);
    t.dims = {static_cast<int64_t>(t.int32_data.size())};
    m.initializers.push_back(std::move(t));
    EXPECT_THROW(serialize_onnx(m), std::length_error);
}

}  // namespace
}  // namespace ql
