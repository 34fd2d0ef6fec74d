#include "runtime/backends/null/backend.h"

#include "runtime/backends/null/executor.h"

namespace scellis::runtime::null {
namespace {

class NullBackend : public Backend {
 public:
  std::string name() const override { return "null"; }
  bool automatic() const override { return false; }
  Result<ProbeReport> Probe(const BackendOptions&) const override {
    return ProbeReport{"computes nothing; for tests of the plumbing", Json::object(), ""};
  }
  Result<std::unique_ptr<Executor>> Open(const BackendOptions&) const override {
    return std::unique_ptr<Executor>(new NullExecutor());
  }
  Status SupportsKernel(const kernel::Module&, const kernel::Kernel&) const override {
    return Status::Ok();
  }
  Result<std::string> ProfileKey(const BackendOptions&) const override {
    return NullExecutor().profile().key;
  }
};

}  // namespace

std::unique_ptr<Backend> MakeBackend() {
  return std::make_unique<NullBackend>();
}

}  // namespace scellis::runtime::null
