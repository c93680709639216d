// SPDX-License-Identifier: GPL-3.0-or-later
// GGUF v3 files (llama.cpp's model format): a writer that streams tensor data through the
// crash-safe AtomicFileWriter, and a validating reader. Layout (ggml-org/llama.cpp
// ggml/include/gguf.h, gguf-py/gguf/gguf_writer.py and gguf_reader.py), all little-endian:
//   "GGUF" | u32 version (3) | u64 tensor count | u64 metadata KV count
//   KV:     gguf string key | u32 value type | value
//   tensor: gguf string name | u32 n_dims | u64 ne[n_dims] | u32 ggml type | u64 offset
//   padding to `general.alignment` (default 32), then the data section; each tensor's offset is
//   relative to the data section's start and a multiple of the alignment.
// A gguf string is u64 length + bytes (no NUL); an array is u32 element type + u64 count + the
// elements. Dimensions are in ggml order: ne[0] is the innermost (contiguous) one, so a row-major
// [out, in] matrix has ne = {in, out}.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ql {

class FileBytes;

// Metadata value types, numbered as gguf.h's enum gguf_type.
enum class GgufValueType : uint32_t {
    UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
    STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
const char* gguf_value_type_name(GgufValueType t);  // "UINT8" ...; "?" outside the enum
int gguf_scalar_size(GgufValueType t);  // bytes of one value: 1, 2, 4 or 8; 0 for STRING, ARRAY and unknown

// The tensor types QuantLab reads and writes, numbered as ggml.h's enum ggml_type. The K-quants
// (super-blocks of 256, shared/design/GGUF_KQUANTS.md section 2), IQ4_NL / IQ4_XS, the i-quants
// (IQ1_S .. IQ3_S: lattice codes, kernels/gguf_iquant_codec.h), the ternary TQ1_0 / TQ2_0, Q5_1
// and BF16 are listed so that files holding them are read and llama.cpp's type mixes can name them.
enum class GgmlType : uint32_t {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8,
    Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19,
    IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23, IQ1_M = 29, BF16 = 30, TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};
const char* ggml_type_name(GgmlType t);                        // "F32", "Q4_0", "Q4_K", ... (ggml's spelling)
std::optional<GgmlType> ggml_type_from_id(uint32_t id);        // nullopt for types we do not know
std::optional<GgmlType> ggml_type_from_name(const std::string& lower_name);  // "q4_0", "f16", "q4_k", ...
// ggml's own name of any ggml_type id (ggml.c type_traits: "IQ2_XXS", "TQ1_0", ...), for messages
// about types QuantLab does not read; "type <id>" for ids ggml does not define.
std::string ggml_type_id_name(uint32_t id);
const std::vector<GgmlType>& ggml_known_types();                // every type above, in enum order
// A block-quantized type (not F32, F16 or BF16).
bool ggml_type_is_quantized(GgmlType t);
int64_t ggml_block_size(GgmlType t);   // elements per block: 1 (F32, F16, BF16), 32, or 256 (K-quants,
                                       // IQ4_XS, i-quants, TQ)
int64_t ggml_type_size(GgmlType t);    // bytes per block: F32 4, F16 2, Q4_0 18, Q4_1 20, Q5_0 22, Q5_1 24,
                                       // Q8_0 34, Q2_K 84, Q3_K 110, Q4_K 144, Q5_K 176, Q6_K 210,
                                       // IQ2_XXS 66, IQ2_XS 74, IQ3_XXS 98, IQ1_S 50, IQ4_NL 18, IQ3_S 110,
                                       // IQ2_S 82, IQ4_XS 136, IQ1_M 56, BF16 2, TQ1_0 54, TQ2_0 66, MXFP4 17
// Bytes of a tensor with `ne` (ggml order); nullopt when ne[0] is not a multiple of the block,
// a dimension is negative or the size overflows.
std::optional<uint64_t> ggml_tensor_bytes(GgmlType t, const std::vector<int64_t>& ne);

// One metadata value. Scalars live in u (unsigned ints, bool), i (signed ints), f (floats) or s;
// arrays have `type` ARRAY, `array_type`, and their elements in `strings` (STRING arrays),
// `items` (arrays of arrays) or `raw` (any other element type: the little-endian bytes of `count`
// elements, as the file holds them).
struct GgufValue {
    GgufValueType type = GgufValueType::UINT32;
    uint64_t u = 0;
    int64_t i = 0;
    double f = 0;
    std::string s;
    GgufValueType array_type = GgufValueType::UINT8;
    uint64_t count = 0;
    std::vector<std::string> strings;
    std::vector<GgufValue> items;
    std::vector<uint8_t> raw;

