// Benchmark: fp32 matmul through the engine API, one prepared session per shape with both
// operands resident (params given their starting values, so no run uploads them). The first run
// compiles the pipelines and is the check: sampled outputs against a float64 dot product on the
// host. Then runs back to back for --warm-ms (default 1000; bench/warm_up.h says why: the row's
// cold_tflops is the first of them), then RUNS timed runs, each `steps` matmuls in one submission
// (enough to cover the submission's own cost on small shapes; --steps=N forces N); the median run's
// time per matmul gives TFLOP/s. With
// --gpu-timestamps each dispatch is timed on the GPU too, and a row also gives the kernel's own
// time and TFLOP/s, and the TFLOP/s by each run's span on the GPU (as the peer's CUDA events time
// cuBLAS: no submission or wait in it). Prints one JSON object per shape, with the schedule the
// plan chose.
//
//   scellis_bench_matmul [--backend=webgpu] [--runs=10] [--quick] [--tier=prod] [--steps=N]
//                        [--gpu-timestamps] [--warm-ms=N]
//                        [--schedule=auto|TMxTNxTK/BMxBN[/vec4][/pf] ...] [--shape=MxKxN ...]
// --shape replaces the shapes with the ones given (A is M x K, B is K x N). Each --schedule adds a
// pass over every shape with that schedule forced (where it fits the shape; else the plan's own
// choice, as the printed "schedule" says); without one, the plan chooses.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "api/session.h"
#include "bench/warm_up.h"
#include "runtime/backends/select.h"

using namespace scellis;

