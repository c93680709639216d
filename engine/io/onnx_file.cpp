// SPDX-License-Identifier: GPL-3.0-or-later
// The ONNX subset of onnx_file.h on the protobuf wire format, by hand. The writer puts fields in
// field-number order as protobuf's C++ serializer does, so its bytes are the bytes onnx.save
// writes for the same message; the reader is bounds-checked field by field, so a truncated or
// lying file is a UserError naming the file and the field path, never a crash or a huge
// allocation.
#include "engine/io/onnx_file.h"

#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "engine/core/errors.h"
#include "engine/io/strict_json.h"
#include "engine/io/whole_file.h"

namespace ql {
// A named namespace: the engine is compiled in unity batches, and an anonymous namespace alone
// would share its helpers' names with the other files of the batch.
namespace onnx_wire {
namespace {

// Protobuf's wire types. 3 and 4 (groups) are proto2 features onnx.proto never uses.
constexpr int kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5;
// protobuf's message size limit (2 GiB - 1: sizes are int in its C++ runtime).
constexpr uint64_t kMaxMessage = std::numeric_limits<int32_t>::max();
// Nested messages deeper than this are refused. The subset read here nests 6 deep at most
// (model.graph.node.attribute.t.external_data); the bound keeps that true should subgraphs
// (attribute g) ever be read, as protobuf bounds its recursion at 100.
constexpr int kMaxDepth = 64;

// ---- writing ----

// Sinks: the writer runs each message body once into a counter (for the length prefix) and once
// into the string. With the counter as the outer sink, a nested body is counted once only.
struct ByteCounter {
    uint64_t n = 0;
    void put(uint8_t) { ++n; }
    void put(const std::string& s) { n += s.size(); }
};
struct ByteWriter {
    std::string& s;
    void put(uint8_t b) { s.push_back(static_cast<char>(b)); }
    void put(const std::string& bytes) { s += bytes; }
};

template <class Out>
void put_varint(Out& o, uint64_t v) {
    while (v >= 0x80) {
        o.put(static_cast<uint8_t>(v | 0x80));
        v >>= 7;
    }
    o.put(static_cast<uint8_t>(v));
}
int varint_size(uint64_t v) {
    int n = 1;
    while (v >= 0x80) v >>= 7, ++n;
    return n;
}
template <class Out>
void put_tag(Out& o, uint32_t field, int wire) {
    put_varint(o, (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire));
}
// int32 and int64 alike: a negative value is sign-extended to 64 bits (10 bytes), as protobuf does.
template <class Out>
void put_int(Out& o, uint32_t field, int64_t v) {
    put_tag(o, field, kVarint);
    put_varint(o, static_cast<uint64_t>(v));
}
uint32_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
template <class Out>
void put_le32(Out& o, uint32_t u) {  // little endian whatever the host
    for (int k = 0; k < 4; ++k) o.put(static_cast<uint8_t>(u >> (8 * k)));
}
template <class Out>
void put_float(Out& o, uint32_t field, float f) {
    put_tag(o, field, kFixed32);
    put_le32(o, float_bits(f));
}
template <class Out>
void put_string(Out& o, uint32_t field, const std::string& s) {
    put_tag(o, field, kBytes);
    put_varint(o, s.size());
    o.put(s);
}
template <class Out>
void put_string_if_set(Out& o, uint32_t field, const std::string& s) {
    if (!s.empty()) put_string(o, field, s);
}
template <class Out, class Body>
void put_message(Out& o, uint32_t field, const Body& body) {
    ByteCounter size;
    body(size);
    put_tag(o, field, kBytes);
    put_varint(o, size.n);
    if constexpr (std::is_same_v<Out, ByteCounter>)
        o.n += size.n;
    else
        body(o);
}
// [packed = true] fields: one length-delimited field holding the values back to back.
template <class Out>
void put_packed_floats(Out& o, uint32_t field, const std::vector<float>& v) {
    if (v.empty()) return;
    put_tag(o, field, kBytes);
    put_varint(o, 4 * static_cast<uint64_t>(v.size()));
    if constexpr (std::is_same_v<Out, ByteCounter>)
        o.n += 4 * static_cast<uint64_t>(v.size());
    else
        for (float f : v) put_le32(o, float_bits(f));
}
template <class Out, class T>
void put_packed_varints(Out& o, uint32_t field, const std::vector<T>& v) {
    if (v.empty()) return;
    uint64_t size = 0;
    for (T x : v) size += varint_size(static_cast<uint64_t>(static_cast<int64_t>(x)));
    put_tag(o, field, kBytes);
    put_varint(o, size);
    if constexpr (std::is_same_v<Out, ByteCounter>)
        o.n += size;
    else
        for (T x : v) put_varint(o, static_cast<uint64_t>(static_cast<int64_t>(x)));
}

template <class Out>
void put_tensor(Out& o, const OnnxTensor& t) {
    for (int64_t d : t.dims) put_int(o, 1, d);  // dims: repeated, not packed in onnx.proto
    put_int(o, 2, t.type);
    put_packed_floats(o, 4, t.float_data);
    put_packed_varints(o, 5, t.int32_data);
    put_packed_varints(o, 7, t.int64_data);
    put_string_if_set(o, 8, t.name);
    if (!t.external) put_string_if_set(o, 9, t.raw);
    if (t.external) {
        const auto entry = [&](const char* key, const std::string& value) {
            put_message(o, 13, [&](auto& e) {
                put_string(e, 1, key);
                put_string(e, 2, value);
            });
        };
        entry("location", t.location);
        entry("offset", std::to_string(t.offset));
        if (t.length >= 0) entry("length", std::to_string(t.length));
        put_int(o, 14, 1);  // data_location EXTERNAL
    }
}

template <class Out>
void put_attribute(Out& o, const OnnxAttribute& a) {
    put_string_if_set(o, 1, a.name);
    switch (a.kind) {
    case OnnxAttribute::Float: put_float(o, 2, a.f); break;
    case OnnxAttribute::Int: put_int(o, 3, a.i); break;
    case OnnxAttribute::String: put_string(o, 4, a.s); break;
    case OnnxAttribute::Tensor:
        if (!a.t.empty()) put_message(o, 5, [&](auto& m) { put_tensor(m, a.t.front()); });
        break;
    case OnnxAttribute::Floats:  // repeated, not packed in onnx.proto: one field per value
        for (float f : a.floats) put_float(o, 7, f);
        break;
    case OnnxAttribute::Ints:
        for (int64_t v : a.ints) put_int(o, 8, v);
        break;
    default: break;
    }
    if (a.kind != OnnxAttribute::Undefined) put_int(o, 20, a.kind);
}

template <class Out>
void put_node(Out& o, const OnnxNode& n) {
    for (const std::string& s : n.inputs) put_string(o, 1, s);  // "" too: an omitted optional input
    for (const std::string& s : n.outputs) put_string(o, 2, s);
    put_string_if_set(o, 3, n.name);
    put_string_if_set(o, 4, n.op_type);
    for (const OnnxAttribute& a : n.attributes) put_message(o, 5, [&](auto& m) { put_attribute(m, a); });
    put_string_if_set(o, 7, n.domain);
}

template <class Out>
void put_value_info(Out& o, const OnnxValueInfo& v) {
    put_string_if_set(o, 1, v.name);
    put_message(o, 2, [&](auto& type) {              // TypeProto
        put_message(type, 1, [&](auto& tensor) {     // .tensor_type
            put_int(tensor, 1, v.elem_type);
            if (v.dims.empty()) return;              // no shape: unknown rank
            put_message(tensor, 2, [&](auto& shape) {  // TensorShapeProto
                for (size_t k = 0; k < v.dims.size(); ++k) {
                    put_message(shape, 1, [&](auto& dim) {
                        if (k < v.dim_params.size() && !v.dim_params[k].empty())
                            put_string(dim, 2, v.dim_params[k]);
                        else if (v.dims[k] >= 0)
                            put_int(dim, 1, v.dims[k]);
                    });
                }
            });
        });
    });
}

template <class Out>
void put_graph(Out& o, const OnnxModel& m) {
    for (const OnnxNode& n : m.nodes) put_message(o, 1, [&](auto& b) { put_node(b, n); });
    put_string_if_set(o, 2, m.graph_name);
    for (const OnnxTensor& t : m.initializers) put_message(o, 5, [&](auto& b) { put_tensor(b, t); });
    for (const OnnxValueInfo& v : m.inputs) put_message(o, 11, [&](auto& b) { put_value_info(b, v); });
    for (const OnnxValueInfo& v : m.outputs) put_message(o, 12, [&](auto& b) { put_value_info(b, v); });
}

template <class Out>
void put_model(Out& o, const OnnxModel& m) {
    if (m.ir_version != 0) put_int(o, 1, m.ir_version);
    put_string_if_set(o, 2, m.producer_name);
    put_string_if_set(o, 3, m.producer_version);
    put_message(o, 7, [&](auto& b) { put_graph(b, m); });
    for (const OnnxOpset& s : m.opsets)
        put_message(o, 8, [&](auto& b) {
            put_string_if_set(b, 1, s.domain);
            put_int(b, 2, s.version);
        });
}

// ---- reading ----

// What a known field's wire type must be. Repeated scalars come packed (one length-delimited
// field) or not (one field per value), whatever onnx.proto declares: protobuf parsers take both.
enum class Expect { Varint, Fixed32, Bytes, Varints, Fixed32s };
struct Spec {
    uint32_t number;
    const char* name;
    Expect expect;
};
const char* wire_name(int wire) {
    switch (wire) {
    case kVarint: return "varint";
    case kFixed64: return "fixed64";
    case kBytes: return "length-delimited";
    case kFixed32: return "fixed32";
    default: return "?";
    }
}

std::string join(const std::string& path, const std::string& name) { return path.empty() ? name : path + "." + name; }
std::string indexed(const std::string& path, const char* name, size_t index) {
    return join(path, name) + "[" + std::to_string(index) + "]";
}

// A message being read: its bytes and its path ("" for the model, "graph.node[3]").
struct Msg {
    const uint8_t* p;
    const uint8_t* end;
    std::string path;
    int depth;
};

struct Field {
    const Spec* spec;  // nullptr: unknown, skipped
    uint32_t number;
    int wire;
    uint64_t value;       // varint, fixed64 or fixed32
    const uint8_t* data;  // length-delimited payload
    uint64_t size;
    const uint8_t* at;    // the value's first byte (after the tag and any length)
};

enum class VarintStatus { Ok, Truncated, TooLong };
VarintStatus read_varint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
    v = 0;
    for (int k = 0; k < 10; ++k) {
        if (p == end) return VarintStatus::Truncated;
        const uint8_t b = *p++;
        v |= static_cast<uint64_t>(b & 0x7F) << (7 * k);  // bits past 64 (10th byte) drop, as in protobuf
        if (!(b & 0x80)) return VarintStatus::Ok;
    }
    return VarintStatus::TooLong;
}

class Reader {
public:
    Reader(const std::string& bytes, const std::string& what)
        : base_(reinterpret_cast<const uint8_t*>(bytes.data())), size_(bytes.size()), what_(what) {}

