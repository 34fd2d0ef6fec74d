// Shard records of a chunked run (one process, 4 chunks: one shard holding one partial, the whole
// tree) and their verification on the CPU reference: the record reproduces bit for bit; a record
// whose partial was changed in its last bit does not; the run's loss is the one the record's
// partial holds.
#include "train/shards.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "store/store.h"
#include "support/cli.h"
#include "train/trainer.h"
#include "support/examples.h"

namespace scellis::train {
namespace {

namespace fs = std::filesystem;

using scellis::testing::FashionMlp;

class ShardsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir("scellis-shards-test"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(ShardsTest, ARecordedShardReproducesAndATamperedOneDoesNot) {
  TrainOptions o;
  o.select.requested = "cpu";
  o.epochs = 1;
  o.max_steps = 3;
  o.chunks = 4;
  o.record_shards = true;
  o.store_root = dir_.string();
  auto r = Trainer(o).Train(FashionMlp());
  ASSERT_TRUE(r.ok()) << r.errors().front().Format();
  ASSERT_EQ(r->chunks, 4);
  ASSERT_FALSE(r->shard_record.empty());

  auto check = VerifyShard(r->shard_record, 0, dir_.string());
  ASSERT_TRUE(check.ok()) << check.errors().front().Format();
  EXPECT_TRUE(check->ok);
  EXPECT_TRUE(check->bit_exact);
  EXPECT_EQ(check->global_step, 3);
  EXPECT_EQ(check->chunks, 4);
  EXPECT_EQ(check->partials, 1);

  auto bad_shard = VerifyShard(r->shard_record, 1, dir_.string());
  ASSERT_FALSE(bad_shard.ok());
  EXPECT_EQ(bad_shard.errors().front().code, "bad-flag");

  // The partial is the sum of the 4 chunks' gradient sets; its last value is their losses' sum:
  // divided by 4 it is the step's loss the run reported.
  auto st = store::Store::Open(dir_.string());
  ASSERT_TRUE(st.ok());
  auto rec = st->Get(r->shard_record);
  ASSERT_TRUE(rec.ok());
  Json record = rec.value();
  const std::string partial_id = record["shards"][0]["partials"][0]["values"].get<std::string>();
  auto bytes = st->GetBlob(partial_id);
  ASSERT_TRUE(bytes.ok());
  std::string values = bytes.value();
  float loss_sum = 0;
  std::memcpy(&loss_sum, values.data() + values.size() - sizeof(float), sizeof(float));
  EXPECT_EQ(loss_sum / 4.0f, r->losses.back());

  // One bit of one gradient changed: the re-run no longer matches, and says by how much.
  values[0] = static_cast<char>(values[0] ^ 1);
  auto tampered_id = st->PutBlob(values);
  ASSERT_TRUE(tampered_id.ok());
  record["shards"][0]["partials"][0]["values"] = tampered_id.value();
  auto tampered = st->Put(record);
  ASSERT_TRUE(tampered.ok());
  auto mismatch = VerifyShard(tampered.value(), 0, dir_.string());
  ASSERT_TRUE(mismatch.ok()) << mismatch.errors().front().Format();
  EXPECT_FALSE(mismatch->bit_exact);
  EXPECT_FALSE(mismatch->ok);
  EXPECT_GT(mismatch->max_abs_diff, 0);

  // Not a shard record at all.
  auto other = st->Put(Json{{"kind", "receipt"}});
  ASSERT_TRUE(other.ok());
  auto refused = VerifyShard(other.value(), 0, dir_.string());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.errors().front().code, "not-a-shard-record");
}

TEST_F(ShardsTest, RecordingNeedsADataParallelRun) {
  TrainOptions o;
  o.select.requested = "cpu";
  o.max_steps = 1;
  o.record_shards = true;
  o.store_root = dir_.string();
  auto r = Trainer(o).Train(FashionMlp());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors().front().code, "bad-flag");
}

}  // namespace
}  // namespace scellis::train
