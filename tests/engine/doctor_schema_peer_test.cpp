// SPDX-License-Identifier: GPL-3.0-or-later
// The Export Doctor's config-schema verdicts on unknown quantization_config keys checked by
// compressed-tensors itself (tests/peers/ct_config_validate.py in the peers venv): the doctor
// reports an error exactly where compressed-tensors' QuantizationConfig.model_validate refuses the
// config. A peer that cannot run fails the test.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/export/compressed_tensors_export.h"
#include "engine/export/export_doctor.h"
#include "engine/io/whole_file.h"
#include "tests/engine/export_test_support.h"
#include "tests/peer_paths.h"
#include "tests/peer_script.h"

namespace ql {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(DoctorSchemaPeer, UnknownKeysAreErrorsExactlyWhereCompressedTensorsRefuses) {
    const std::string python = test::peers_python();
    const std::string dir = test::temp_dir("doctor-schema-peer");
    NullJobSink sink;
    CancellationToken cancel;
    test::QuantizedTiny int4 = test::quantize_tiny(test::recipe("max", R"({"format": "int4", "granularity": "group", "group_size": 32})"));
    export_compressed_tensors(*int4.q, test::tiny_llama(), dir + "/good", false, sink, cancel);
    struct Case {
        std::string name;
        void (*edit)(json& qc);
        bool refused;  // what compressed-tensors 0.20 does (asserted for both sides)
    };
    const std::vector<Case> cases = {
        {"as-exported", [](json&) {}, false},
        {"top-level", [](json& qc) { qc["producer"] = {{"name", "someone"}}; }, false},  // QuantizationConfig: extra="ignore"
        {"scheme", [](json& qc) { qc["config_groups"]["group_0"]["weight_observer"] = "minmax"; }, true},  // extra="forbid"
        {"args", [](json& qc) { qc["config_groups"]["group_0"]["weights"]["observer_arg"] = 1; }, true},   // extra="forbid"
    };
    std::string args;
    std::map<std::string, bool> doctor_refuses;
    for (const Case& c : cases) {
        const std::string d = dir + "/" + c.name;
        fs::copy(dir + "/good", d, fs::copy_options::recursive);
        json config = json::parse(read_whole_file(d + "/config.json", "t"));
        c.edit(config["quantization_config"]);
        std::ofstream(d + "/config.json") << config.dump(2);
        const DoctorReport r = run_export_doctor(d);
        bool error = false;
        for (const DoctorFinding& f : r.findings) error = error || (f.severity == DoctorSeverity::Error && f.check == "config-schema");
        doctor_refuses[c.name] = error;
        args += " '" + d + "/config.json'";
    }
    const test::PeerOutput peer = test::run_peer_script(python, "ct_config_validate.py", args, dir);
    const std::string& output = peer.output;
    ASSERT_EQ(peer.status, 0) << output;
    for (const Case& c : cases) {
        const std::string path = dir + "/" + c.name + "/config.json";
        const bool accepted = output.find(path + " accepted") != std::string::npos;
        const bool refused = output.find(path + " refused") != std::string::npos;
        ASSERT_NE(accepted, refused) << c.name << "\n" << output;
        EXPECT_EQ(refused, c.refused) << c.name << ": compressed-tensors\n" << output;
        EXPECT_EQ(doctor_refuses[c.name], refused) << c.name << ": the doctor disagrees with compressed-tensors\n" << output;
    }
    std::printf("%s", output.c_str());
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ql
