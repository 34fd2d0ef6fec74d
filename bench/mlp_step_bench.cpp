// Benchmark: the 784-256-10 MLP training step (ReLU, cross-entropy, Adam, batch 64) from
// examples/fashion_mlp.json, in a prepared session, at 1, 8 and 64 steps per submission, with
// runs one at a time and with two in flight (api::Session::Start, as the trainer runs them), and
// with each step's batch fed from the host or gathered on the device from a training set of
// 60 000 examples held there (block::LowerOptions::dataset_examples_on_device, as the trainer
// runs on a GPU: each step is fed its 64 row indices).
// Prints one JSON object per configuration. PyTorch's side of the comparison runs in the same job
// (bench/peer/torch_mlp.py); bench/run_mlp_bench.sh runs both and bench/RESULTS.md records them.
//
// With a fourth argument `--gpu-timestamps` every dispatch is also timed on the GPU (each in a
// compute pass of its own, so the wall time is not the headline figure's): per step, the kernels'
// own time (busy), the GPU's idle time between dependent dispatches (gaps) and the wall time
// beside them show how much of a dispatch's cost is the host's and how much the GPU's.
// SCELLIS_BENCH_DISABLE_PASSES (comma-separated pass names) leaves optional passes out.
// SCELLIS_BENCH_LEAVE_OUT (comma-separated indices into the step's dispatches: its kernels in the
// order `scellis lower --to=kernel` lists them, one dispatch each where none is cut into tiles)
// records every step without those dispatches
// (runtime::RunOptions::leave_out_dispatches; the results are wrong by design): what the step
// saves without a dispatch is what that dispatch costs in the stream, without the pass of its own
// per dispatch that GPU timestamps add. Rows then carry "left_out".
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <vector>

#include "api/session.h"
#include "runtime/backends/select.h"
#include "webir/passes/append_train_step.h"

using namespace scellis;

