// Benchmark: bandwidth-bound kernels through the engine API, one prepared session per case with its
// inputs resident (params given their starting values, so no run uploads them):
//   copy   y = -x                       (the device's bandwidth reference: one load, one store)
//   chain  y = relu(a * b + c) * 0.5    (one fused kernel over three inputs)
//   sum    y = sum(x)                   (a fixed order: see the op's determinism text)
//   rowsum y = sum(x, axis=1), x of kRowsumRows rows (few outputs, long contiguous lines)
//   colsum y = sum(x, axis=0), x of kColsumColumns columns (few outputs, long strided columns)
// copy and chain run twice: with the schedule-elementwise pass (vec4, grid-stride) and without it
// (one element per invocation), so the table shows what the wide kernel gains; sum likewise with
// the schedule-sum pass (in prod: a grid of chunks, then their partial sums) and without it (the
// one-workgroup 256-lane tree of kernel/ref/tree_sum.h, debug's order), and rowsum with it (each
// row such a wide sum) and without it (one invocation per row walking its line). The first run is
// the check: every output against a float64 computation on the host. Steps per submission are
// chosen from a run of one step without outputs so that a submission takes about 50 ms, at most
// 64 (the check's read-back must not count, or a large case gets one short dispatch per
// submission and a GPU that idles between them; --steps=N forces N). Then submissions of that
// many steps run back to back for --warm-ms (default 1000; bench/warm_up.h says why: the row's
// cold_gb_per_s is the first of them), then RUNS timed ones; the median run's time per step gives
// GB/s from the bytes the step must move (each input read once, the output written once).
//
// --schedules=256x4,128x8 runs copy and chain wide once per listed schedule (workgroup size x
// vectors per invocation, kernel::Module::elementwise_schedule_override) instead of the pass's
// choice alone. --gpu-timestamps times each dispatch on the GPU too (a row then gives the
// kernel's own time per step beside the wall time, each of a step's dispatches' mean time in
// order, gpu_dispatch_us — a wide sum's chunks, then its finish — and the GPU's idle time between
// them per step, gpu_gaps_us_per_step). --ballast-mib=N keeps N MiB of other buffers
// on the device, untouched, while each case runs (a session prepared beside the case's): whether
// a kernel slows with what the device holds or only with what the kernel itself touches.
// --kinds=copy,chain runs only those kinds. --sum-chunks=16384,65536 runs sum and rowsum wide once
// per listed chunk (elements each workgroup of the first dispatch sums,
// kernel::Module::sum_chunk_override) instead of the pass's choice alone. --series adds each timed
// run's time per step, in the order run (run_ms; gpu_run_us with --gpu-timestamps): whether a slow
// median is a slow kernel or a transient the first runs pay. --settle-ms=N pauses N ms before the
// timed runs.
//
//   scellis_bench_elementwise [--backend=webgpu] [--runs=10] [--quick] [--tier=prod]
//                             [--schedules=WGxP,...] [--gpu-timestamps] [--log2=N]
//                             [--ballast-mib=N] [--kinds=K,...] [--steps=N] [--series]
//                             [--settle-ms=N] [--warm-ms=N] [--sum-chunks=N,...]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "api/session.h"
#include "bench/warm_up.h"
#include "runtime/backends/select.h"

using namespace scellis;