    OnnxModel model() {
        OnnxModel m;
        Msg top{base_, base_ + size_, "", 0};
        static const Spec specs[] = {{1, "ir_version", Expect::Varint},   {2, "producer_name", Expect::Bytes},
                                     {3, "producer_version", Expect::Bytes}, {7, "graph", Expect::Bytes},
                                     {8, "opset_import", Expect::Bytes}};
        Field f{};
        while (next(top, specs, f)) {
            switch (f.number) {
            case 1: m.ir_version = static_cast<int64_t>(f.value); break;
            case 2: m.producer_name = text(f); break;
            case 3: m.producer_version = text(f); break;
            case 7: graph(sub(top, f, "graph"), m); break;  // a repeated field merges, as in protobuf
            case 8: m.opsets.push_back(opset(sub(top, f, indexed("", "opset_import", m.opsets.size())))); break;
            }
        }
        return m;
    }

private:
    const uint8_t* base_;
    uint64_t size_;
    const std::string& what_;

    [[noreturn]] void fail(const std::string& path, const std::string& problem, const uint8_t* at) const {
        throw UserError(what_ + ": " + (path.empty() ? "" : path + ": ") + problem + " (at byte " +
                        std::to_string(at - base_) + ")");
    }
    static std::string field_path(const Msg& m, const Field& f) {
        return join(m.path, f.spec ? std::string(f.spec->name) : "(field " + std::to_string(f.number) + ")");
    }
    std::string container(const Msg& m) const { return m.path.empty() ? "the model" : m.path; }

