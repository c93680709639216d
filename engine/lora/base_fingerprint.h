// SPDX-License-Identifier: GPL-3.0-or-later
// The identity of the frozen base an adapter was trained on: per Linear layer its quantization
// (format, block size, double quantization, asymmetry) and a SHA-256 of what the quantized
// forward reads (element codes, scales, double-quantization constants, global scale, zero points,
// pre_quant_scale, input amax; the FP32 weight for a layer without a weight quantizer), plus one
// hash of every other parameter (embeddings, norms). An adapter corrects the base it was trained
// on, code for code: applied to another quantization of the same model (another format, block
// size, double quantization on or off, another calibration) it no longer fits, which is the
// failure mode the adapter's recorded fingerprint lets the Export Doctor catch.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/quant/quantized_model.h"

namespace ql {

struct BaseLayerFingerprint {
    std::string module;
    std::string format = "fp32";  // the weight quantizer's format, "fp32" when it has none
    int64_t block = 0;            // block / group size (0: per tensor or channel)
    bool double_quant = false;
    bool asymmetric = false;
    std::string sha256;
};

struct BaseFingerprint {
    std::vector<BaseLayerFingerprint> layers;  // every Linear layer, forward order
    std::string other_sha256;                  // the parameters outside Linear layers
    std::string sha256;                        // of all of the above
    // "nf4 (block 64, double quant) on 210 of 211 linear layers", for messages.
    std::string summary() const;
};

BaseFingerprint fingerprint_base(const QuantizedModel& base);

nlohmann::json fingerprint_json(const BaseFingerprint& f);
// UserError naming `source` for a malformed fingerprint.
BaseFingerprint fingerprint_from_json(const nlohmann::json& j, const std::string& source);

// Layers whose quantization settings or hashes differ, with what differs ("format nvfp4 -> nf4",
// "codes"), in forward order; a layer missing on either side is listed too.
struct FingerprintDifference {
    std::string module;
    std::string what;
};
std::vector<FingerprintDifference> compare_fingerprints(const BaseFingerprint& trained_on, const BaseFingerprint& given);

}  // namespace ql