int main(int argc, char** argv) {
  std::string file = argc > 1 ? argv[1] : "examples/fashion_mlp.json";
  std::string backend_name = argc > 2 ? argv[2] : "auto";
  int total_steps = argc > 3 ? std::atoi(argv[3]) : 512;
  const bool timed = argc > 4 && std::string(argv[4]) == "--gpu-timestamps";
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();

  runtime::RunOptions run_options;
  const char* left_out = std::getenv("SCELLIS_BENCH_LEAVE_OUT");
  if (left_out) {
    std::stringstream indices(left_out);
    for (std::string index; std::getline(indices, index, ',');) {
      char* end = nullptr;
      const long i = std::strtol(index.c_str(), &end, 10);
      if (index.empty() || *end != '\0' || i < 0) {
        std::cerr << "SCELLIS_BENCH_LEAVE_OUT: \"" << index << "\" is not a dispatch index\n";
        return 2;
      }
      run_options.leave_out_dispatches.push_back(static_cast<int>(i));
    }
  }

  constexpr int64_t kSetExamples = 60000;
  for (const bool on_device : {false, true})
    for (int per_run : {1, 8, 64}) {
      auto sel = runtime::SelectBackend(
          {.requested = backend_name, .allow_software_adapter = true, .gpu_timestamps = timed});
      if (!sel.ok()) {
        std::cerr << sel.errors().front().Format() << "\n";
        return 2;
      }
      std::string backend = sel->backend;
      pipeline::CompileOptions options;
      options.lower.tier = policy::Tier::kProd;
      // SCELLIS_BENCH_DISABLE_PASSES=a,b leaves optional passes out (the step's fusions, say), so
      // the fused and unfused steps are timed in one job.
      if (const char* disabled = std::getenv("SCELLIS_BENCH_DISABLE_PASSES")) {
        std::stringstream names(disabled);
        for (std::string name; std::getline(names, name, ',');)
          if (!name.empty()) options.disabled_passes.insert(name);
      }
      // Fresh random data (pixels in [0, 1), labels 0..9), made before timing: each step's batch,
      // or the set held on the device and each step's rows of it.
      std::mt19937 rng(1234);
      std::uniform_real_distribution<float> pixel(0, 1);
      auto random_images = [&](int64_t rows) {
        HostTensor x = HostTensor::Zeros(MakeType({rows, 784}));
        for (float& v : x.view<float>()) v = pixel(rng);
        return x;
      };
      auto random_labels = [&](int64_t rows) {
        HostTensor y = HostTensor::Zeros(MakeType({rows}));
        for (float& v : y.view<float>()) v = static_cast<float>(rng() % 10);
        return y;
      };
      runtime::Feeds set;
      if (on_device) {
        options.lower.dataset_examples_on_device = kSetExamples;
        set[webir::DatasetTableName("images")] = random_images(kSetExamples);
        set[webir::DatasetTableName("labels")] = random_labels(kSetExamples);
      }
      auto s = api::Session::Prepare(text.str(), options, std::move(sel.value()), set, run_options);
      if (!s.ok()) {
        std::cerr << s.errors().front().Format(file) << "\n";
        return 2;
      }
      std::vector<runtime::Feeds> feeds(static_cast<size_t>(per_run));
      int64_t step = 0;
      for (auto& f : feeds) {
        if (on_device) {
          HostTensor rows = HostTensor::Zeros(MakeType({64}, DType::kI32));
          for (int32_t& r : rows.view<int32_t>()) r = static_cast<int32_t>(rng() % kSetExamples);
          f[webir::kBatchIndexInput] = std::move(rows);
        } else {
          f["images"] = random_images(64);
          f["labels"] = random_labels(64);
        }
      }
      auto set_steps = [&] {
        for (auto& f : feeds) {
          const float number = static_cast<float>(++step);
          f[webir::kStepInput] = HostTensor::FromFloats(MakeType({}), {&number, 1});
        }
      };
      for (int warm = 0; warm < 3; ++warm) {
        set_steps();
        auto r = s.value()->Run(feeds, {webir::kLossOutput});
        if (!r.ok()) {
          std::cerr << r.errors().front().Format() << "\n";
          return 4;
        }
      }
      // Sequential runs (each waits for its losses before the next is recorded), then two in
      // flight (the next run recorded while the device runs the one before: how the trainer runs).
      for (const size_t in_flight : {size_t{1}, runtime::kMaxRunsInFlight}) {
        int runs = std::max(1, total_steps / per_run);
        double busy_us = 0, gaps_us = 0, span_us = 0, dispatches = 0, host_record_us = 0;
        // The host's part split (the backend's stats), and what a run costs outside the backend's
        // own wall time (the session's checks and bookkeeping around it; sequential runs only).
        double host_setup_us = 0, host_send_us = 0, host_feed_us = 0, host_encode_us = 0,
               outside_us = 0, copies = 0;
        std::vector<double> by_dispatch;  // each of a step's dispatches, summed over the steps
        auto collect = [&](const runtime::StepsResult& r, double run_us) {
          const auto stat_us = [&](const char* key) {
            return r.stats.contains(key) ? 1e3 * r.stats[key].get<double>() : 0.0;
          };
          host_record_us += stat_us("host_record_ms");
          host_setup_us += stat_us("host_setup_ms");
          host_send_us += stat_us("host_send_ms");
          host_feed_us += stat_us("host_feed_ms");
          host_encode_us += stat_us("host_encode_ms");
          if (r.stats.contains("copies")) copies += r.stats["copies"].get<double>();
          if (in_flight == 1 && r.stats.contains("wall_ms"))
            outside_us += run_us - stat_us("wall_ms");
          if (r.stats.contains("gpu_timestamps")) {
            const Json& g = r.stats["gpu_timestamps"];
            busy_us += g["busy_us"].get<double>();
            gaps_us += g["gaps_us"].get<double>();
            span_us += g["span_us"].get<double>();
            dispatches += g["dispatches"].get<double>();
            const Json& each = g["dispatch_us"];
            const size_t per_step = each.size() / static_cast<size_t>(per_run);
            by_dispatch.resize(per_step);
            for (size_t d = 0; d < each.size(); ++d)
              by_dispatch[d % per_step] += each[d].get<double>();
          }
        };
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < runs; ++i) {
          set_steps();
          const auto run_start = std::chrono::steady_clock::now();
          if (in_flight == 1) {
            auto r = s.value()->Run(feeds, {webir::kLossOutput});
            if (!r.ok()) {
              std::cerr << r.errors().front().Format() << "\n";
              return 4;
            }
            collect(*r, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() -
                                                                  run_start)
                            .count());
            continue;
          }
          Status started = s.value()->Start(feeds, {webir::kLossOutput});
          if (!started.ok()) {
            std::cerr << started.first().Format() << "\n";
            return 4;
          }
          // Two in flight: the oldest is finished once the next has started; after the last run,
          // every one.
          while (s.value()->runs_in_flight() >= in_flight ||
                 (i + 1 == runs && s.value()->runs_in_flight() > 0)) {
            auto r = s.value()->Finish();
            if (!r.ok()) {
              std::cerr << r.errors().front().Format() << "\n";
              return 4;
            }
            collect(*r, 0);
          }
        }
        double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                        .count();
        const double steps = runs * per_run;
        std::printf(
            "{\"engine\": \"scellis\", \"backend\": \"%s\", \"steps_per_run\": %d, "
            "\"runs_in_flight\": %zu, \"batches\": \"%s\", \"steps\": %d, \"us_per_step\": %.2f",
            backend.c_str(), per_run, in_flight, on_device ? "device" : "host", runs * per_run,
            us / steps);
        // The host's own part of each step: feeds queued and dispatches recorded, before the wait.
        if (host_record_us > 0) {
          std::printf(
              ", \"host_record_us_per_step\": %.2f, \"host_setup_us_per_step\": %.2f, "
              "\"host_send_us_per_step\": %.2f, \"host_feed_us_per_step\": %.2f, "
              "\"host_encode_us_per_step\": %.2f",
              host_record_us / steps, host_setup_us / steps, host_send_us / steps,
              host_feed_us / steps, host_encode_us / steps);
          if (in_flight == 1)
            std::printf(", \"outside_backend_us_per_step\": %.2f", outside_us / steps);
          // Buffer copies between the dispatches (a watched value's, to the run's history).
          std::printf(", \"copies_per_step\": %.3f", copies / steps);
        }
        if (!run_options.leave_out_dispatches.empty())
          std::printf(", \"left_out\": \"%s\"", left_out);
        if (timed) {
          std::printf(
              ", \"gpu_timestamps\": true, \"timed_dispatches_per_step\": %.1f, "
              "\"gpu_busy_us_per_step\": %.2f, \"gpu_gaps_us_per_step\": %.2f, "
              "\"gpu_span_us_per_step\": %.2f",
              dispatches / steps, busy_us / steps, gaps_us / steps, span_us / steps);
          std::printf(", \"gpu_us_per_dispatch_of_a_step\": [");
          for (size_t d = 0; d < by_dispatch.size(); ++d)
            std::printf("%s%.2f", d ? ", " : "", by_dispatch[d] / steps);
          std::printf("]");
        }
        std::printf("}\n");
        std::fflush(stdout);
      }
    }
  return 0;
}