    // Reads the next field of `m` into `f`; false at the end of `m`.
    template <size_t N>
    bool next(Msg& m, const Spec (&specs)[N], Field& f) {
        if (m.p == m.end) return false;
        const uint8_t* tag_at = m.p;
        uint64_t tag = 0;
        const VarintStatus st = read_varint(m.p, m.end, tag);
        if (st == VarintStatus::Truncated) fail(m.path, "truncated field tag", tag_at);
        if (st == VarintStatus::TooLong) fail(m.path, "field tag longer than 10 bytes", tag_at);
        f = Field{};
        f.number = static_cast<uint32_t>(tag >> 3);
        f.wire = static_cast<int>(tag & 7);
        if (tag >> 3 == 0 || tag >> 3 > (1u << 29) - 1)
            fail(m.path, "field number " + std::to_string(tag >> 3) + " is out of range", tag_at);
        for (const Spec& s : specs)
            if (s.number == f.number) f.spec = &s;
        if (f.wire == 3 || f.wire == 4)
            fail(field_path(m, f), "wire type " + std::to_string(f.wire) + " (group) is not used by ONNX", tag_at);
        if (f.wire > 5) fail(field_path(m, f), "invalid wire type " + std::to_string(f.wire), tag_at);
        if (f.spec) check_wire(m, f, tag_at);
        const uint8_t* at = m.p;
        f.at = at;
        switch (f.wire) {
        case kVarint: {
            const VarintStatus s = read_varint(m.p, m.end, f.value);
            if (s == VarintStatus::Truncated) fail(field_path(m, f), "truncated varint", at);
            if (s == VarintStatus::TooLong) fail(field_path(m, f), "varint longer than 10 bytes", at);
            break;
        }
        case kFixed64:
        case kFixed32: {
            const uint64_t n = f.wire == kFixed64 ? 8 : 4;
            if (static_cast<uint64_t>(m.end - m.p) < n) fail(field_path(m, f), std::string("truncated ") + wire_name(f.wire), at);
            for (uint64_t k = 0; k < n; ++k) f.value |= static_cast<uint64_t>(m.p[k]) << (8 * k);
            m.p += n;
            break;
        }
        case kBytes: {
            const VarintStatus s = read_varint(m.p, m.end, f.size);
            if (s == VarintStatus::Truncated) fail(field_path(m, f), "truncated length", at);
            if (s == VarintStatus::TooLong) fail(field_path(m, f), "length longer than 10 bytes", at);
            const auto left = static_cast<uint64_t>(m.end - m.p);
            if (f.size > left)
                fail(field_path(m, f), "length " + std::to_string(f.size) + " runs past the end of " + container(m) + ", " +
                                           std::to_string(left) + " bytes left", at);
            f.data = m.p;
            f.at = m.p;
            m.p += f.size;
            break;
        }
        }
        return true;
    }

