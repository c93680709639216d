// SPDX-License-Identifier: GPL-3.0-or-later
// The flight recorder's cost (engine/train/flight_recorder.h): the trainer's own QAD loop
// (train_quantized) run for the same steps with the recorder off, recording every step and
// recording every 10 steps, timed alternately in the same iterations (the machine's speed drifts):
//   FlightRecorder/<model>/<recipe>   every1_x_off  = time recording every step / time without
//                                     every10_x_off = time recording every 10th step / without
//                                     record_ms     = the extra time of one record (every-step run)
//                                     cpu_every1_x_off, cpu_every10_x_off: the same ratios of
//                                     process CPU time (steadier on a shared machine)
// Recording every 10th step is what the GUI's runs do for ~500-step runs (steps / 50).
// Models with random weights and synthetic arithmetic batches: the demo decoder (batch 64) and a
// GPT-2-small-shaped model (batch 4 x 128 random tokens); static input amax 4.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <chrono>
#include <ctime>

#include "engine/core/engine_runtime.h"
#include "engine/data/dataset.h"
#include "engine/models/builtin_models.h"
#include "engine/models/model.h"
#include "engine/quant/quantized_model.h"
#include "engine/train/quant_trainer.h"

namespace {

using Clock = std::chrono::steady_clock;

// Wall and process CPU seconds of one training run. The CPU time is the steadier measure on a
// shared machine: other processes stretch the wall time but not (much) the work done.
struct Seconds {
    double wall = 0, cpu = 0;
    Seconds& operator+=(const Seconds& o) {
        wall += o.wall;
        cpu += o.cpu;
        return *this;
    }
};

double process_cpu_seconds() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

Seconds timed_training(ql::QuantizedModel& q, ql::Model& teacher, const ql::TrainingBatches& batches, int64_t steps,
                       int64_t record_every) {
    ql::QuantTrainingConfig c;
    c.mode = "qad";
    c.steps = steps;
    c.record_every = record_every;
    c.schedule.peak = 1e-5;
    ql::NullJobSink sink;
    ql::CancellationToken cancel;
    const auto t0 = Clock::now();
    const double c0 = process_cpu_seconds();
    ql::train_quantized(q, &teacher, batches, c, {}, sink, cancel);
    return {std::chrono::duration<double>(Clock::now() - t0).count(), process_cpu_seconds() - c0};
}

void BM_FlightRecorder(benchmark::State& state, const std::string& which, const std::string& recipe) {
    ql::initialise_engine_runtime();
    const bool demo = which == "demo";
    const ql::ModelConfig config = demo ? ql::demo_decoder_config() : ql::gpt2_small_config();
    auto student = ql::create_model(config, 1);
    auto teacher = ql::create_model(config, 1);
    ql::QuantizedModel q(*student, ql::load_recipe(recipe));
    for (const auto& l : q.layers()) l->set_input_amax(4.0f);
    ql::DataContext context;
    context.vocab_size = config.vocab_size;
    context.max_positions = config.max_positions;
    const ql::TrainingBatches batches(demo ? "synthetic:arith" : "synthetic:random-tokens", context, demo ? 64 : 4, 0,
                                      demo ? 0 : 128);
    const int64_t steps = demo ? 20 : 10;
    // One untimed run first: the first training of a process pays for the thread pool, the
    // allocator's first pages and ATen's first-call set-up, which would land on `off`.
    timed_training(q, *teacher, batches, 2, 1);
    Seconds off, every1, every10;
    for (auto _ : state) {
        off += timed_training(q, *teacher, batches, steps, 0);
        every1 += timed_training(q, *teacher, batches, steps, 1);
        every10 += timed_training(q, *teacher, batches, steps, 10);
    }
    const double n = double(state.iterations());
    state.counters["step_ms"] = 1e3 * off.wall / n / double(steps);
    state.counters["record_ms"] = 1e3 * (every1.wall - off.wall) / n / double(steps + 1);  // steps + 1 records (0 .. steps)
    state.counters["every1_x_off"] = every1.wall / off.wall;
    state.counters["every10_x_off"] = every10.wall / off.wall;
    state.counters["cpu_every1_x_off"] = every1.cpu / off.cpu;
    state.counters["cpu_every10_x_off"] = every10.cpu / off.cpu;
}

const int kRegistered = [] {
    for (const std::string which : {"demo", "gpt2_small"})
        for (const std::string recipe : {"NVFP4_DEFAULT", "MXFP4"})
            benchmark::RegisterBenchmark(("FlightRecorder/" + which + "/" + recipe).c_str(), BM_FlightRecorder, which, recipe)
                ->Unit(benchmark::kMillisecond)
                ->Iterations(1)
                ->UseRealTime();
    return 0;
}();

}  // namespace
