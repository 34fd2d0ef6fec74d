// Benchmark: one of seed 002's workloads (a repeated graph, examples/pipelines) in a prepared
// session: every run is the whole workload (`repeat` iterations) in one submission. Writes the
// starting state the document's initializers gave and the state after the first run, as raw f32
// files beside a JSON index, so the oracle (bench/pipelines/peer.py, float64 NumPy) checks the
// engine's answer before any time is reported; then times further runs (the state carries on:
// the same work each run). Prints one JSON object.
//
//   scellis_bench_pipeline examples/pipelines/jacobi.json webgpu 10 out/jacobi
//   scellis_bench_pipeline examples/pipelines/jacobi.json webgpu 10 out/jacobi/unblocked \
//       --disable-pass=block-temporally
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "api/session.h"
#include "runtime/backends/select.h"

using namespace scellis;

namespace {

// name.f32 holds the tensor's f32 values; index[name] its shape.
void Save(const std::filesystem::path& dir, const std::string& name, const HostTensor& t,
          Json& index) {
  std::ofstream(dir / (name + ".f32"), std::ios::binary)
      .write(reinterpret_cast<const char*>(t.bytes.data()),
             static_cast<std::streamsize>(t.bytes.size()));
  index[name] = t.type.sizes();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::cerr << "usage: scellis_bench_pipeline DOCUMENT BACKEND RUNS OUT_DIR "
                 "[--disable-pass=NAME ...]\n";
    return 2;
  }
  const std::string file = argv[1], backend = argv[2];
  const int runs = std::max(1, std::atoi(argv[3]));
  const std::filesystem::path dir = argv[4];
  std::filesystem::create_directories(dir);
  std::stringstream text;
  text << std::ifstream(file).rdbuf();
  const Json doc = Json::parse(text.str());

  auto sel = runtime::SelectBackend({.requested = backend, .allow_software_adapter = true});
  if (!sel.ok()) {
    std::cerr << sel.errors().front().Format() << "\n";
    return 2;
  }
  const std::string adapter = sel->profile.device;
  pipeline::CompileOptions options;
  options.lower.tier = policy::Tier::kProd;
  const std::string disable = "--disable-pass=";
  for (int i = 5; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind(disable, 0) != 0) {
      std::cerr << "unknown argument " << arg << "\n";
      return 2;
    }
    options.disabled_passes.insert(arg.substr(disable.size()));
  }
  auto prepare_start = std::chrono::steady_clock::now();
  auto s = api::Session::Prepare(text.str(), options, std::move(sel.value()));
  if (!s.ok()) {
    std::cerr << s.errors().front().Format(file) << "\n";
    return 2;
  }
  api::Session& session = **s;
  const double prepare_ms = std::chrono::duration<double, std::milli>(
                                std::chrono::steady_clock::now() - prepare_start)
                                .count();

  Json index = Json::object();
  for (const Json& n : doc["nodes"]) {
    if (n["op"] != "param") continue;
    auto t = session.Download(n["name"]);
    if (!t.ok()) return 2;
    Save(dir, n["name"].get<std::string>() + ".initial", *t, index);
  }
  std::vector<std::string> outputs;
  for (const Json& o : doc["outputs"]) outputs.push_back(o["name"]);
  auto first = session.Run({{}}, outputs);
  if (!first.ok()) {
    std::cerr << first.errors().front().Format(file) << "\n";
    return 2;
  }
  for (const auto& [name, per_step] : first->watched)
    Save(dir, name + ".after1", per_step.front(), index);
  std::ofstream(dir / "index.json") << index.dump(1) << "\n";

  std::vector<double> ms;
  Json stats;
  for (int r = 0; r < runs; ++r) {
    auto start = std::chrono::steady_clock::now();
    auto run = session.Run({{}}, {});
    if (!run.ok()) {
      std::cerr << run.errors().front().Format(file) << "\n";
      return 2;
    }
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    stats = run->stats;
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  Json out = {{"workload", doc.value("name", file)},
              {"backend", session.selection().backend},
              {"adapter", adapter},
              {"executor", session.executor()},
              {"iterations", doc.value("repeat", 1)},
              {"kernels", session.plan().steps.size()},
              {"prepare_ms", prepare_ms},
              {"dispatches_per_run", stats.value("dispatches", 0)},
              {"iterations_per_dispatch", stats.value("iterations_per_dispatch", 1)},
              {"submissions_per_run", stats.value("submissions", 0)},
              {"ms", ms},
              {"median_ms", sorted[sorted.size() / 2]}};
  std::cout << out.dump() << "\n";
  return 0;
}
