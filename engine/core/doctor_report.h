// SPDX-License-Identifier: GPL-3.0-or-later
// What the Export Doctor (engine/export/export_doctor.h; `quantlab-cli doctor`, the GUI's Export
// Doctor panel, the end of every export) found in an artifact. Plain shared types (engine/core):
// safe to include from ui/ and app/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ql {

enum class DoctorSeverity { Error, Warning, Info };
const char* doctor_severity_name(DoctorSeverity s);  // "error" | "warning" | "info"

struct DoctorFinding {
    DoctorSeverity severity = DoctorSeverity::Error;
    std::string check;     // the DoctorCheck::id that found it
    std::string where;     // layer / tensor / file / config field it concerns ("" = the artifact)
    std::string problem;   // what is wrong, with the values found
    std::string consumer;  // what the consumer would do: "vLLM fails to load", "loads with wrong numbers" ...
    std::string fix;       // how to fix it
};

struct DoctorCheck {
    std::string id;     // stable: "files", "config-schema", "coverage", "dtypes-shapes", "fused-scales",
                        // "scale-conventions", "reproduces-quantlab", "consumer-arithmetic", "kv-cache",
                        // "config-tokenizer", "gguf-types", "gguf-plan"
    std::string title;  // one line for people
    bool ran = false;
    std::string note;   // why it did not run, or what it covered ("12 layers")
};

struct DoctorReport {
    std::string path;
    std::string layout;  // compressed-tensors | hf-modelopt | hf | gguf | onnx | peft | unknown
    std::string consumer;  // who loads it: "vLLM (compressed-tensors)", "llama.cpp" ...
    std::vector<DoctorCheck> checks;
    std::vector<DoctorFinding> findings;
    int64_t layers = 0;  // quantized layers checked
    int64_t errors() const;
    int64_t warnings() const;
    bool ok() const { return errors() == 0; }
};

}  // namespace ql
