// The warm-up the GPU benchmarks share. On NVIDIA's Vulkan driver a bandwidth-bound kernel runs at
// about 57 % of its rate for the first 0.1-0.4 s of sustained work, then switches within one
// submission to the full rate and keeps it (bench/RESULTS.md, H100 2026-12-07: 1 680 then
// 2 980 GB/s by GPU timestamps, the SM and memory clocks nvidia-smi reports unchanged; a pause
// before the timed runs makes the slow phase longer, so it wants work, not time). PyTorch's CUDA
// peer does not show it. The benches time the steady state after this warm-up and report the
// first warm-up run beside it, so the cold rate a short job sees stays in the row.
#pragma once

#include <chrono>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "api/session.h"

namespace scellis::bench {

struct WarmUp {
  double cold_s_per_step = 0;  // the first run's time per step (pipelines already compiled)
  double warm_s = 0;           // how long the runs back to back took
};

// Runs `feeds` back to back until at least `warm_ms` of wall time has passed (once at least).
inline std::optional<WarmUp> WarmUpRuns(api::Session& session,
                                        const std::vector<runtime::Feeds>& feeds, int warm_ms,
                                        const std::string& name) {
  WarmUp warm;
  bool first = true;
  const auto start = std::chrono::steady_clock::now();
  auto since = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  do {
    const double before = since();
    if (auto r = session.Run(feeds, {}); !r.ok()) {
      std::cerr << name << ": " << r.errors().front().Format() << "\n";
      return std::nullopt;
    }
    if (first) warm.cold_s_per_step = (since() - before) / static_cast<double>(feeds.size());
    first = false;
  } while (since() * 1e3 < warm_ms);
  warm.warm_s = since();
  return warm;
}

}  // namespace scellis::bench
