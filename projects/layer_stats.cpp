// SPDX-License-Identifier: GPL-3.0-or-later
#include "projects/layer_stats.h"

#include <cstring>

#include "engine/core/errors.h"

namespace ql::projects {
namespace {

constexpr unsigned char kMagic[4] = {'Q', 'L', 'S', 'B'};
constexpr std::uint16_t kVersion = 1;
constexpr std::uint16_t kFloat32 = 1;

// Byte-by-byte little-endian so the format does not depend on the host.
void put_le(unsigned char* out, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

std::uint64_t get_le(const unsigned char* in, int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(in[i]) << (8 * i);
    return v;
}

template <typename To, typename From>
To bit_cast(const From& from) {
    static_assert(sizeof(To) == sizeof(From));
    To to;
    std::memcpy(&to, &from, sizeof to);
    return to;
}

}  // namespace

std::vector<unsigned char> encode_layer_stats_blob(const LayerStats& stats) {
    const std::size_t n = stats.values.size();
    std::vector<unsigned char> blob(kLayerStatsHeaderBytes + 4 * n);
    std::memcpy(blob.data(), kMagic, 4);
    put_le(blob.data() + 4, kVersion, 2);
    put_le(blob.data() + 6, kFloat32, 2);
    put_le(blob.data() + 8, n, 8);
    put_le(blob.data() + 16, bit_cast<std::uint64_t>(stats.range_min), 8);
    put_le(blob.data() + 24, bit_cast<std::uint64_t>(stats.range_max), 8);
    for (std::size_t i = 0; i < n; ++i)
        put_le(blob.data() + kLayerStatsHeaderBytes + 4 * i, bit_cast<std::uint32_t>(stats.values[i]), 4);
    return blob;
}

void decode_layer_stats_blob(const void* blob, std::size_t bytes, LayerStats& out, const std::filesystem::path& file) {
    const auto* in = static_cast<const unsigned char*>(blob);
    auto bad = [&](const std::string& what) {
        return UserError("project file '" + file.string() + "' is damaged: layer statistics of '" + out.layer +
                         "' (" + out.kind + "): " + what);
    };
    if (bytes < kLayerStatsHeaderBytes || !in) throw bad("blob of " + std::to_string(bytes) + " bytes is shorter than its header");
    if (std::memcmp(in, kMagic, 4) != 0) throw bad("blob does not start with QLSB");
    const auto version = get_le(in + 4, 2);
    const auto type = get_le(in + 6, 2);
    if (version != kVersion) throw bad("blob version " + std::to_string(version) + " is not 1");
    if (type != kFloat32) throw bad("element type " + std::to_string(type) + " is not float32 (1)");
    const std::uint64_t count = get_le(in + 8, 8);
    // Checked arithmetic: a lying count must not overflow the size comparison.
    if (count > (bytes - kLayerStatsHeaderBytes) / 4 || kLayerStatsHeaderBytes + 4 * count != bytes)
        throw bad("header says " + std::to_string(count) + " values but the blob holds " + std::to_string(bytes) + " bytes");
    out.range_min = bit_cast<double>(get_le(in + 16, 8));
    out.range_max = bit_cast<double>(get_le(in + 24, 8));
    out.values.resize(count);
    for (std::size_t i = 0; i < count; ++i)
        out.values[i] = bit_cast<float>(static_cast<std::uint32_t>(get_le(in + kLayerStatsHeaderBytes + 4 * i, 4)));
}

}  // namespace ql::projects