    static GgufValue u8(uint8_t v), i8(int8_t v), u16(uint16_t v), i16(int16_t v), u32(uint32_t v), i32(int32_t v),
        u64(uint64_t v), i64(int64_t v), f32(float v), f64(double v), boolean(bool v), string(std::string v);
    static GgufValue string_array(std::vector<std::string> v);
    static GgufValue i32_array(const std::vector<int32_t>& v);
    static GgufValue f32_array(const std::vector<float>& v);
    static GgufValue array_of_arrays(std::vector<GgufValue> v);  // all of one element type
    // Any numeric / bool array from its raw little-endian bytes (count elements of `element`).
    static GgufValue raw_array(GgufValueType element, uint64_t count, std::vector<uint8_t> bytes);

    // Accessors for readers; each throws UserError naming `key` when the type does not fit.
    uint64_t as_uint(const std::string& key) const;       // any unsigned integer type or bool
    int64_t as_int(const std::string& key) const;         // any integer type that fits int64
    double as_float(const std::string& key) const;        // FLOAT32 / FLOAT64
    const std::string& as_string(const std::string& key) const;
    const std::vector<std::string>& as_strings(const std::string& key) const;  // STRING arrays
    std::vector<int32_t> as_i32s(const std::string& key) const;               // INT32 arrays
    std::vector<float> as_f32s(const std::string& key) const;                 // FLOAT32 arrays

    bool operator==(const GgufValue& o) const;
    bool operator!=(const GgufValue& o) const { return !(*this == o); }
};

using GgufMetadata = std::vector<std::pair<std::string, GgufValue>>;  // file order

struct GgufTensorInfo {
    std::string name;
    std::vector<int64_t> ne;  // ggml order (ne[0] innermost), 1..4 dimensions
    GgmlType type = GgmlType::F32;
    uint64_t offset = 0;      // bytes from the start of the data section
    uint64_t size = 0;        // bytes
    int64_t numel() const;
};

constexpr uint32_t kGgufVersion = 3;
constexpr uint32_t kGgufDefaultAlignment = 32;

// Streams a GGUF file: declare metadata and tensors, then write each tensor's bytes in the
// order declared. The file is "<path>.partial" until commit() (fsync + rename); destroying the
// writer without commit removes it, so no half file ever carries the final name.
class GgufWriter {
public:
    // UserError when `path` exists and `force` is false, or the folder cannot be written.
    GgufWriter(const std::string& path, bool force);
    ~GgufWriter();
    GgufWriter(const GgufWriter&) = delete;
    GgufWriter& operator=(const GgufWriter&) = delete;

    // Before the first write_tensor. A key given twice is a UserError; "general.alignment" (UINT32,
    // a power of two) sets the alignment of the data.
    void add_metadata(const std::string& key, GgufValue value);
    // Declares a tensor; returns its size in bytes. UserError for a duplicate name, 0 or > 4
    // dimensions, or ne[0] not a multiple of the type's block.
    uint64_t add_tensor(const std::string& name, const std::vector<int64_t>& ne, GgmlType type);
    // The next declared tensor's bytes (exactly its size; the first call writes the header).
    // May be given in pieces: `data` of any size, as long as a tensor's pieces add up to its size.
    void write_tensor_data(const void* data, uint64_t size);
    void commit();  // every tensor written; UserError otherwise
    const std::string& path() const;
    uint64_t bytes_written() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// A GGUF file, memory-mapped and validated: magic, version (2 or 3), counts that fit the file,
// strings and arrays inside the file, known value and tensor types, dimensions, tensor offsets
// aligned, inside the data section and not overlapping, duplicate keys or names. Errors are
// UserErrors naming the file and the field ("m.gguf: tensor 'blk.0.attn_q.weight': offset ...").
class GgufFile {
public:
    static GgufFile open(const std::string& path);
    static GgufFile parse(std::string bytes, const std::string& name);  // in-memory image

    const std::string& path() const { return path_; }
    uint32_t version() const { return version_; }
    uint32_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }  // from the file start
    const GgufMetadata& metadata() const { return metadata_; }
    const GgufValue* find(const std::string& key) const;   // nullptr when absent
    const GgufValue& get(const std::string& key) const;    // UserError naming the key when absent
    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    const GgufTensorInfo* find_tensor(const std::string& name) const;
    const GgufTensorInfo& tensor(const std::string& name) const;  // UserError when absent
    const uint8_t* tensor_data(const GgufTensorInfo& t) const;
    // The tensor as float32 (numel values, ggml order flattened = row-major [.., ne1, ne0]).
    std::vector<float> dequantize(const GgufTensorInfo& t) const;

private:
    using Storage = FileBytes;
    GgufFile() = default;
    void validate();

    std::string path_;
    std::shared_ptr<const Storage> storage_;
    uint32_t version_ = 0, alignment_ = kGgufDefaultAlignment;
    uint64_t data_offset_ = 0;
    GgufMetadata metadata_;
    std::map<std::string, size_t> key_index_;
    std::vector<GgufTensorInfo> tensors_;
    std::map<std::string, size_t> tensor_index_;
};

}  // namespace ql