    void check_wire(const Msg& m, const Field& f, const uint8_t* tag_at) const {
        int want = kBytes;
        switch (f.spec->expect) {
        case Expect::Varint: want = kVarint; break;
        case Expect::Fixed32: want = kFixed32; break;
        case Expect::Bytes: want = kBytes; break;
        case Expect::Varints: want = f.wire == kBytes ? kBytes : kVarint; break;
        case Expect::Fixed32s: want = f.wire == kBytes ? kBytes : kFixed32; break;
        }
        if (f.wire != want)
            fail(field_path(m, f), std::string("wire type ") + std::to_string(f.wire) + " (" + wire_name(f.wire) +
                                       ") where the field is " + wire_name(want), tag_at);
    }

    Msg sub(const Msg& parent, const Field& f, std::string path) const {
        if (parent.depth + 1 > kMaxDepth) fail(path, "messages nested deeper than " + std::to_string(kMaxDepth), f.at);
        return Msg{f.data, f.data + f.size, std::move(path), parent.depth + 1};
    }
    static std::string text(const Field& f) { return std::string(reinterpret_cast<const char*>(f.data), f.size); }

    int32_t int32(const Msg& m, const Field& f, uint64_t v, const uint8_t* at) const {
        const auto s = static_cast<int64_t>(v);
        if (s < std::numeric_limits<int32_t>::min() || s > std::numeric_limits<int32_t>::max())
            fail(field_path(m, f), "value " + std::to_string(s) + " is outside int32", at);
        return static_cast<int32_t>(s);
    }
    // A repeated varint field, packed or not: calls add(value, its first byte) for each value.
    template <class Add>
    void varints(const Msg& m, const Field& f, const Add& add) const {
        if (f.wire == kVarint) return add(f.value, f.at);
        const uint8_t* p = f.data;
        const uint8_t* end = f.data + f.size;
        while (p < end) {
            const uint8_t* at = p;
            uint64_t v = 0;
            const VarintStatus s = read_varint(p, end, v);
            if (s == VarintStatus::Truncated) fail(field_path(m, f), "truncated varint", at);
            if (s == VarintStatus::TooLong) fail(field_path(m, f), "varint longer than 10 bytes", at);
            add(v, at);
        }
    }
    void floats(const Msg& m, const Field& f, std::vector<float>& out) const {
        const auto as_float = [](uint64_t u) {
            const auto u32 = static_cast<uint32_t>(u);
            float x;
            std::memcpy(&x, &u32, 4);
            return x;
        };
        if (f.wire == kFixed32) return out.push_back(as_float(f.value));
        if (f.size % 4 != 0) fail(field_path(m, f), "packed length " + std::to_string(f.size) + " is not a multiple of 4", f.at);
        out.reserve(out.size() + f.size / 4);  // bounded: the bytes are there
        for (uint64_t k = 0; k < f.size; k += 4) {
            uint64_t u = 0;
            for (int b = 0; b < 4; ++b) u |= static_cast<uint64_t>(f.data[k + b]) << (8 * b);
            out.push_back(as_float(u));
        }
    }

