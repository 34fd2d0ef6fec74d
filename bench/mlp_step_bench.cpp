// Benchmark: the 784-256-10 MLP training step (ReLU, cross-entropy, Adam, batch 64) from
// examples/fashion_mlp.json, in a prepared session, at 1, 8 and 64 steps per submission. Prints
// one JSON object per configuration. PyTorch's side of the comparison runs in the same job
// (bench/peer/torch_mlp.py); bench/run_mlp_bench.sh runs both and bench/RESULTS.md records them.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "api/session.h"
#include "runtime/backends/select.h"
#include "webir/passes/append_train_step.h"

using namespace scellis;

int main(int argc, char** argv) {
  std::string file = argc > 1 ? argv[1] : "examples/fashion_mlp.json";
  std::string backend_name = argc > 2 ? argv[2] : "auto";
  int total_steps = argc > 3 ? std::atoi(argv[3]) : 512;
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();

  for (int per_run : {1, 8, 64}) {
    auto sel = runtime::SelectBackend({.requested = backend_name, .allow_software_adapter = true});
    if (!sel.ok()) {
      std::cerr << sel.errors().front().Format() << "\n";
      return 2;
    }
    std::string backend = sel->backend;
    pipeline::CompileOptions options;
    options.lower.tier = policy::Tier::kProd;
    auto s = api::Session::Prepare(text.str(), options, std::move(sel.value()));
    if (!s.ok()) {
      std::cerr << s.errors().front().Format(file) << "\n";
      return 2;
    }
    // Fresh random batches (pixels in [0, 1), labels 0..9), made before timing.
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> pixel(0, 1);
    std::vector<runtime::Feeds> feeds(static_cast<size_t>(per_run));
    int64_t step = 0;
    auto fill = [&] {
      for (auto& f : feeds) {
        HostTensor x = HostTensor::Zeros(MakeType({64, 784}));
        for (float& v : x.view<float>()) v = pixel(rng);
        HostTensor y = HostTensor::Zeros(MakeType({64}));
        for (float& v : y.view<float>()) v = static_cast<float>(rng() % 10);
        f["images"] = std::move(x);
        f["labels"] = std::move(y);
      }
    };
    fill();
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
    int runs = std::max(1, total_steps / per_run);
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < runs; ++i) {
      set_steps();
      auto r = s.value()->Run(feeds, {webir::kLossOutput});
      if (!r.ok()) {
        std::cerr << r.errors().front().Format() << "\n";
        return 4;
      }
    }
    double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    std::printf(
        "{\"engine\": \"scellis\", \"backend\": \"%s\", \"steps_per_run\": %d, \"steps\": %d, "
        "\"us_per_step\": %.2f}\n",
        backend.c_str(), per_run, runs * per_run, us / (runs * per_run));
    std::fflush(stdout);
  }
  return 0;
}
