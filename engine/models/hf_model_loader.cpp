// SPDX-License-Identifier: GPL-3.0-or-later
// load_hf_model: config.json + safetensors weights (one file or a sharded index).
#include <sys/stat.h>

#include "engine/core/errors.h"
#include "engine/io/safetensors_checkpoint.h"
#include "engine/io/safetensors_tensors.h"
#include "engine/models/model.h"

namespace ql {

std::unique_ptr<Model> load_hf_model(const std::string& folder, WeightStorage storage) {
    struct stat st {};
    if (stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw UserError(folder + ": not a model folder (expected config.json and model.safetensors)");
    const ModelConfig config = read_hf_config(folder + "/config.json");
    const SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::open(folder);
    std::map<std::string, at::Tensor> state;
    for (const std::string& name : checkpoint.names()) {
        const SafetensorsDtype dtype = checkpoint.info(name).dtype;
        // Zero-copy views where LibTorch has the dtype (AsStored keeps them, Float32Copy copies
        // into the parameters); FP8 and other codes as float32 copies.
        state[name] = torch_dtype_of(dtype) ? safetensors_tensor(checkpoint, name) : load_float32(checkpoint, name);
    }
    // As stored: no storage of the model's own (the parameters are the file's tensors).
    std::unique_ptr<Model> model = storage == WeightStorage::AsStored ? create_model_unallocated(config)
                                                                       : create_model_uninitialised(config);
    load_state(*model, state, checkpoint.path(), storage);
    return model;
}

}  // namespace ql