    OnnxOpset opset(Msg m) {
        static const Spec specs[] = {{1, "domain", Expect::Bytes}, {2, "version", Expect::Varint}};
        OnnxOpset s;
        Field f{};
        while (next(m, specs, f)) {
            if (f.number == 1) s.domain = text(f);
            if (f.number == 2) s.version = static_cast<int64_t>(f.value);
        }
        return s;
    }

    void graph(Msg m, OnnxModel& out) {
        static const Spec specs[] = {{1, "node", Expect::Bytes},   {2, "name", Expect::Bytes},
                                     {5, "initializer", Expect::Bytes}, {11, "input", Expect::Bytes},
                                     {12, "output", Expect::Bytes}, {13, "value_info", Expect::Bytes}};
        Field f{};
        while (next(m, specs, f)) {
            switch (f.number) {
            case 1: out.nodes.push_back(node(sub(m, f, indexed(m.path, "node", out.nodes.size())))); break;
            case 2: out.graph_name = text(f); break;
            case 5:
                out.initializers.push_back(tensor(sub(m, f, indexed(m.path, "initializer", out.initializers.size()))));
                break;
            case 11: out.inputs.push_back(value_info(sub(m, f, indexed(m.path, "input", out.inputs.size())))); break;
            case 12: out.outputs.push_back(value_info(sub(m, f, indexed(m.path, "output", out.outputs.size())))); break;
            case 13: break;  // value_info: intermediate shapes, not needed
            }
        }
    }

    OnnxNode node(Msg m) {
        static const Spec specs[] = {{1, "input", Expect::Bytes},   {2, "output", Expect::Bytes},
                                     {3, "name", Expect::Bytes},    {4, "op_type", Expect::Bytes},
                                     {5, "attribute", Expect::Bytes}, {7, "domain", Expect::Bytes}};
        OnnxNode n;
        Field f{};
        while (next(m, specs, f)) {
            switch (f.number) {
            case 1: n.inputs.push_back(text(f)); break;
            case 2: n.outputs.push_back(text(f)); break;
            case 3: n.name = text(f); break;
            case 4: n.op_type = text(f); break;
            case 5: n.attributes.push_back(attribute(sub(m, f, indexed(m.path, "attribute", n.attributes.size())))); break;
            case 7: n.domain = text(f); break;
            }
        }
        return n;
    }

