// Writes the device program of a document (the JSON the browser runtime executes) and, with
// --reference, the CPU reference's run of the same document for --steps steps of a session (the
// oracle the runtime's tests compare against: every output's last value, and the value after
// every step of the outputs named by --history). The runtime's test script runs it to make its fixtures from the examples;
// it parses, calls the engine and prints, nothing else.
//
//   scellis_device_program FILE [--tier T] [--steps N] [--history a,b] --out PROGRAM.json
//                          [--reference REFERENCE.json]
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "api/run.h"
#include "api/session.h"
#include "base/atomic_file.h"
#include "pipeline/compile.h"
#include "runtime/device_program.h"
#include "webir/passes/append_train_step.h"

namespace {

using namespace scellis;

int Fail(const Status& s) {
  for (const Diagnostic& d : s.errors()) std::cerr << "error[" << d.code << "]: " << d.message << "\n";
  return 1;
}

int Usage(const std::string& why) {
  std::cerr << "scellis_device_program: " << why << "\n"
            << "usage: scellis_device_program FILE [--tier debug|prod|fast] [--steps N] "
               "[--history NAME,...] --out PROGRAM.json [--reference REFERENCE.json]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string file, out, reference, tier, history;
  int steps = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--out") out = value();
    else if (a == "--reference") reference = value();
    else if (a == "--tier") tier = value();
    else if (a == "--history") history = value();
    else if (a == "--steps") steps = std::atoi(value().c_str());
    else if (!a.empty() && a[0] == '-') return Usage("unknown option " + a);
    else file = a;
  }
  if (file.empty() || out.empty()) return Usage("a document and --out are required");
  if (steps < 1 || steps > static_cast<int>(runtime::kMaxStepsPerRun))
    return Usage("--steps takes 1 to " + std::to_string(runtime::kMaxStepsPerRun) + " steps");
  std::ifstream in(file, std::ios::binary);
  if (!in) return Usage("cannot read " + file);
  std::stringstream text;
  text << in.rdbuf();

  pipeline::CompileOptions options;
  if (!tier.empty()) {
    options.lower.tier = policy::ParseTier(tier);
    if (!options.lower.tier) return Usage("unknown tier " + tier);
  }
  auto compiled = pipeline::Compile(text.str(), options);
  if (!compiled.ok()) return Fail(compiled.status());
  auto program = runtime::BuildDeviceProgram(*compiled->plan, {});
  if (!program.ok()) return Fail(program.status());
  Status w = WriteFileAtomic(out, runtime::ToJson(*program).dump(1) + "\n");
  if (!w.ok()) return Fail(w);

  if (!reference.empty()) {
    // The reference runs the document as a prepared session on the CPU, as a trainer would: the
    // optimizer's 1-based step number (an input fed every step) is the only feed it makes.
    pipeline::CompileOptions cpu = options;
    cpu.plan.limits = execplan::HostMemoryLimits("cpu", "cpu");
    auto selection = runtime::SelectBackend({.requested = "cpu"});
    if (!selection.ok()) return Fail(selection.status());
    auto session = api::Session::Prepare(text.str(), cpu, std::move(*selection));
    if (!session.ok()) return Fail(session.status());
    const webir::Graph& g = (*session)->plan().graph();
    std::vector<std::string> watch;
    for (const webir::Output& o : g.outputs) watch.push_back(o.name);
    std::stringstream names(history);
    std::vector<std::string> history_names;
    for (std::string name; std::getline(names, name, ',');)
      if (!name.empty()) history_names.push_back(name);
    std::vector<runtime::Feeds> feeds(static_cast<size_t>(steps));
    for (int node : runtime::FedInputs(g)) {
      const webir::Node& n = g.at(node);
      if (runtime::FeedName(n) != webir::kStepInput)
        return Usage("the input \"" + runtime::FeedName(n) + "\" needs a feed; give it data");
      for (int k = 0; k < steps; ++k) {
        std::vector<float> v(static_cast<size_t>(n.type.elements()), static_cast<float>(k + 1));
        feeds[k][runtime::FeedName(n)] = HostTensor::FromFloats(n.type, v);
      }
    }
    auto run = (*session)->Run(feeds, watch);
    if (!run.ok()) return Fail(run.status());
    Json j = {{"backend", "cpu"}, {"executor", (*session)->executor()}, {"steps", steps}};
    j["outputs"] = Json::object();
    j["history"] = Json::object();
    for (const auto& [name, per_step] : run->watched) {
      j["outputs"][name] = api::TensorToJson(per_step.back());
      if (std::find(history_names.begin(), history_names.end(), name) == history_names.end())
        continue;
      Json h = {{"shape", per_step.back().type.sizes()}, {"steps", Json::array()}};
      for (const HostTensor& t : per_step) h["steps"].push_back(api::TensorToJson(t)["data"]);
      j["history"][name] = h;
    }
    w = WriteFileAtomic(reference, j.dump(1) + "\n");
    if (!w.ok()) return Fail(w);
  }
  return 0;
}
