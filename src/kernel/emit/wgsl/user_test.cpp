// A user op's kernel source: the document's WGSL verbatim, where EmittedSource says it begins,
// after the accessors and shape constants the contract promises, and before the entry point that
// calls it once per output element.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "pipeline/compile.h"

namespace scellis::kernel {
namespace {

std::string ExampleText() {
  std::ifstream in(std::string(SCELLIS_SOURCE_DIR) + "/examples/user_ops/jacobi5.json");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(UserOpWgsl, WrapsTheUsersFunctionAsTheContractSays) {
  pipeline::CompileOptions o;
  o.lower.tier = policy::Tier::kProd;
  o.up_to = pipeline::Rung::kKernel;
  auto c = pipeline::Compile(ExampleText(), o);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  const Kernel* user = nullptr;
  for (const Kernel& k : c->module->kernels)
    if (k.op == "jacobi5") user = &k;
  ASSERT_NE(user, nullptr);
  EXPECT_EQ(user->kind, KernelKind::kOp);
  EXPECT_EQ(user->nodes.size(), 1u);  // never fused with its neighbours

  const EmittedSource& src = user->Wgsl();
  const std::string& source = src.source;
  EXPECT_NE(source.find("const U_RANK: u32 = 2u;"), std::string::npos) << source;
  EXPECT_NE(source.find("const U_SHAPE_0: u32 = 33u;"), std::string::npos) << source;
  EXPECT_NE(source.find("const U_SHAPE_1: u32 = 47u;"), std::string::npos) << source;
  EXPECT_NE(source.find("const OUT_SHAPE_1: u32 = 47u;"), std::string::npos) << source;
  EXPECT_NE(source.find("fn u_at(index: u32) -> f32 { return in0[index]; }"), std::string::npos);
  EXPECT_NE(source.find("if (i >= 1551u) { return; }"), std::string::npos) << source;  // 33 * 47
  EXPECT_NE(source.find("out[i] = jacobi5(i);"), std::string::npos) << source;

  // The user's lines, where the source says they are.
  const std::string wgsl = Json::parse(ExampleText())["ops"]["jacobi5"]["wgsl"];
  const std::vector<std::string> mine = Lines(wgsl), all = Lines(source);
  ASSERT_EQ(src.user_lines, static_cast<int>(mine.size()));
  ASSERT_GE(src.user_first_line, 1);
  ASSERT_LE(static_cast<size_t>(src.user_first_line - 1 + src.user_lines), all.size());
  for (size_t i = 0; i < mine.size(); ++i)
    EXPECT_EQ(all[src.user_first_line - 1 + i], mine[i]) << "user line " << i + 1;
}

}  // namespace
}  // namespace scellis::kernel