    OnnxAttribute attribute(Msg m) {
        static const Spec specs[] = {{1, "name", Expect::Bytes},      {2, "f", Expect::Fixed32},
                                     {3, "i", Expect::Varint},        {4, "s", Expect::Bytes},
                                     {5, "t", Expect::Bytes},         {7, "floats", Expect::Fixed32s},
                                     {8, "ints", Expect::Varints},    {20, "type", Expect::Varint}};
        OnnxAttribute a;
        int32_t type = 0;
        bool has_f = false, has_i = false, has_s = false;
        Field f{};
        while (next(m, specs, f)) {
            switch (f.number) {
            case 1: a.name = text(f); break;
            case 2: {
                const auto u32 = static_cast<uint32_t>(f.value);
                std::memcpy(&a.f, &u32, 4);
                has_f = true;
                break;
            }
            case 3: a.i = static_cast<int64_t>(f.value), has_i = true; break;
            case 4: a.s = text(f), has_s = true; break;
            case 5: {
                // A second t merges into the first, as protobuf merges a repeated singular message.
                OnnxTensor t = tensor(sub(m, f, join(m.path, "t")));
                if (a.t.empty()) a.t.push_back(std::move(t));
                else merge_tensor(a.t.front(), std::move(t));
                break;
            }
            case 7: floats(m, f, a.floats); break;
            case 8: varints(m, f, [&](uint64_t v, const uint8_t*) { a.ints.push_back(static_cast<int64_t>(v)); }); break;
            case 20: type = int32(m, f, f.value, f.at); break;
            }
        }
        // Kinds outside Kind (GRAPH, STRINGS, ...) keep their code, for the caller to name.
        a.kind = static_cast<OnnxAttribute::Kind>(type);
        if (type == 0) {  // IR version 1 had no type field: the field that is set tells the kind
            if (has_f) a.kind = OnnxAttribute::Float;
            else if (has_i) a.kind = OnnxAttribute::Int;
            else if (has_s) a.kind = OnnxAttribute::String;
            else if (!a.t.empty()) a.kind = OnnxAttribute::Tensor;
            else if (!a.floats.empty()) a.kind = OnnxAttribute::Floats;
            else if (!a.ints.empty()) a.kind = OnnxAttribute::Ints;
        }
        return a;
    }

    static void merge_tensor(OnnxTensor& into, OnnxTensor&& t) {
        const auto append = [](auto& a, auto& b) { a.insert(a.end(), b.begin(), b.end()); };
        append(into.dims, t.dims);
        append(into.float_data, t.float_data);
        append(into.int32_data, t.int32_data);
        append(into.int64_data, t.int64_data);
        if (t.type != 0) into.type = t.type;
        if (!t.name.empty()) into.name = std::move(t.name);
        if (!t.raw.empty()) into.raw = std::move(t.raw);
        if (t.external) into.external = true;
        if (!t.location.empty()) into.location = std::move(t.location);
        if (t.offset != 0) into.offset = t.offset;
        if (t.length >= 0) into.length = t.length;
    }

    OnnxTensor tensor(Msg m) {
        static const Spec specs[] = {{1, "dims", Expect::Varints},        {2, "data_type", Expect::Varint},
                                     {4, "float_data", Expect::Fixed32s}, {5, "int32_data", Expect::Varints},
                                     {7, "int64_data", Expect::Varints},  {8, "name", Expect::Bytes},
                                     {9, "raw_data", Expect::Bytes},      {13, "external_data", Expect::Bytes},
                                     {14, "data_location", Expect::Varint}};
        OnnxTensor t;
        size_t entries = 0;
        Field f{};
        while (next(m, specs, f)) {
            switch (f.number) {
            case 1:
                varints(m, f, [&](uint64_t v, const uint8_t* at) {
                    const auto d = static_cast<int64_t>(v);
                    if (d < 0) fail(field_path(m, f), "negative dimension " + std::to_string(d), at);
                    t.dims.push_back(d);
                });
                break;
            case 2: t.type = int32(m, f, f.value, f.at); break;
            case 4: floats(m, f, t.float_data); break;
            case 5: varints(m, f, [&](uint64_t v, const uint8_t* at) { t.int32_data.push_back(int32(m, f, v, at)); }); break;
            case 7: varints(m, f, [&](uint64_t v, const uint8_t*) { t.int64_data.push_back(static_cast<int64_t>(v)); }); break;
            case 8: t.name = text(f); break;
            case 9: t.raw = text(f); break;
            case 13: external_entry(sub(m, f, indexed(m.path, "external_data", entries++)), t); break;
            case 14: {
                const int32_t loc = int32(m, f, f.value, f.at);
                if (loc != 0 && loc != 1)
                    fail(field_path(m, f), "data_location " + std::to_string(loc) + " is neither DEFAULT (0) nor EXTERNAL (1)", f.at);
                t.external = loc == 1;
                break;
            }
            }
        }
        int64_t n = 1;
        for (int64_t d : t.dims)
            if (__builtin_mul_overflow(n, d, &n)) fail(join(m.path, "dims"), "the product of the dimensions overflows int64", m.end);
        return t;
    }

