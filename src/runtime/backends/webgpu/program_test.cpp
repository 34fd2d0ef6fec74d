// The native backend runs the device program: the WGSL a Dawn device compiled for a plan is, byte
// for byte, the set of pipelines of BuildDeviceProgram for that plan and that device's limits —
// the program the browser runtime executes. Checked on the examples and on a plan tiled over a
// small binding cap.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "pipeline/compile.h"
#include "runtime/backends/webgpu/executor.h"
#include "runtime/device_program.h"

namespace scellis::runtime::webgpu {
namespace {

std::unique_ptr<WebGpuExecutor> Gpu(uint64_t max_binding_bytes = 0) {
  if (!std::getenv("VK_ICD_FILENAMES"))
    setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 1);
  auto d = Device::Open({.allow_software_adapter = true, .max_binding_bytes = max_binding_bytes});
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.errors().front().message);
  return d.ok() ? std::make_unique<WebGpuExecutor>(std::move(d.value())) : nullptr;
}

std::string Example(const std::string& name) {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/" + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

execplan::Plan PlanFor(const std::string& text, const WebGpuExecutor& gpu) {
  pipeline::CompileOptions o;
  o.lower.tier = policy::Tier::kProd;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.plan.limits = gpu.limits();
  auto c = pipeline::Compile(text, o);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.errors().front().Format());
  return *c->plan;
}

using Sources = std::set<std::pair<std::string, std::string>>;

Sources Compiled(const Device& d) {
  auto v = d.CompiledSources();
  return {v.begin(), v.end()};
}

Sources ProgramSources(const DeviceProgram& p) {
  Sources s;
  for (const ProgramPipeline& pl : p.pipelines) s.insert({pl.entry_point, pl.wgsl});
  EXPECT_EQ(s.size(), p.pipelines.size()) << "the program lists a pipeline twice";
  return s;
}

class WebGpuProgram : public ::testing::TestWithParam<const char*> {};

TEST_P(WebGpuProgram, CompiledWgslIsTheProgramsByteForByte) {
  auto gpu = Gpu();
  ASSERT_NE(gpu, nullptr);
  execplan::Plan plan = PlanFor(Example(GetParam()), *gpu);
  // A fresh device has compiled nothing; a session of two steps compiles what the backend runs.
  ASSERT_TRUE(gpu->device().CompiledSources().empty());
  auto prepared = gpu->Prepare(plan);
  ASSERT_TRUE(prepared.ok()) << prepared.errors().front().Format();
  // Inputs fed every step (a training step's step number) get the step's 1-based number.
  std::vector<Feeds> feeds(2);
  for (int node : FedInputs(plan.graph())) {
    const webir::Node& n = plan.graph().at(node);
    for (size_t k = 0; k < feeds.size(); ++k) {
      std::vector<float> v(static_cast<size_t>(n.type.elements()), static_cast<float>(k + 1));
      feeds[k][FeedName(n)] = HostTensor::FromFloats(n.type, v);
    }
  }
  auto steps = (*prepared)->RunSteps(feeds, {});
  ASSERT_TRUE(steps.ok()) << steps.errors().front().Format();

  auto program = BuildDeviceProgram(plan, {}, ProgramLimitsOf(gpu->device().info()));
  ASSERT_TRUE(program.ok()) << program.errors().front().Format();
  EXPECT_EQ(Compiled(gpu->device()), ProgramSources(*program));
  EXPECT_EQ(steps->stats["dispatches"], 2 * program->dispatches.size());
}

INSTANTIATE_TEST_SUITE_P(Examples, WebGpuProgram,
                         ::testing::Values("center_columns.json", "life_glider.json",
                                           "life_steps.json", "mlp_step.json",
                                           "matmul_chain.json", "seed_mul_relu.json"));

// An elementwise kernel over a 4096-byte cap runs in tiles, each its own WGSL: the device compiled
// exactly the program's tiles, and the program's dispatches are what ran.
TEST(WebGpuProgramTiled, CompiledTilesAreTheProgramsByteForByte) {
  constexpr uint64_t kCap = 4096;
  auto gpu = Gpu(kCap);
  ASSERT_NE(gpu, nullptr);
  std::vector<float> x(301 * 97, 1.5f), row(97, 0.5f);
  Json doc = {{"version", 2},
              {"nodes",
               {{{"id", 0}, {"op", "input"}, {"shape", {301, 97}}, {"data", x}},
                {{"id", 1}, {"op", "input"}, {"shape", {97}}, {"data", row}},
                {{"id", 2}, {"op", "mul"}, {"a", 0}, {"b", 1}},
                {{"id", 3}, {"op", "relu"}, {"a", 2}}}},
              {"outputs", {{{"name", "y"}, {"id", 3}}}}};
  execplan::Plan plan = PlanFor(doc.dump(), *gpu);
  auto run = gpu->Run(plan, {});
  ASSERT_TRUE(run.ok()) << run.errors().front().Format();
  auto program = BuildDeviceProgram(plan, {}, ProgramLimitsOf(gpu->device().info()));
  ASSERT_TRUE(program.ok()) << program.errors().front().Format();
  EXPECT_EQ(program->limits.max_storage_buffer_binding_size, kCap);
  // 29197 elements at 1024 per tile: 29 tiles.
  EXPECT_EQ(program->dispatches.size(), 29u);
  EXPECT_EQ(Compiled(gpu->device()), ProgramSources(*program));
  EXPECT_EQ(run->stats["dispatches"], program->dispatches.size());
  // relu(1.5 * 0.5) = 0.75 everywhere (a tile left unwritten would read 0).
  EXPECT_EQ(run->outputs[0].second.ToFloats(), std::vector<float>(301 * 97, 0.75f));
}

}  // namespace
}  // namespace scellis::runtime::webgpu
