// `run --steps N` runs a prepared session: the glider's grid is carried between steps on the
// device, many steps per run. A glider moves one cell down and right every 4 generations,
// so on a 16x16 torus it is back where it started after 64.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "base/json_util.h"
#include "cli_test.h"

namespace scellis::testing {
namespace {

std::vector<float> GliderAt(int dr, int dc) {
  std::vector<float> g(256, 0.0f);
  for (auto [r, c] : std::vector<std::pair<int, int>>{{0, 1}, {1, 2}, {2, 0}, {2, 1}, {2, 2}})
    g[((r + dr) % 16) * 16 + (c + dc) % 16] = 1.0f;
  return g;
}

std::vector<float> GridOf(const CliRun& r) {
  Json j = Json::parse(r.out);
  return j["outputs"]["next"]["data"].get<std::vector<float>>();
}

TEST(CliSteps, GliderCarriedOnTheDeviceAcrossSubmissions) {
  setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 0);
  const std::string doc = std::string(SCELLIS_SOURCE_DIR) + "/examples/life_steps.json";
  for (const std::vector<std::string>& backend :
       {std::vector<std::string>{"--backend=cpu"},
        std::vector<std::string>{"--backend=webgpu", "--allow-software-adapter"}}) {
    SCOPED_TRACE(backend[0]);
    for (auto [steps, shift] : std::vector<std::pair<int, int>>{{4, 1}, {64, 0}, {132, 1}}) {
      std::vector<std::string> args = {"run",    doc,       "--tier=prod",
                                       "--json", "--steps", std::to_string(steps)};
      args.insert(args.end(), backend.begin(), backend.end());
      CliRun r = RunScellis(args);
      ASSERT_TRUE(r.exited && r.exit_code == 0) << r.err;
      EXPECT_EQ(GridOf(r), GliderAt(shift, shift)) << steps << " steps";
      // 132 steps are three runs of at most 64: three submissions on the CPU; on WebGPU the
      // first run is sent in chunks of 1, 1, 2, 4 and then 8 steps, and the two started behind
      // it in chunks of 8: 11 + 8 + 1 submissions.
      if (steps == 132) {
        EXPECT_EQ(Json::parse(r.out)["stats"]["submissions"].get<int>(),
                  backend[0] == "--backend=cpu" ? 3 : 20);
      }
      // Only the last grid (16x16 f32) comes back.
      EXPECT_EQ(Json::parse(r.out)["stats"]["readback_bytes"].get<int64_t>(), 1024);
    }
  }
}

TEST(CliSteps, HistoryReadsBackEveryStepOfTheNamedOutput) {
  setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 0);
  const std::string doc = std::string(SCELLIS_SOURCE_DIR) + "/examples/life_steps.json";
  for (const std::vector<std::string>& backend :
       {std::vector<std::string>{"--backend=cpu"},
        std::vector<std::string>{"--backend=webgpu", "--allow-software-adapter"}}) {
    SCOPED_TRACE(backend[0]);
    std::vector<std::string> args = {"run",     doc,   "--tier=prod", "--json",
                                     "--steps", "132", "--history",   "next"};
    args.insert(args.end(), backend.begin(), backend.end());
    CliRun r = RunScellis(args);
    ASSERT_TRUE(r.exited && r.exit_code == 0) << r.err;
    Json j = Json::parse(r.out);
    const Json& steps = j["history"]["next"]["steps"];
    ASSERT_EQ(steps.size(), 132u);
    // Every fourth generation the glider has moved one cell down and right.
    for (int k = 4; k <= 132; k += 4)
      EXPECT_EQ(steps[k - 1].get<std::vector<float>>(), GliderAt(k / 4 % 16, k / 4 % 16)) << k;
    EXPECT_EQ(j["stats"]["readback_bytes"].get<int64_t>(), 132 * 1024);
    EXPECT_EQ(GridOf(r), GliderAt(1, 1));
  }
  CliRun text = RunScellis({"run", doc, "--tier=prod", "--backend=cpu", "--steps", "5"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("readback: 1024 bytes over 5 steps"), std::string::npos) << text.out;
  CliRun unknown =
      RunScellis({"run", doc, "--tier=prod", "--backend=cpu", "--steps", "5", "--history", "x"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("error[unknown-output]"), std::string::npos) << unknown.err;
}

// --gpu-timestamps times every dispatch of the run on the GPU: one per Life step here, each with
// a time of its own, the busy total their sum; the glider is where the rule puts it. The host's
// part is split alongside. On the CPU, or with `auto`, the flag is refused before anything runs.
TEST(CliSteps, GpuTimestampsTimeEveryDispatch) {
  setenv("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json", 0);
  const std::string doc = std::string(SCELLIS_SOURCE_DIR) + "/examples/life_steps.json";
  CliRun r = RunScellis({"run", doc, "--tier=prod", "--json", "--steps", "68", "--backend=webgpu",
                         "--allow-software-adapter", "--gpu-timestamps"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << r.err;
  EXPECT_EQ(GridOf(r), GliderAt(1, 1));
  const Json stats = Json::parse(r.out)["stats"];
  ASSERT_TRUE(stats.contains("gpu_timestamps")) << stats.dump();
  const Json& gpu = stats["gpu_timestamps"];
  EXPECT_EQ(gpu["dispatches"].get<int>(), 68);
  EXPECT_EQ(stats["dispatches"].get<int>(), 68);
  ASSERT_EQ(gpu["dispatch_us"].size(), 68u);
  double sum = 0;
  for (const Json& us : gpu["dispatch_us"]) {
    EXPECT_GE(us.get<double>(), 0.0);
    sum += us.get<double>();
  }
  EXPECT_NEAR(gpu["busy_us"].get<double>(), sum, 1e-6 * sum + 1e-9);
  EXPECT_GT(sum, 0.0);
  EXPECT_GE(stats["host_record_ms"].get<double>(), stats["host_encode_ms"].get<double>());
  // By kernel: Life's one kernel, every dispatch and all of the busy time.
  ASSERT_EQ(gpu["by_kernel"].size(), 1u) << gpu["by_kernel"].dump();
  const std::string life_kernel = gpu["by_kernel"].begin().key();
  const Json& life = gpu["by_kernel"].begin().value();
  EXPECT_EQ(life["dispatches"].get<int>(), 68);
  EXPECT_NEAR(life["busy_us"].get<double>(), sum, 1e-6 * sum + 1e-9);
  // Without --json the run says what was timed.
  CliRun text = RunScellis({"run", doc, "--tier=prod", "--steps", "5", "--backend=webgpu",
                            "--allow-software-adapter", "--gpu-timestamps", "--no-record"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("gpu timestamps: 5 of 5 dispatches timed"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find(life_kernel + ": "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(100%), 5 dispatches"), std::string::npos) << text.out;
  // A long run lists the first 4096 dispatches' times; the totals and the sums by kernel count
  // every one.
  CliRun longer =
      RunScellis({"run", doc, "--tier=prod", "--json", "--steps", "4100", "--backend=webgpu",
                  "--allow-software-adapter", "--gpu-timestamps", "--no-record"});
  ASSERT_EQ(longer.exit_code, 0) << longer.err;
  const Json long_gpu = Json::parse(longer.out)["stats"]["gpu_timestamps"];
  EXPECT_EQ(long_gpu["dispatches"].get<int>(), 4100);
  EXPECT_EQ(long_gpu["dispatch_us"].size(), 4096u);
  EXPECT_EQ(long_gpu["by_kernel"][life_kernel]["dispatches"].get<int>(), 4100);
  for (const char* backend : {"--backend=cpu", "--backend=auto"}) {
    CliRun refused = RunScellis(
        {"run", doc, "--tier=prod", "--steps", "4", backend, "--gpu-timestamps", "--no-record"});
    EXPECT_EQ(refused.exit_code, 2) << backend;
    EXPECT_NE(refused.err.find("error[bad-flag]"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("--backend=webgpu"), std::string::npos) << refused.err;
    EXPECT_EQ(refused.out.find("next"), std::string::npos) << "it ran: " << refused.out;
  }
}

}  // namespace
}  // namespace scellis::testing
