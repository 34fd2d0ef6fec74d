// The device program: the layout of the examples' plans as a WebGPU device runs them, the tiling
// of tensors over a small binding cap, the carries of a training step, and the JSON form.
#include "runtime/device_program.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "pipeline/compile.h"

namespace scellis::runtime {
namespace {

std::string Example(const std::string& name) {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/" + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

execplan::Plan PlanOf(const std::string& text, std::optional<int64_t> budget = std::nullopt) {
  pipeline::CompileOptions o;
  o.lower.tier = policy::Tier::kProd;
  o.plan.budget_bytes = budget;
  auto c = pipeline::Compile(text, o);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.errors().front().Format());
  return *c->plan;
}

// An independent decoder (RFC 4648 by table lookup), so the encoder is not checked against itself.
std::vector<uint8_t> DecodeBase64(const std::string& s) {
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<uint8_t> out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    if (c == '=') break;
    acc = (acc << 6) | static_cast<uint32_t>(alphabet.find(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<uint8_t>((acc >> bits) & 0xff));
    }
  }
  return out;
}

std::vector<float> Floats(const std::vector<uint8_t>& bytes) {
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

std::vector<std::byte> Bytes(const std::string& s) {
  std::vector<std::byte> b;
  for (char c : s) b.push_back(static_cast<std::byte>(c));
  return b;
}

TEST(DeviceProgram, Base64MatchesTheRfcVectors) {
  // RFC 4648 §10.
  EXPECT_EQ(Base64Encode(Bytes("")), "");
  EXPECT_EQ(Base64Encode(Bytes("f")), "Zg==");
  EXPECT_EQ(Base64Encode(Bytes("fo")), "Zm8=");
  EXPECT_EQ(Base64Encode(Bytes("foo")), "Zm9v");
  EXPECT_EQ(Base64Encode(Bytes("foob")), "Zm9vYg==");
  EXPECT_EQ(Base64Encode(Bytes("fooba")), "Zm9vYmE=");
  EXPECT_EQ(Base64Encode(Bytes("foobar")), "Zm9vYmFy");
  EXPECT_EQ(Base64Encode({std::byte{0xff}, std::byte{0xfe}}), "//4=");
}

TEST(DeviceProgram, CenterColumnsLaysOutThePlan) {
  execplan::Plan plan = PlanOf(Example("center_columns.json"));
  auto p = BuildDeviceProgram(plan, {});
  ASSERT_TRUE(p.ok()) << p.errors().front().Format();

  ASSERT_EQ(p->buffers.size(), plan.buffers.size());
  for (size_t i = 0; i < p->buffers.size(); ++i) {
    EXPECT_EQ(p->buffers[i].id, static_cast<int>(i));
    EXPECT_EQ(p->buffers[i].size % 4, 0u);
    EXPECT_GE(p->buffers[i].size, static_cast<uint64_t>(plan.buffers[i].bytes));
  }
  // Both sources are there: the dataset's inline data and the weights' initializer.
  ASSERT_EQ(p->sources.size(), 2u);
  const ProgramSource* dataset = nullptr;
  for (const ProgramSource& s : p->sources)
    if (s.name == "dataset") dataset = &s;
  ASSERT_NE(dataset, nullptr);
  EXPECT_EQ(dataset->role, "input");
  Json j = ToJson(*p);
  EXPECT_EQ(j["format"], "scellis.device-program/1");
  std::vector<float> want(12);
  for (int i = 0; i < 12; ++i) want[i] = static_cast<float>(i + 1);
  bool found = false;
  for (const Json& s : j["sources"]) {
    if (s["name"] != "dataset") continue;
    found = true;
    EXPECT_EQ(Floats(DecodeBase64(s["data"].get<std::string>())), want);
    EXPECT_EQ(s["bytes"], 48);
  }
  EXPECT_TRUE(found);

  // One dispatch per plan step (nothing is over the default cap), binding the step's reads then
  // its write, with the kernel's own WGSL and grid.
  ASSERT_EQ(p->dispatches.size(), plan.steps.size());
  std::set<std::string> kernel_sources;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const execplan::Step& st = plan.steps[s];
    const kernel::Kernel& k = plan.module().kernels[st.kernel];
    const ProgramDispatch& d = p->dispatches[s];
    EXPECT_EQ(d.step, static_cast<int>(s));
    ASSERT_EQ(d.bindings.size(), st.reads.size() + 1);
    for (size_t i = 0; i < st.reads.size(); ++i) EXPECT_EQ(d.bindings[i].buffer, st.reads[i]);
    EXPECT_EQ(d.bindings.back().buffer, st.write);
    EXPECT_EQ(p->pipelines[d.pipeline].wgsl, k.Wgsl().source);
    EXPECT_EQ(d.workgroups, k.workgroups);
    EXPECT_EQ(d.tile_count, -1);
    kernel_sources.insert(k.Wgsl().source);
  }
  EXPECT_EQ(p->pipelines.size(), kernel_sources.size());

  // Outputs by name with their shapes; nothing carried; the tier's thresholds.
  ASSERT_EQ(p->outputs.size(), 2u);
  EXPECT_EQ(p->outputs[0].name, "y");
  EXPECT_EQ(p->outputs[0].shape, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(p->outputs[1].name, "centered");
  EXPECT_EQ(p->outputs[1].shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(p->outputs[1].bytes, 48);
  EXPECT_TRUE(p->carries.empty());
  EXPECT_EQ(p->tier, "prod");
  EXPECT_EQ(p->tolerance, "default");
  EXPECT_EQ(j["tolerance"]["rtol"], plan.thresholds.rtol);
  EXPECT_EQ(j["tolerance"]["atol"], plan.thresholds.atol);
  EXPECT_EQ(j["dispatches"].size(), plan.steps.size());
}

TEST(DeviceProgram, FeedsReplaceSourcesAndAreValidated) {
  execplan::Plan plan = PlanOf(Example("center_columns.json"));
  std::vector<float> w = {1, 2, 3, 4, 5, 6};
  auto p = BuildDeviceProgram(plan, {{"weights", HostTensor::FromFloats(MakeType({3, 2}), w)}});
  ASSERT_TRUE(p.ok()) << p.errors().front().Format();
  for (const ProgramSource& s : p->sources) {
    if (s.name != "weights") continue;
    std::vector<uint8_t> raw(s.data.size());
    std::memcpy(raw.data(), s.data.data(), raw.size());
    EXPECT_EQ(Floats(raw), w);
  }
  auto bad = BuildDeviceProgram(plan, {{"nope", HostTensor::Zeros(MakeType({1}))}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.errors().front().code, "bad-feed");
}

TEST(DeviceProgram, RedPlanIsRefused) {
  execplan::Plan plan = PlanOf(Example("center_columns.json"), 16);
  ASSERT_EQ(plan.verdict, execplan::Verdict::kRed);
  auto p = BuildDeviceProgram(plan, {});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.errors().front().code, plan.findings.front().code);
}

// relu(x * y_row + z) over [301, 97] = 29197 elements; with a 4096-byte cap (1024 floats per
// tile) that is 28 full tiles and one of 29197 - 28 * 1024 = 525.
TEST(DeviceProgram, ElementwiseOverTheCapIsTiled) {
  std::vector<float> row(97, 0.5f), z(301 * 97, 1.0f);
  Json doc = {{"version", 2},
              {"nodes",
               {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {301, 97}}},
                {{"id", 1}, {"op", "input"}, {"shape", {97}}, {"data", row}},
                {{"id", 2}, {"op", "input"}, {"shape", {301, 97}}, {"data", z}},
                {{"id", 3}, {"op", "mul"}, {"a", 0}, {"b", 1}},
                {{"id", 4}, {"op", "add"}, {"a", 3}, {"b", 2}},
                {{"id", 5}, {"op", "relu"}, {"a", 4}}}},
              {"outputs", {{{"name", "y"}, {"id", 5}}}}};
  execplan::Plan plan = PlanOf(doc.dump());
  ProgramLimits limits;
  limits.max_storage_buffer_binding_size = 4096;
  limits.min_storage_buffer_offset_alignment = 256;
  auto p = BuildDeviceProgram(plan, {}, limits);
  ASSERT_TRUE(p.ok()) << p.errors().front().Format();
  ASSERT_EQ(plan.steps.size(), 1u);
  ASSERT_EQ(p->dispatches.size(), 29u);
  // The row is broadcast, so each tile's source carries its first element: 29 pipelines.
  EXPECT_EQ(p->pipelines.size(), 29u);
  for (size_t t = 0; t < 29; ++t) {
    const ProgramDispatch& d = p->dispatches[t];
    const int64_t count = t < 28 ? 1024 : 525;
    EXPECT_EQ(d.tile_base, static_cast<int64_t>(t) * 1024);
    EXPECT_EQ(d.tile_count, count);
    EXPECT_EQ(d.workgroups[0], static_cast<uint32_t>((count + 63) / 64));
    ASSERT_EQ(d.bindings.size(), 4u);
    // x and z are windowed at the tile, the row is bound whole, the output is windowed.
    for (int b : {0, 2, 3}) {
      EXPECT_EQ(d.bindings[b].offset, t * 4096);
      EXPECT_EQ(d.bindings[b].size, static_cast<uint64_t>(count) * 4);
      EXPECT_EQ(d.bindings[b].offset % 256, 0u);
    }
    EXPECT_EQ(d.bindings[1].offset, 0u);
    EXPECT_EQ(d.bindings[1].size, 0u);
  }
  EXPECT_TRUE(p->inputs[0].fed);
  EXPECT_FALSE(p->inputs[0].initial);
  // Tiles bind windows of the output: no tile can write it into a slot of a run's history.
  EXPECT_FALSE(p->outputs[0].writes_into_history_slot);
}

// A computed output alone in its buffer, written whole by its kernel, can be written into a slot
// of a run's history; a carried one (its buffer swaps with its input's) cannot.
TEST(DeviceProgram, OutputsSayWhetherTheirKernelsCanWriteIntoHistorySlots) {
  Json doc = {{"version", 1},
              {"nodes",
               {{{"id", 0}, {"op", "input"}, {"name", "x"}, {"shape", {3}}},
                {{"id", 1},
                 {"op", "input"},
                 {"name", "acc"},
                 {"shape", {3}},
                 {"data", {0, 0, 0}},
                 {"carry", "total"}},
                {{"id", 2}, {"op", "add"}, {"a", 1}, {"b", 0}},
                {{"id", 3}, {"op", "mul"}, {"a", 2}, {"b", 2}},
                {{"id", 4}, {"op", "sum"}, {"a", 2}}}},
              {"outputs",
               {{{"name", "total"}, {"id", 2}},
                {{"name", "square"}, {"id", 3}},
                {{"name", "s"}, {"id", 4}}}}};
  auto p = BuildDeviceProgram(PlanOf(doc.dump()), {});
  ASSERT_TRUE(p.ok()) << p.errors().front().Format();
  ASSERT_EQ(p->outputs.size(), 3u);
  ASSERT_EQ(p->carries.size(), 1u);
  EXPECT_EQ(p->carries[0].from_buffer, p->outputs[0].buffer);
  EXPECT_FALSE(p->outputs[0].writes_into_history_slot);
  EXPECT_TRUE(p->outputs[1].writes_into_history_slot);
  EXPECT_TRUE(p->outputs[2].writes_into_history_slot);
  const Json j = ToJson(*p);
  EXPECT_EQ(j["outputs"][0]["writes_into_history_slot"], false);
  EXPECT_EQ(j["outputs"][1]["writes_into_history_slot"], true);
  EXPECT_EQ(j["outputs"][2]["writes_into_history_slot"], true);
}

TEST(DeviceProgram, TrainingStepCarriesParamsAndState) {
  execplan::Plan plan = PlanOf(Example("mlp_step.json"));
  auto p = BuildDeviceProgram(plan, {});
  ASSERT_TRUE(p.ok()) << p.errors().front().Format();
  std::set<std::string> carried_to;
  for (const ProgramCarry& c : p->carries) {
    carried_to.insert(c.to);
    // The optimizer writes each new value over the old one (write-state-in-place): the carry
    // has nothing to swap.
    EXPECT_EQ(c.from_buffer, c.to_buffer) << c.to;
  }
  // Every param is updated in place each step.
  for (const char* w : {"w1", "b1", "w2", "b2"}) EXPECT_TRUE(carried_to.count(w)) << w;
  // A kernel of several outputs (a merged optimizer update, the loss with its gradient, a weight
  // gradient with its bias's) binds its reads, then every write it does not make through an
  // input's binding, and says how many of the last bindings it writes.
  ASSERT_EQ(p->dispatches.size(), plan.steps.size());
  int merged = 0;
  const Json json = ToJson(*p);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const execplan::Step& st = plan.steps[s];
    const ProgramDispatch& d = p->dispatches[s];
    const kernel::Kernel& k = plan.module().kernels[st.kernel];
    const std::vector<int> all_writes = st.Writes();
    std::vector<int> writes;
    for (size_t j = 0; j < all_writes.size(); ++j) {
      if (k.InPlaceOf(j) >= 0)
        EXPECT_EQ(st.reads[k.InPlaceOf(j)], all_writes[j]) << k.name;
      else
        writes.push_back(all_writes[j]);
    }
    ASSERT_EQ(d.bindings.size(), st.reads.size() + writes.size());
    EXPECT_EQ(d.writes, static_cast<int>(writes.size()));
    for (size_t j = 0; j < writes.size(); ++j)
      EXPECT_EQ(d.bindings[st.reads.size() + j].buffer, writes[j]);
    EXPECT_EQ(json["dispatches"][s].value("writes", 1), d.writes);
    // Adam over two parameters a dispatch (inside the matmul of their gradients), all six
    // outputs in place: nothing to poison.
    if (k.op == "adam_update" || k.UpdatesParameters()) EXPECT_EQ(d.writes, 0) << k.name;
    merged += all_writes.size() > 1;
  }
  int multi_output_kernels = 0;
  for (const kernel::Kernel& k : plan.module().kernels)
    multi_output_kernels += !k.extra_outputs.empty();
  // The loss's, and two matmuls each updating a weight and its bias.
  EXPECT_GE(multi_output_kernels, 3);
  EXPECT_EQ(merged, multi_output_kernels);
  for (const ProgramInput& in : p->inputs) {
    if (in.role == "param") {
      EXPECT_TRUE(in.carried) << in.name;
      EXPECT_TRUE(in.initial) << in.name;
    }
    // x and labels are inline; the optimizer's 1-based step number is fed every step.
    EXPECT_EQ(in.fed, in.name == "step") << in.name;
  }
  EXPECT_EQ(p->tier, "debug");  // the document's, stricter than the --tier given
}

TEST(DeviceProgram, ALoopDocumentRepeatsItsDispatchesPerStep) {
  // Jacobi's document: one sweep's graph, `repeat`ed 512 times with u carried. The program keeps
  // one sweep's dispatches and says how often a step runs them; a document without `repeat` runs
  // them once.
  execplan::Plan plan = PlanOf(Example("pipelines/jacobi.json"));
  auto p = BuildDeviceProgram(plan, {});
  ASSERT_TRUE(p.ok()) << p.errors().front().Format();
  EXPECT_EQ(p->repeat, 512);
  EXPECT_EQ(ToJson(*p)["repeat"], 512);
  ASSERT_EQ(p->carries.size(), 1u);
  EXPECT_EQ(p->carries[0].to, "u");
  EXPECT_LT(p->dispatches.size(), 512u);
  auto once = BuildDeviceProgram(PlanOf(Example("center_columns.json")), {});
  ASSERT_TRUE(once.ok());
  EXPECT_EQ(once->repeat, 1);
  EXPECT_EQ(ToJson(*once)["repeat"], 1);
}

}  // namespace
}  // namespace scellis::runtime
