// fold-row-gathers: gathers of rows read in place by their readers — a matmul reading the rows as
// A, one reading them as A^T, a loss reading gathered labels — on the CPU reference and on
// SwiftShader: no gather kernel left, the values of a float64 computation, and the bits of the
// plan with the pass disabled.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "runtime/backends/backends_test.h"

namespace scellis::runtime {
namespace {

using testing::Open;

constexpr int64_t kTableRows = 10, kRow = 12, kBatch = 6, kOut = 8, kD = 5;

// table [10, 12] and labels [10] picked by rows [6]; y = rows @ w, z = rows^T @ d, and the
// cross entropy of y against the picked labels.
Json Doc() {
  return {
      {"version", 4},
      {"nodes",
       {{{"id", 0}, {"op", "input"}, {"name", "table"}, {"shape", {kTableRows, kRow}}},
        {{"id", 1}, {"op", "input"}, {"name", "rows"}, {"shape", {kBatch}}, {"dtype", "i32"}},
        {{"id", 2}, {"op", "index_select"}, {"a", 0}, {"index", 1}, {"axis", 0}},
        {{"id", 3}, {"op", "input"}, {"name", "w"}, {"shape", {kRow, kOut}}},
        {{"id", 4}, {"op", "matmul"}, {"a", 2}, {"b", 3}},
        {{"id", 5}, {"op", "input"}, {"name", "d"}, {"shape", {kBatch, kD}}},
        {{"id", 6}, {"op", "transpose"}, {"a", 2}},
        {{"id", 7}, {"op", "matmul"}, {"a", 6}, {"b", 5}},
        {{"id", 8}, {"op", "input"}, {"name", "labels"}, {"shape", {kTableRows}}},
        {{"id", 9}, {"op", "index_select"}, {"a", 8}, {"index", 1}, {"axis", 0}},
        {{"id", 10}, {"op", "cross_entropy"}, {"a", 4}, {"target", 9}}}},
      {"outputs",
       {{{"name", "y"}, {"id", 4}}, {{"name", "z"}, {"id", 7}}, {{"name", "loss"}, {"id", 10}}}}};
}

Result<execplan::Plan> PlanFor(const Executor& exec, bool fold) {
  pipeline::CompileOptions o;
  o.lower.tier = policy::Tier::kProd;
  o.plan.budget_bytes = int64_t{1} << 30;
  o.plan.limits = exec.limits();
  if (!fold) o.disabled_passes.insert("fold-row-gathers");
  SCELLIS_ASSIGN_OR_RETURN(pipeline::Compiled c, pipeline::Compile(Doc().dump(), o));
  return *c.plan;
}

HostTensor Floats(std::vector<int64_t> shape, const std::vector<float>& values) {
  HostTensor t = HostTensor::Zeros(MakeType(shape, DType::kF32));
  std::copy(values.begin(), values.end(), t.view<float>().begin());
  return t;
}

std::vector<float> Values(const HostTensor& t) {
  return {t.view<float>().begin(), t.view<float>().end()};
}

class FoldRowGathers : public ::testing::TestWithParam<std::string> {};

TEST_P(FoldRowGathers, ReadersLoadTheTablesRowsAndGiveTheGathersBits) {
  auto exec = Open(GetParam());
  ASSERT_NE(exec, nullptr);
  std::mt19937 rng(::testing::UnitTest::GetInstance()->random_seed());
  std::uniform_real_distribution<float> u(-2, 2);
  std::uniform_int_distribution<int32_t> pick(0, kTableRows - 1), label(0, kOut - 1);
  std::vector<float> table(kTableRows * kRow), w(kRow * kOut), d(kBatch * kD), labels(kTableRows);
  for (float& v : table) v = u(rng);
  for (float& v : w) v = u(rng);
  for (float& v : d) v = u(rng);
  for (float& v : labels) v = static_cast<float>(label(rng));
  std::vector<int32_t> rows(kBatch);
  for (int32_t& r : rows) r = pick(rng);
  rows[1] = rows[0];  // a row picked twice
  HostTensor rows_t = HostTensor::Zeros(MakeType({kBatch}, DType::kI32));
  std::copy(rows.begin(), rows.end(), rows_t.view<int32_t>().begin());
  const Feeds feeds = {{"table", Floats({kTableRows, kRow}, table)},
                       {"rows", rows_t},
                       {"w", Floats({kRow, kOut}, w)},
                       {"d", Floats({kBatch, kD}, d)},
                       {"labels", Floats({kTableRows}, labels)}};

  auto folded = PlanFor(*exec, true);
  ASSERT_TRUE(folded.ok()) << folded.errors().front().Format();
  int gathers = 0;
  for (const kernel::Kernel& k : folded->module().kernels) {
    EXPECT_NE(k.op, "index_select") << kernel::Print(folded->module());
    gathers += static_cast<int>(k.row_gathers.size());
  }
  EXPECT_EQ(gathers, 3) << kernel::Print(folded->module());  // y's A, z's A^T, the loss's labels
  auto unfolded = PlanFor(*exec, false);
  ASSERT_TRUE(unfolded.ok()) << unfolded.errors().front().Format();

  auto a = exec->Run(*folded, feeds);
  ASSERT_TRUE(a.ok()) << a.errors().front().Format();
  auto b = exec->Run(*unfolded, feeds);
  ASSERT_TRUE(b.ok()) << b.errors().front().Format();
  for (size_t o = 0; o < 3; ++o)
    EXPECT_EQ(Values(a->outputs.at(o).second), Values(b->outputs.at(o).second))
        << a->outputs.at(o).first;

  // float64: y = T[rows] w, z = T[rows]^T d, loss = mean(logsumexp(y_i) - y_i[label(rows_i)]).
  const std::vector<float> y = Values(a->outputs.at(0).second), z = Values(a->outputs.at(1).second);
  std::vector<double> y64(kBatch * kOut);
  for (int64_t i = 0; i < kBatch; ++i)
    for (int64_t j = 0; j < kOut; ++j) {
      double s = 0;
      for (int64_t k = 0; k < kRow; ++k) s += double(table[rows[i] * kRow + k]) * w[k * kOut + j];
      y64[i * kOut + j] = s;
      EXPECT_NEAR(y[i * kOut + j], s, 1e-5 * (1 + std::abs(s))) << i << "," << j;
    }
  for (int64_t c = 0; c < kRow; ++c)
    for (int64_t j = 0; j < kD; ++j) {
      double s = 0;
      for (int64_t i = 0; i < kBatch; ++i) s += double(table[rows[i] * kRow + c]) * d[i * kD + j];
      EXPECT_NEAR(z[c * kD + j], s, 1e-5 * (1 + std::abs(s))) << c << "," << j;
    }
  double loss = 0;
  for (int64_t i = 0; i < kBatch; ++i) {
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < kOut; ++j) mx = std::max(mx, y64[i * kOut + j]);
    for (int64_t j = 0; j < kOut; ++j) sum += std::exp(y64[i * kOut + j] - mx);
    loss += mx + std::log(sum) - y64[i * kOut + static_cast<int64_t>(labels[rows[i]])];
  }
  loss /= kBatch;
  EXPECT_NEAR(Values(a->outputs.at(2).second).at(0), loss, 1e-5 * (1 + std::abs(loss)));
}

INSTANTIATE_TEST_SUITE_P(Backends, FoldRowGathers, ::testing::Values("cpu", "webgpu"));

// A gather that is a named output, or that an elementwise kernel reads, is a kernel of its own.
TEST(FoldRowGathersPass, AGatherReadOtherwiseStays) {
  Json doc = {
      {"version", 4},
      {"nodes",
       {{{"id", 0}, {"op", "input"}, {"name", "table"}, {"shape", {4, 4}}},
        {{"id", 1}, {"op", "input"}, {"name", "rows"}, {"shape", {2}}, {"dtype", "i32"}},
        {{"id", 2}, {"op", "index_select"}, {"a", 0}, {"index", 1}, {"axis", 0}},
        {{"id", 3}, {"op", "relu"}, {"a", 2}},
        {{"id", 4}, {"op", "index_select"}, {"a", 0}, {"index", 1}, {"axis", 0}},
        {{"id", 5}, {"op", "matmul"}, {"a", 4}, {"b", 0}}}},
      {"outputs",
       {{{"name", "r"}, {"id", 3}}, {{"name", "picked"}, {"id", 4}}, {{"name", "p"}, {"id", 5}}}}};
  pipeline::CompileOptions o;
  o.lower.tier = policy::Tier::kProd;
  o.plan.budget_bytes = int64_t{1} << 30;
  auto c = pipeline::Compile(doc.dump(), o);
  ASSERT_TRUE(c.ok()) << c.errors().front().Format();
  int selects = 0;
  for (const kernel::Kernel& k : c->module->kernels) {
    selects += k.op == "index_select";
    EXPECT_TRUE(k.row_gathers.empty()) << k.name;
  }
  EXPECT_EQ(selects, 2) << kernel::Print(*c->module);
}

}  // namespace
}  // namespace scellis::runtime