namespace {

struct MatmulCase {
  std::string name;
  int64_t m, k, n;
};

// Params take a declared initializer; the session's starting values replace it (Random below).
Json Init(int seed) {
  return {{"kind", "uniform"}, {"low", -1}, {"high", 1}, {"seed", seed}};
}

std::string Doc(const MatmulCase& c) {
  Json doc = {
      {"version", 2},
      {"nodes",
       {{{"id", 0}, {"op", "param"}, {"name", "a"}, {"shape", {c.m, c.k}}, {"init", Init(1)}},
        {{"id", 1}, {"op", "param"}, {"name", "b"}, {"shape", {c.k, c.n}}, {"init", Init(2)}},
        {{"id", 2}, {"op", "matmul"}, {"a", 0}, {"b", 1}}}},
      {"outputs", {{{"name", "y"}, {"id", 2}}}}};
  return doc.dump();
}

// "128x128x16/8x8/vec4" -> the tiled schedule it names; "auto" -> none (the plan chooses).
std::optional<std::optional<kernel::MatmulSchedule>> ParseSchedule(const std::string& name) {
  if (name == "auto") return std::optional<kernel::MatmulSchedule>();
  kernel::MatmulSchedule s;
  char tail[16] = {0};
  const int fields = std::sscanf(name.c_str(), "%dx%dx%d/%dx%d%15s", &s.tile_m, &s.tile_n,
                                 &s.tile_k, &s.block_m, &s.block_n, tail);
  const std::string options = fields == 6 ? tail : "";
  if (fields < 5 ||
      (options != "" && options != "/vec4" && options != "/pf" && options != "/vec4/pf"))
    return std::nullopt;
  s.vec4_a = s.vec4_b = options.rfind("/vec4", 0) == 0;
  s.prefetch = options.size() >= 3 && options.compare(options.size() - 3, 3, "/pf") == 0;
  return std::optional<kernel::MatmulSchedule>(s);
}

HostTensor Random(int64_t rows, int64_t cols, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  HostTensor t = HostTensor::Zeros(MakeType({rows, cols}));
  for (float& v : t.view<float>()) v = u(rng);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "webgpu";
  int runs = 10;
  int forced_steps = 0;  // 0: chosen per shape
  int warm_ms = 1000;
  bool quick = false;
  bool gpu_timestamps = false;
  policy::Tier tier = policy::Tier::kProd;
  std::vector<std::optional<kernel::MatmulSchedule>> schedules;
  std::vector<MatmulCase> shapes;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--shape=", 0) == 0) {
      MatmulCase c{arg.substr(8), 0, 0, 0};
      long long m = 0, k = 0, n = 0;
      if (std::sscanf(c.name.c_str(), "%lldx%lldx%lld", &m, &k, &n) != 3 || m < 1 || k < 1 ||
          n < 1) {
        std::cerr << "--shape: MxKxN, each at least 1\n";
        return 2;
      }
      c.m = m, c.k = k, c.n = n;
      shapes.push_back(c);
    } else if (arg.rfind("--schedule=", 0) == 0) {
      auto forced = ParseSchedule(arg.substr(11));
      if (!forced) {
        std::cerr << "--schedule: auto, or TMxTNxTK/BMxBN with an optional /vec4 and /pf\n";
        return 2;
      }
      schedules.push_back(*forced);
    } else if (arg.rfind("--backend=", 0) == 0)
      backend = arg.substr(10);
    else if (arg.rfind("--runs=", 0) == 0)
      runs = std::max(1, std::atoi(arg.c_str() + 7));
    else if (arg.rfind("--steps=", 0) == 0)
      forced_steps = std::clamp(std::atoi(arg.c_str() + 8), 1, 1024);
    else if (arg.rfind("--warm-ms=", 0) == 0)
      warm_ms = std::clamp(std::atoi(arg.c_str() + 10), 0, 60000);
    else if (arg == "--gpu-timestamps")
      gpu_timestamps = true;
    else if (arg == "--quick")
      quick = true;
    else if (arg == "--tier=debug")
      tier = policy::Tier::kDebug;
    else if (arg != "--tier=prod") {
      std::cerr << "usage: scellis_bench_matmul [--backend=B] [--runs=N] [--quick] "
                   "[--tier=prod|debug] [--steps=N] [--gpu-timestamps] [--warm-ms=N] "
                   "[--schedule=auto|TMxTNxTK/BMxBN[/vec4][/pf] ...] "
                   "[--shape=MxKxN ...]\n";
      return 2;
    }
  }
  const std::vector<MatmulCase> cases =
      !shapes.empty() ? shapes
      : quick         ? std::vector<MatmulCase>{{"64x784x256", 64, 784, 256},
                                                {"129x65x33", 129, 65, 33},
                                                {"256^3", 256, 256, 256}}
                      : std::vector<MatmulCase>{
                            {"1024^3", 1024, 1024, 1024},       {"2048^3", 2048, 2048, 2048},
                            {"4096^3", 4096, 4096, 4096},       {"64x784x256", 64, 784, 256},
                            {"8192x784x4096", 8192, 784, 4096}, {"8192x4096x4096", 8192, 4096, 4096}};
  if (schedules.empty()) schedules.push_back(std::nullopt);
  int failures = 0;
  for (const std::optional<kernel::MatmulSchedule>& forced : schedules)
    for (const MatmulCase& c : cases) {
      auto sel = runtime::SelectBackend(
          {.requested = backend, .allow_software_adapter = true, .gpu_timestamps = gpu_timestamps});
      if (!sel.ok()) {
        std::cerr << sel.errors().front().Format() << "\n";
        return 2;
      }
      const std::string device = sel->profile.device;
      std::mt19937 rng(7);
      runtime::Feeds initial = {{"a", Random(c.m, c.k, rng)}, {"b", Random(c.k, c.n, rng)}};
      pipeline::CompileOptions options;
      options.lower.tier = tier;
      options.matmul_schedule = forced;
      auto s = api::Session::Prepare(Doc(c), options, std::move(sel.value()), initial);
      if (!s.ok()) {
        std::cerr << c.name << ": " << s.errors().front().Format() << "\n";
        return 2;
      }
      api::Session& session = **s;
      std::string schedule;
      for (const kernel::Kernel& k : session.compiled().module->kernels)
        if (k.matmul_schedule) schedule = k.matmul_schedule->Name();

      // Warm-up (pipelines compiled, buffers touched) and the check.
      auto first = session.Run({{}}, {"y"});
      if (!first.ok()) {
        std::cerr << c.name << ": " << first.errors().front().Format() << "\n";
        return 2;
      }
      const std::vector<float> y = first->watched.front().second.front().ToFloats();
      const std::vector<float> a = initial["a"].ToFloats(), b = initial["b"].ToFloats();
      double worst = 0;  // |error| over sum |a*b|, the conformance runner's measure for a matmul
      std::uniform_int_distribution<int64_t> row(0, c.m - 1), col(0, c.n - 1);
      for (int sample = 0; sample < 64; ++sample) {
        const int64_t r = row(rng), q = col(rng);
        double exact = 0, magnitude = 0;
        for (int64_t k = 0; k < c.k; ++k) {
          const double term = double{a[r * c.k + k]} * double{b[k * c.n + q]};
          exact += term;
          magnitude += std::abs(term);
        }
        worst = std::max(worst, std::abs(y[r * c.n + q] - exact) / std::max(magnitude, 1e-30));
      }
      const bool correct = worst <= 1e-4;  // the prod tier's rtol
      failures += !correct;

      // Enough matmuls per submission for about 0.2 TFLOP of work, 1 to 64 of them.
      const double flops =
          2.0 * static_cast<double>(c.m) * static_cast<double>(c.k) * static_cast<double>(c.n);
      const int steps = forced_steps > 0
                            ? forced_steps
                            : static_cast<int>(std::clamp(std::ceil(2e11 / flops), 1.0, 64.0));
      const std::vector<runtime::Feeds> feeds(static_cast<size_t>(steps));
      const auto warm = bench::WarmUpRuns(session, feeds, warm_ms, c.name);
      if (!warm) return 2;
      std::vector<double> per_matmul_s;
      double gpu_busy_us = 0, gpu_span_us = 0, gpu_dispatches = 0;
      for (int i = 0; i < runs; ++i) {
        const auto start = std::chrono::steady_clock::now();
        auto r = session.Run(feeds, {});
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!r.ok()) {
          std::cerr << c.name << ": " << r.errors().front().Format() << "\n";
          return 2;
        }
        per_matmul_s.push_back(seconds / steps);
        if (r->stats.contains("gpu_timestamps")) {
          gpu_busy_us += r->stats["gpu_timestamps"]["busy_us"].get<double>();
          gpu_span_us += r->stats["gpu_timestamps"]["span_us"].get<double>();
          gpu_dispatches += r->stats["gpu_timestamps"]["dispatches"].get<double>();
        }
      }
      std::sort(per_matmul_s.begin(), per_matmul_s.end());
      const double median = per_matmul_s[per_matmul_s.size() / 2];
      Json row_json = {{"shape", c.name},
                       {"m", c.m},
                       {"k", c.k},
                       {"n", c.n},
                       {"backend", session.selection().backend},
                       {"device", device},
                       {"tier", policy::TierName(tier)},
                       {"schedule", schedule},
                       {"forced", forced ? forced->Name() : "auto"},
                       {"steps_per_submission", steps},
                       {"runs", runs},
                       {"warm_up_s", warm->warm_s},
                       {"cold_tflops", flops / warm->cold_s_per_step / 1e12},
                       {"median_ms", median * 1e3},
                       {"best_ms", per_matmul_s.front() * 1e3},
                       {"tflops", flops / median / 1e12},
                       {"max_rel_error", worst},
                       {"correct", correct}};
      if (gpu_dispatches > 0) {
        // The kernel's own time per matmul and the TFLOP/s it alone reaches; and by the span from
        // a run's first dispatch to its last one's end (the gaps between kernels counted, as the
        // peer's events count them).
        const double kernel_us = gpu_busy_us / (static_cast<double>(runs) * steps);
        const double span_us = gpu_span_us / (static_cast<double>(runs) * steps);
        row_json.update(
            {{"gpu_ms", kernel_us * 1e-3},
             {"gpu_tflops", flops / (kernel_us * 1e-6) / 1e12},
             {"gpu_span_tflops", flops / (span_us * 1e-6) / 1e12},
             {"dispatches_per_step", gpu_dispatches / (static_cast<double>(runs) * steps)}});
      }
      std::cout << row_json.dump() << std::endl;
    }
  return failures ? 1 : 0;
}