    // One StringStringEntryProto of external_data: "location", "offset" and "length" are read,
    // other keys ("checksum") skipped.
    void external_entry(Msg m, OnnxTensor& t) {
        static const Spec specs[] = {{1, "key", Expect::Bytes}, {2, "value", Expect::Bytes}};
        std::string key, value;
        const uint8_t* value_at = m.p;
        Field f{};
        while (next(m, specs, f)) {
            if (f.number == 1) key = text(f);
            if (f.number == 2) value = text(f), value_at = f.at;
        }
        if (key == "location") t.location = value;
        if (key != "offset" && key != "length") return;
        // A non-negative decimal int64, as onnx's external_data_helper writes (str(int)).
        int64_t n = 0;
        bool ok = !value.empty() && value.size() <= 19;
        for (char c : value) {
            if (c < '0' || c > '9' || __builtin_mul_overflow(n, int64_t{10}, &n) || __builtin_add_overflow(n, c - '0', &n)) {
                ok = false;
                break;
            }
        }
        if (!ok)
            fail(join(m.path, "value"), key + " " + quoted_name(value) + " is not a non-negative decimal integer", value_at);
        (key == "offset" ? t.offset : t.length) = n;
    }

    OnnxValueInfo value_info(Msg m) {
        static const Spec specs[] = {{1, "name", Expect::Bytes}, {2, "type", Expect::Bytes}};
        OnnxValueInfo v;
        Field f{};
        while (next(m, specs, f)) {
            if (f.number == 1) v.name = text(f);
            if (f.number == 2) type_proto(sub(m, f, join(m.path, "type")), v);
        }
        return v;
    }

    // TypeProto: only tensor_type is read (sequence, map, optional types are skipped).
    void type_proto(Msg m, OnnxValueInfo& v) {
        static const Spec specs[] = {{1, "tensor_type", Expect::Bytes}};
        static const Spec tensor_specs[] = {{1, "elem_type", Expect::Varint}, {2, "shape", Expect::Bytes}};
        static const Spec shape_specs[] = {{1, "dim", Expect::Bytes}};
        Field f{};
        while (next(m, specs, f)) {
            if (f.number != 1) continue;
            Msg tensor = sub(m, f, join(m.path, "tensor_type"));
            Field g{};
            while (next(tensor, tensor_specs, g)) {
                if (g.number == 1) v.elem_type = int32(tensor, g, g.value, g.at);
                if (g.number != 2) continue;
                Msg shape = sub(tensor, g, join(tensor.path, "shape"));
                Field h{};
                while (next(shape, shape_specs, h))
                    if (h.number == 1) dimension(sub(shape, h, indexed(shape.path, "dim", v.dims.size())), v);
            }
        }
    }

    // A Dimension: dim_value and dim_param are a oneof (the last one read wins); neither is an
    // unknown dimension (-1, "").
    void dimension(Msg m, OnnxValueInfo& v) {
        static const Spec specs[] = {{1, "dim_value", Expect::Varint}, {2, "dim_param", Expect::Bytes}};
        int64_t value = -1;
        std::string param;
        Field f{};
        while (next(m, specs, f)) {
            if (f.number == 1) value = static_cast<int64_t>(f.value), param.clear();
            if (f.number == 2) param = text(f), value = -1;
        }
        v.dims.push_back(value);
        v.dim_params.push_back(std::move(param));
    }
};

}  // namespace
}  // namespace onnx_wire

std::string onnx_type_name(int32_t type) {
    // onnx.TensorProto.DataType names, by code (COMPLEX64 / COMPLEX128 included: files may hold them).
    static const char* const names[] = {"UNDEFINED", "FLOAT",        "UINT8",        "INT8",        "UINT16",
                                        "INT16",     "INT32",        "INT64",        "STRING",      "BOOL",
                                        "FLOAT16",   "DOUBLE",       "UINT32",       "UINT64",      "COMPLEX64",
                                        "COMPLEX128", "BFLOAT16",    "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
                                        "FLOAT8E5M2FNUZ", "UINT4",   "INT4",         "FLOAT4E2M1",  "FLOAT8E8M0",
                                        "UINT2",     "INT2"};
    if (type >= 0 && type < static_cast<int32_t>(sizeof names / sizeof names[0])) return names[type];
    return "type " + std::to_string(type);
}