namespace {

struct Case {
  std::string kind;  // copy, chain, sum, rowsum
  int log2_n;
  bool wide;  // the schedule-elementwise pass on (copy, chain), the schedule-sum pass on (sums)
  std::optional<kernel::ElementwiseSchedule> forced;  // wide: in place of the pass's choice
  std::optional<int64_t> sum_chunk;                   // sum, rowsum: in place of the pass's chunk
};

// "a,b,c" -> {"a", "b", "c"}.
std::vector<std::string> Items(const std::string& list) {
  std::vector<std::string> items;
  for (size_t at = 0, comma = 0; comma != std::string::npos; at = comma + 1) {
    comma = list.find(',', at);
    items.push_back(list.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
  }
  return items;
}

// "256x4" -> workgroup size 256, 4 vectors per invocation.
std::optional<kernel::ElementwiseSchedule> ParseSchedule(const std::string& text) {
  kernel::ElementwiseSchedule s;
  const size_t x = text.find('x');
  if (x == std::string::npos) return std::nullopt;
  s.workgroup_size = std::atoi(text.substr(0, x).c_str());
  s.per_invocation = std::atoi(text.substr(x + 1).c_str());
  if (s.workgroup_size < 1 || s.workgroup_size > 1024 || s.per_invocation < 1 ||
      s.per_invocation > 16)
    return std::nullopt;
  return s;
}

// rowsum's rows: sum over the last axis of [16, n / 16]; colsum's columns: sum over the first
// axis of [n / 64, 64].
constexpr int64_t kRowsumRows = 16;
constexpr int64_t kColsumColumns = 64;

bool IsSum(const Case& c) {
  return c.kind == "sum" || c.kind == "rowsum" || c.kind == "colsum";
}

std::vector<int64_t> InputShape(const Case& c, int64_t n) {
  if (c.kind == "rowsum") return {kRowsumRows, n / kRowsumRows};
  if (c.kind == "colsum") return {n / kColsumColumns, kColsumColumns};
  return {n};
}

Json Param(int id, const std::string& name, const std::vector<int64_t>& shape) {
  // The session's starting values replace the declared initializer.
  return {{"id", id},
          {"op", "param"},
          {"name", name},
          {"shape", shape},
          {"init", {{"kind", "uniform"}, {"low", -1}, {"high", 1}, {"seed", id + 1}}}};
}

Json Doc(const Case& c, int64_t n) {
  Json nodes;
  if (c.kind == "copy") {
    nodes = {Param(0, "x", {n}), {{"id", 1}, {"op", "neg"}, {"a", 0}}};
  } else if (c.kind == "chain") {
    nodes = {Param(0, "a", {n}),
             Param(1, "b", {n}),
             Param(2, "c", {n}),
             {{"id", 3}, {"op", "mul"}, {"a", 0}, {"b", 1}},
             {{"id", 4}, {"op", "add"}, {"a", 3}, {"b", 2}},
             {{"id", 5}, {"op", "relu"}, {"a", 4}},
             {{"id", 6}, {"op", "mul"}, {"a", 5}, {"scalar", 0.5}}};
  } else if (c.kind == "rowsum" || c.kind == "colsum") {
    nodes = {Param(0, "x", InputShape(c, n)),
             {{"id", 1}, {"op", "sum"}, {"a", 0}, {"axis", c.kind == "rowsum" ? 1 : 0}}};
  } else {
    nodes = {Param(0, "x", {n}), {{"id", 1}, {"op", "sum"}, {"a", 0}}};
  }
  const int out = nodes.back()["id"].get<int>();
  return {{"version", 2}, {"nodes", nodes}, {"outputs", {{{"name", "y"}, {"id", out}}}}};
}

std::vector<float> Random(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = u(rng);
  return v;
}

// The worst error of `y` against the float64 result, relative to what the case allows: the
// elementwise ops round once per step (the GPU may fuse the multiply-add), a sum's error is bounded
// by n * eps * sum |x|.
double WorstError(const Case& c, const std::vector<std::vector<float>>& in,
                  const std::vector<float>& y) {
  if (IsSum(c)) {
    // Each output (one for sum, one per row or column) against its line's float64 sum: output r's
    // elements are r * len + j (a row) or j * outputs + r (a column).
    const size_t len = in[0].size() / y.size();
    const bool column = c.kind == "colsum";
    double worst = 0;
    for (size_t r = 0; r < y.size(); ++r) {
      double exact = 0, magnitude = 0;
      for (size_t j = 0; j < len; ++j) {
        const float v = in[0][column ? j * y.size() + r : r * len + j];
        exact += v;
        magnitude += std::fabs(v);
      }
      const double bound = static_cast<double>(len) * 0x1p-24 * magnitude;
      worst = std::max(worst, std::fabs(y[r] - exact) / std::max(bound, 1e-30));
    }
    return worst;
  }
  double worst = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    double want = -double{in[0][i]};
    if (c.kind == "chain")
      want = std::max(double{in[0][i]} * double{in[1][i]} + double{in[2][i]}, 0.0) * 0.5;
    // Three roundings of relative 2^-24 each, and cancellation in a*b + c: measured against the
    // operands' size.
    const double scale = c.kind == "chain"
                             ? std::fabs(double{in[0][i]} * double{in[1][i]}) + std::fabs(in[2][i])
                             : std::fabs(want);
    worst = std::max(worst, std::fabs(y[i] - want) / std::max(4 * 0x1p-24 * scale, 1e-30));
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "webgpu";
  int runs = 10;
  int forced_steps = 0;  // 0: chosen per case
  bool quick = false;
  bool gpu_timestamps = false;
  bool series = false;
  int warm_ms = 1000;
  int settle_ms = 0;
  std::vector<int> sizes = {26, 28};  // log2 of the element count
  std::vector<kernel::ElementwiseSchedule> schedules;
  std::vector<int64_t> sum_chunks;
  policy::Tier tier = policy::Tier::kProd;
  int64_t ballast_mib = 0;
  std::string kinds = "copy,chain,sum,rowsum,colsum";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--backend=", 0) == 0)
      backend = arg.substr(10);
    else if (arg.rfind("--runs=", 0) == 0)
      runs = std::max(1, std::atoi(arg.c_str() + 7));
    else if (arg.rfind("--steps=", 0) == 0)
      forced_steps = std::clamp(std::atoi(arg.c_str() + 8), 1, 1024);
    else if (arg == "--quick")
      quick = true;
    else if (arg.rfind("--log2=", 0) == 0)
      sizes = {std::clamp(std::atoi(arg.c_str() + 7), 4, 30)};
    else if (arg == "--gpu-timestamps")
      gpu_timestamps = true;
    else if (arg.rfind("--ballast-mib=", 0) == 0)
      ballast_mib = std::max<int64_t>(0, std::atoll(arg.c_str() + 14));
    else if (arg.rfind("--kinds=", 0) == 0)
      kinds = arg.substr(8);
    else if (arg.rfind("--warm-ms=", 0) == 0)
      warm_ms = std::clamp(std::atoi(arg.c_str() + 10), 0, 60000);
    else if (arg.rfind("--sum-chunks=", 0) == 0) {
      for (const std::string& item : Items(arg.substr(13))) {
        const int64_t chunk = std::atoll(item.c_str());
        if (chunk < 1) {
          std::cerr << "--sum-chunks takes elements per chunk, e.g. 16384,32768\n";
          return 2;
        }
        sum_chunks.push_back(chunk);
      }
    } else if (arg == "--series")
      series = true;
    else if (arg.rfind("--settle-ms=", 0) == 0)
      settle_ms = std::clamp(std::atoi(arg.c_str() + 12), 0, 60000);
    else if (arg.rfind("--schedules=", 0) == 0) {
      for (const std::string& item : Items(arg.substr(12))) {
        auto parsed = ParseSchedule(item);
        if (!parsed) {
          std::cerr << "--schedules takes WGxP,... (e.g. 256x4,128x8)\n";
          return 2;
        }
        schedules.push_back(*parsed);
      }
    } else if (arg == "--tier=debug")
      tier = policy::Tier::kDebug;
    else if (arg != "--tier=prod") {
      std::cerr << "usage: scellis_bench_elementwise [--backend=B] [--runs=N] [--quick] "
                   "[--tier=prod|debug] [--schedules=WGxP,...] [--gpu-timestamps] [--log2=N] "
                   "[--ballast-mib=N] [--kinds=K,...] [--steps=N] [--series] [--settle-ms=N] "
                   "[--warm-ms=N] [--sum-chunks=N,...]\n";
      return 2;
    }
  }
  std::vector<Case> cases;
  for (int log2_n : quick ? std::vector<int>{20} : sizes) {
    for (const char* kind : {"copy", "chain"}) {
      if (schedules.empty()) cases.push_back({kind, log2_n, true, std::nullopt, std::nullopt});
      for (const kernel::ElementwiseSchedule& s : schedules)
        cases.push_back({kind, log2_n, true, s, std::nullopt});
      cases.push_back({kind, log2_n, false, std::nullopt, std::nullopt});
    }
    for (const char* kind : {"sum", "rowsum", "colsum"}) {
      const bool chunked = std::string(kind) != "colsum" && !sum_chunks.empty();
      if (!chunked) cases.push_back({kind, log2_n, true, std::nullopt, std::nullopt});
      for (int64_t chunk : chunked ? sum_chunks : std::vector<int64_t>{})
        cases.push_back({kind, log2_n, true, std::nullopt, chunk});
      cases.push_back({kind, log2_n, false, std::nullopt, std::nullopt});
    }
  }
  std::erase_if(cases, [&](const Case& c) {
    return ("," + kinds + ",").find("," + c.kind + ",") == std::string::npos;
  });
  int failures = 0;
  for (const Case& c : cases) {
    const int64_t n = int64_t{1} << c.log2_n;
    const std::string name = c.kind + " 2^" + std::to_string(c.log2_n);
    auto sel = runtime::SelectBackend(
        {.requested = backend, .allow_software_adapter = true, .gpu_timestamps = gpu_timestamps});
    if (!sel.ok()) {
      std::cerr << sel.errors().front().Format() << "\n";
      return 2;
    }
    const std::string device = sel->profile.device;
    std::mt19937 rng(7);
    const std::vector<std::string> names =
        c.kind == "chain" ? std::vector<std::string>{"a", "b", "c"} : std::vector<std::string>{"x"};
    std::vector<std::vector<float>> in;
    runtime::Feeds initial;
    for (const std::string& input : names) {
      in.push_back(Random(n, rng));
      initial[input] = HostTensor::FromFloats(MakeType(InputShape(c, n)), in.back());
    }
    pipeline::CompileOptions options;
    options.lower.tier = tier;
    if (!c.wide) options.disabled_passes.insert(IsSum(c) ? "schedule-sum" : "schedule-elementwise");
    options.elementwise_schedule = c.forced;
    options.sum_chunk = c.sum_chunk;
    Json row = {{"case", name},       {"kind", c.kind},   {"elements", n},
                {"backend", backend}, {"device", device}, {"tier", policy::TierName(tier)}};
    auto s = api::Session::Prepare(Doc(c, n).dump(), options, std::move(sel.value()), initial);
    if (!s.ok()) {
      // A plan the device cannot run (a buffer over its binding cap, say) is a row, not an abort.
      row["error"] = s.errors().front().Format();
      std::cout << row.dump() << std::endl;
      ++failures;
      continue;
    }
    api::Session& session = **s;
    std::unique_ptr<api::Session> ballast;
    if (ballast_mib > 0) {
      // Buffers of at most 1 GiB each (a binding's limit), zeros, never read by the case.
      Json nodes = Json::array(), outputs = Json::array();
      for (int64_t left = ballast_mib, id = 0; left > 0; left -= 1024, ++id) {
        nodes.push_back({{"id", id},
                         {"op", "param"},
                         {"name", "ballast" + std::to_string(id)},
                         {"shape", {std::min<int64_t>(left, 1024) << 18}},
                         {"init", {{"kind", "zeros"}}}});
        outputs.push_back({{"name", "ballast" + std::to_string(id)}, {"id", id}});
      }
      Json doc = {{"version", 2}, {"nodes", nodes}, {"outputs", outputs}};
      auto b = api::Session::PrepareBeside(doc.dump(), options, session);
      if (!b.ok()) {
        std::cerr << name << ": ballast: " << b.errors().front().Format() << "\n";
        return 2;
      }
      ballast = std::move(b.value());
      row["ballast_mib"] = ballast_mib;
    }
    // An f32 sum of a multiple of 4 elements (every size here) loads vec4 in either order; a row
    // sum without the pass walks each row in one invocation.
    std::string schedule = c.kind == "sum"   ? "tree-256/vec4"
                           : c.kind != "sum" ? "serial"
                                             : "scalar";
    for (const kernel::Kernel& k : session.compiled().module->kernels) {
      if (k.elementwise_schedule) schedule = k.elementwise_schedule->Name();
      if (k.sum_schedule) schedule = k.sum_schedule->Name();
    }

    auto first = session.Run({{}}, {"y"});
    if (!first.ok()) {
      std::cerr << name << ": " << first.errors().front().Format() << "\n";
      return 2;
    }
    const double worst = WorstError(c, in, first->watched.front().second.front().ToFloats());
    const bool correct = worst <= 1;
    failures += !correct;
    in.clear();  // the host copies are no longer needed; at 2^28 they are 3 GiB

    const double bytes =
        4.0 * static_cast<double>(n) * (static_cast<double>(names.size()) + (IsSum(c) ? 0 : 1));
    const auto probe_start = std::chrono::steady_clock::now();
    if (auto r = session.Run({{}}, {}); !r.ok()) {
      std::cerr << name << ": " << r.errors().front().Format() << "\n";
      return 2;
    }
    const double probe_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - probe_start).count();
    const int steps = forced_steps > 0
                          ? forced_steps
                          : static_cast<int>(std::clamp(std::ceil(0.05 / probe_s), 1.0, 64.0));
    const std::vector<runtime::Feeds> feeds(static_cast<size_t>(steps));
    const auto warm = bench::WarmUpRuns(session, feeds, warm_ms, name);
    if (!warm) return 2;
    if (settle_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
    std::vector<double> per_step_s;  // in the order run
    Json gpu_run_us = Json::array();
    double gpu_busy_us = 0, gpu_dispatches = 0, gpu_gaps_us = 0;
    std::vector<double> dispatch_us;  // by position within a step, summed over dispatch_steps
    double dispatch_steps = 0;        // the timed steps whose every dispatch was timed
    for (int i = 0; i < runs; ++i) {
      const auto start = std::chrono::steady_clock::now();
      auto r = session.Run(feeds, {});
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!r.ok()) {
        std::cerr << name << ": " << r.errors().front().Format() << "\n";
        return 2;
      }
      per_step_s.push_back(seconds / steps);
      if (r->stats.contains("gpu_timestamps")) {
        gpu_run_us.push_back(r->stats["gpu_timestamps"]["busy_us"].get<double>() / steps);
        gpu_busy_us += r->stats["gpu_timestamps"]["busy_us"].get<double>();
        gpu_dispatches += r->stats["gpu_timestamps"]["dispatches"].get<double>();
        gpu_gaps_us += r->stats["gpu_timestamps"]["gaps_us"].get<double>();
        const Json& times = r->stats["gpu_timestamps"]["dispatch_us"];
        // Whole runs only: the device times at most its first kMaxTimedDispatches of a run.
        const size_t per_step = times.size() % steps ? 0 : times.size() / steps;
        if (per_step > 0 && (dispatch_us.empty() || dispatch_us.size() == per_step)) {
          dispatch_us.resize(per_step, 0.0);
          for (size_t d = 0; d < times.size(); ++d)
            dispatch_us[d % per_step] += times[d].get<double>();
          dispatch_steps += steps;
        }
      }
    }
    std::vector<double> sorted = per_step_s;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    row.update({{"schedule", schedule},
                {"bytes_per_step", bytes},
                {"steps_per_submission", steps},
                {"runs", runs},
                {"warm_up_s", warm->warm_s},
                {"cold_gb_per_s", bytes / warm->cold_s_per_step / 1e9},
                {"median_ms", median * 1e3},
                {"best_ms", sorted.front() * 1e3},
                {"gb_per_s", bytes / median / 1e9},
                {"worst_error_over_bound", worst},
                {"correct", correct}});
    if (gpu_dispatches > 0) {
      // The kernel's own time per step, and the bandwidth it alone reaches.
      const double timed_steps = static_cast<double>(runs) * steps;
      const double kernel_us = gpu_busy_us / timed_steps;
      Json mean_dispatch_us = Json::array();
      for (double us : dispatch_us) mean_dispatch_us.push_back(us / dispatch_steps);
      row.update({{"gpu_us_per_step", kernel_us},
                  {"gpu_dispatch_us", mean_dispatch_us},
                  {"gpu_gaps_us_per_step", gpu_gaps_us / timed_steps},
                  {"gpu_gb_per_s", bytes / (kernel_us * 1e-6) / 1e9},
                  {"dispatches_per_step", gpu_dispatches / timed_steps}});
    }
    if (series) {
      Json run_ms = Json::array();
      for (double step_s : per_step_s) run_ms.push_back(step_s * 1e3);
      row["run_ms"] = run_ms;
      if (!gpu_run_us.empty()) row["gpu_run_us"] = gpu_run_us;
    }
    std::cout << row.dump() << std::endl;
  }
  return failures ? 1 : 0;
}
