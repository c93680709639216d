// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/fakequant_export.h"

#include <ATen/Functions.h>

#include <map>

#include "engine/core/errors.h"
#include "engine/export/export_folder.h"
#include "engine/io/safetensors_checkpoint.h"
#include "engine/io/safetensors_tensors.h"
#include "engine/quant/quant_plan.h"
#include "engine/quant/rotation.h"

namespace ql {
namespace {

bool keep_source_file(const std::string& name) {
    return !is_hf_weights_file(name) && name != "hf_quant_config.json" && name.rfind("quantlab_", 0) != 0 &&
           name.rfind("ptq_report", 0) != 0 && name.rfind("train_report", 0) != 0 && name.rfind("training_state", 0) != 0;
}

}  // namespace

FolderExportResult export_fakequant(const QuantizedModel& q, const std::string& source_folder, const std::string& out,
                                    bool force, JobSink& sink, const CancellationToken& cancel, const FolderCheck& before_commit) {
    FolderExportResult result;
    std::map<std::string, at::Tensor> replaced;  // file name -> dequantized weight in file layout
    int64_t inputs = 0, folded = 0, unrotated = 0;
    std::map<const QuantizableLayer*, HadamardRotation> online;
    for (const auto& [layer, r] : online_rotations(q))
        if (layer->input_rotation) online[layer] = r;
    for (const auto& lp : q.layers()) {
        LayerQuantizer& l = *lp;
        cancel.throw_if_cancelled();
        if (l.input_enabled()) ++inputs;
        const auto rotation = online.find(&l.layer());
        if (!l.weight_enabled() && rotation == online.end()) continue;
        at::Tensor w = (l.weight_enabled() ? l.quantized_weight() : l.layer().weight.detach()).to(at::kFloat);
        if (l.pre_quant_scale().defined()) {
            // (x * s) W^T == x (W diag(s))^T: fold the per-input-feature scale into the columns.
            const at::Tensor& s = l.pre_quant_scale();
            w = l.layer().kind() == LayerKind::Conv2d ? w * s.view({1, -1, 1, 1}) : w * s;
            ++folded;
        }
        if (rotation != online.end()) {
            // x -> x H before the layer: ((x H) W^T) = x (W H)^T, a plain weight again.
            w = fold_input_rotation(w, rotation->second);
            ++unrotated;
        }
        const auto* linear = dynamic_cast<const LinearLayer*>(&l.layer());
        replaced[l.name() + ".weight"] = (linear && linear->file_layout_in_out ? w.t() : w).contiguous();
    }
    if (replaced.empty()) throw UserError("fakequant export: the model has no quantized weight");
    if (inputs > 0)
        result.warnings.push_back(std::to_string(inputs) +
                                  " layers quantize their inputs; a fake-quantized checkpoint holds weights only, so "
                                  "activations run in full precision where it is loaded");
    if (folded > 0)
        result.warnings.push_back(std::to_string(folded) +
                                  " layers have a pre_quant_scale (AWQ / SmoothQuant); it is folded into their weight columns");
    if (unrotated > 0)
        result.warnings.push_back(std::to_string(unrotated) +
                                  " layers rotate their input online (Hadamard); the rotation is folded into their weights "
                                  "(W H: the same product up to float rounding, no longer on the format's grid)");
    for (const auto& kv : q.kv_caches())
        if (kv->rotates_qk()) {
            result.warnings.push_back("the Q/K rotation before the KV cache cancels in the attention scores and is left out");
            break;
        }
    for (const auto& kv : q.kv_caches())
        if (kv->configured() && kv->enabled()) {
            result.warnings.push_back("the KV-cache quantization (" + kv->settings().describe() +
                                      ") is not part of a fake-quantized checkpoint: K and V run in full precision where it is loaded");
            break;
        }

    // The source's dtypes, where it has the tensor.
    std::map<std::string, SafetensorsDtype> source_dtype;
    try {
        const SafetensorsCheckpoint c = SafetensorsCheckpoint::open(source_folder);
        for (const std::string& n : c.names()) source_dtype[n] = c.info(n).dtype;
    } catch (const UserError&) {
        // A folder without safetensors (e.g. a model built in memory): float32 throughout.
    }
    std::vector<at::Tensor> keep_alive;
    std::vector<SafetensorsWriteEntry> entries;
    bool narrowed = false;
    for (const auto& [name, t] : q.model().file_state()) {
        at::Tensor v = replaced.count(name) ? replaced[name] : t;
        const auto it = source_dtype.find(name);
        if (it != source_dtype.end()) {
            if (const auto dt = torch_dtype_of(it->second); dt && at::isFloatingType(*dt) && *dt != v.scalar_type()) {
                narrowed = narrowed || (replaced.count(name) && *dt != at::kDouble);
                v = v.to(*dt);
            }
        }
        keep_alive.push_back(v.to(at::kCPU).contiguous());  // files are written from CPU copies
        entries.push_back(safetensors_entry(name, keep_alive.back()));
    }
    if (narrowed)
        result.warnings.push_back("the source stores weights in a narrower dtype than float32: dequantized values are rounded to it");

    cancel.throw_if_cancelled();
    sink.progress(0, 1, "write");
    ExportFolder folder(out, force);
    folder.copy_from(source_folder, keep_source_file);
    write_safetensors_checkpoint(folder.file(""), std::move(entries), 5ull << 30, {{"format", "pt"}});
    folder.write("quantlab_recipe.json", recipe_to_json(q.recipe()));
    cancel.throw_if_cancelled();
    if (before_commit) before_commit(folder.partial_path());
    folder.commit();
    sink.progress(1, 1, "write");
    result.files = folder.files();
    result.bytes = folder.bytes();
    return result;
}

}  // namespace ql