int onnx_type_bits(int32_t type) {
    static const int bits[] = {0,  32, 8, 8, 16, 16, 32, 64, 0, 8, 16, 64, 32, 64,
                               64, 128, 16, 8, 8, 8, 8, 4, 4, 4, 8, 2, 2};
    if (type >= 0 && type < static_cast<int32_t>(sizeof bits / sizeof bits[0])) return bits[type];
    return 0;
}

int64_t onnx_raw_bytes(int32_t type, int64_t numel) {
    // A size past int64 saturates (no file holds it, so a comparison with a real size fails).
    const int bits = onnx_type_bits(type);
    if (numel <= 0 || bits == 0) return 0;
    if (bits < 8) {
        const int64_t per_byte = 8 / bits;
        return numel / per_byte + (numel % per_byte != 0);
    }
    int64_t bytes = 0;
    if (__builtin_mul_overflow(numel, static_cast<int64_t>(bits / 8), &bytes)) return std::numeric_limits<int64_t>::max();
    return bytes;
}

int64_t OnnxTensor::numel() const {
    // Parsed tensors have non-negative dims with a product that fits; a built tensor's product
    // past int64 saturates rather than wrapping.
    int64_t n = 1;
    for (int64_t d : dims)
        if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
    return n;
}

OnnxAttribute OnnxAttribute::of_int(std::string name, int64_t v) {
    OnnxAttribute a;
    a.name = std::move(name);
    a.kind = Int;
    a.i = v;
    return a;
}
OnnxAttribute OnnxAttribute::of_float(std::string name, float v) {
    OnnxAttribute a;
    a.name = std::move(name);
    a.kind = Float;
    a.f = v;
    return a;
}
OnnxAttribute OnnxAttribute::of_ints(std::string name, std::vector<int64_t> v) {
    OnnxAttribute a;
    a.name = std::move(name);
    a.kind = Ints;
    a.ints = std::move(v);
    return a;
}
OnnxAttribute OnnxAttribute::of_string(std::string name, std::string v) {
    OnnxAttribute a;
    a.name = std::move(name);
    a.kind = String;
    a.s = std::move(v);
    return a;
}
OnnxAttribute OnnxAttribute::of_tensor(std::string name, OnnxTensor v) {
    OnnxAttribute a;
    a.name = std::move(name);
    a.kind = Tensor;
    a.t.push_back(std::move(v));
    return a;
}

const OnnxAttribute* OnnxNode::attribute(const std::string& wanted) const {
    for (const OnnxAttribute& a : attributes)
        if (a.name == wanted) return &a;
    return nullptr;
}

int64_t OnnxModel::opset(const std::string& domain) const {
    // "" and "ai.onnx" name the same default domain; of several imports the highest counts.
    const auto canonical = [](const std::string& d) { return d == "ai.onnx" ? std::string() : d; };
    const std::string want = canonical(domain);
    int64_t version = 0;
    for (const OnnxOpset& s : opsets)
        if (canonical(s.domain) == want && s.version > version) version = s.version;
    return version;
}

std::string serialize_onnx(const OnnxModel& m) {
    onnx_wire::ByteCounter size;
    onnx_wire::put_model(size, m);
    if (size.n > onnx_wire::kMaxMessage)
        throw std::length_error("ONNX model of " + std::to_string(size.n) + " bytes passes protobuf's limit of " +
                                std::to_string(onnx_wire::kMaxMessage) + " bytes (put the initializers in external data)");
    std::string out;
    out.reserve(static_cast<size_t>(size.n));
    onnx_wire::ByteWriter w{out};
    onnx_wire::put_model(w, m);
    return out;
}

OnnxModel parse_onnx(const std::string& bytes, const std::string& what) {
    return onnx_wire::Reader(bytes, what).model();
}

OnnxModel read_onnx_file(const std::string& path) {
    return parse_onnx(read_whole_file(path, "ONNX model"), path);
}

}  // namespace ql
