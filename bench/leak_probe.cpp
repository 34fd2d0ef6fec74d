#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include "api/session.h"
#include "runtime/backends/select.h"
using namespace scellis;
std::string Threads() { std::ifstream f("/proc/self/status"); std::string l; while (std::getline(f, l)) if (l.rfind("Threads", 0) == 0) return l; return ""; }
int main() {
  const std::string doc = R"({"version":2,"determinism":"prod","nodes":[{"id":0,"op":"param","name":"a","shape":[64,64],"init":{"kind":"uniform","low":0,"high":1,"seed":1}},{"id":1,"op":"matmul","a":0,"b":0}],"outputs":[{"name":"y","id":1}]})";
  const int n = std::getenv("ITER") ? std::atoi(std::getenv("ITER")) : 60;
  std::vector<runtime::Selection> kept;
  for (int i = 0; i < n; ++i) {
    auto sel = runtime::SelectBackend({.requested = "webgpu", .allow_software_adapter = true});
    if (!sel.ok()) { std::cout << "select failed at " << i << ": " << sel.errors().front().Format() << "\n"; return 1; }
    if (std::getenv("ONLY_SELECT")) { if (std::getenv("KEEP")) kept.push_back(std::move(*sel)); continue; }
    auto s = api::Session::Prepare(doc, {}, std::move(sel.value()), {});
    if (!s.ok()) { std::cout << "prepare failed at " << i << ": " << s.errors().front().Format() << "\n"; return 1; }
    auto r = (*s)->Run({{}}, {"y"});
    if (!r.ok()) { std::cout << "run failed at " << i << "\n"; return 1; }
    if (i % 10 == 0) std::cout << i << " " << Threads() << "\n";
  }
  std::cout << n << " ok " << Threads() << "\n";
}
