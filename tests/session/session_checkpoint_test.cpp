// Checkpoints of sessions (docs/design.md "Checkpoints"; issue 7): every kind of state saved and
// restored, bit-exact resumption (with the optimizer state on the device or offloaded),
// loading into another replication factor or RTS layout, the errors that list what does
// not fit, a damaged file leaving the session unchanged.
#include "core/session/session_checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/ir/error.h"
#include "tests/runtime/two_block_model.h"

namespace plexus::session {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using runtime::testing::f32;
using runtime::testing::read;

// A fresh directory for the files of one test.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("plexus-ckpt-" + std::to_string(::getpid()) + "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::vector<float> iota(size_t n, float base) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = base + static_cast<float>(i);
  return v;
}

// R replicas; "g": 2 groups of R/2 with different values; "w": [7] replica-sharded over
// `shard_over` replicas (1: a plain variable); "r": a remote variable in slot 0 of a
// buffer whose slot 1 holds no variable.
struct Everything {
  ir::Graph g;
  ir::TensorId grouped, w, remote;
  explicit Everything(int64_t replicas, int64_t shard_over) {
    g.set_replication_factor(replicas);
    grouped = g.add_variable("g", ir::DType::Float32, {3}, f32(iota(6, 10)), ir::ReplicaGrouping(replicas, replicas / 2, 1));
    w = shard_over > 1 ? g.add_replica_sharded_variable("w", ir::DType::Float32, {7}, f32(iota(7, 0)), std::nullopt,
                                                        ir::RetrievalMode::OnePerGroup, shard_over)
                       : g.add_variable("w", ir::DType::Float32, {7}, f32(iota(7, 0)));
    const ir::RemoteBufferId buffer = g.add_remote_buffer(ir::DType::Int32, {2}, 2);
    std::vector<std::byte> r0(8);
    remote = g.add_remote_variable("r", ir::DType::Int32, {2}, r0, buffer, 0, std::nullopt, ir::RetrievalMode::OnePerGroup);
  }
};

std::vector<std::byte> groups_of(const Session& s, ir::TensorId t) {
  const ir::TensorInfo& info = s.graph().tensor(t);
  std::vector<std::byte> out(static_cast<size_t>(s.variable_groups(t) * ir::numel(info.sharding ? info.sharding->full_shape : info.shape)) *
                             ir::dtype_size(info.dtype));
  s.read_variable_groups(t, out);
  return out;
}

std::vector<int32_t> slot_of(const Session& s, int64_t entry) {
  std::vector<int32_t> out(static_cast<size_t>(2 * s.replication_factor()));
  s.read_remote_slot(0, entry, std::as_writable_bytes(std::span(out)));
  return out;
}

TEST(SessionCheckpoint, SavesAndRestoresEveryKindOfState) {
  TempDir dir;
  Everything m(2, 2);
  Session s(m.g, {});
  const std::vector<int32_t> raw{1, 2, 3, 4};  // slot 1 of replicas 0 and 1
  s.write_remote_slot(0, 1, std::as_bytes(std::span(raw)));
  s.set_steps(42);
  const auto grouped = groups_of(s, m.grouped), w = groups_of(s, m.w);
  SaveOptions o;
  o.counters = {{"epoch", 3}, {"run", 17}};
  save_session(s, dir.file("a.ckpt"), o);

  std::vector<float> zeros(7, 0.0f);
  s.write_variable(m.w, std::as_bytes(std::span(zeros)));
  const std::vector<int32_t> nines(4, 9);
  s.write_remote_slot(0, 1, std::as_bytes(std::span(nines)));
  s.set_steps(0);
  const LoadResult r = load_session(s, dir.file("a.ckpt"), {});
  EXPECT_EQ(r.step, 42);
  EXPECT_EQ(s.steps(), 42);
  EXPECT_EQ(r.counters, (std::map<std::string, int64_t>{{"epoch", 3}, {"run", 17}}));
  EXPECT_TRUE(r.skipped.empty());
  EXPECT_EQ(groups_of(s, m.grouped), grouped);
  EXPECT_EQ(groups_of(s, m.w), w);
  EXPECT_EQ(read(s, m.w), iota(7, 0));
  EXPECT_EQ(slot_of(s, 1), raw);

  const checkpoint::CheckpointReader file(dir.file("a.ckpt"));
  ASSERT_EQ(file.manifest().tensors.size(), 4u);  // g, w, r, remote_buffer.0.slot.1
  const checkpoint::TensorEntry* e = file.find("w");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->shape, (ir::Shape{7}));  // full, unpadded
  EXPECT_EQ(e->shard_over, 2);
  EXPECT_EQ(e->padding, 1);  // 7 elements in 2 shards of 4
  EXPECT_TRUE(e->shuffle);
  EXPECT_EQ(file.find("g")->rows, 2);
  EXPECT_FALSE(file.find("r")->shuffle);  // int32: not shuffled by default
  EXPECT_EQ(file.find("remote_buffer.0.slot.1")->rows, 2);
}

TEST(SessionCheckpoint, ResumingEqualsTrainingThroughBitForBit) {
  for (bool offload : {false, true}) {
    SCOPED_TRACE(offload ? "optimizer state offloaded" : "optimizer state on the device");
    TempDir dir;
    runtime::testing::TwoBlockModel m(/*adamw=*/true);
    SessionOptions o;
    o.stages = {{{"B1"}, 0}, {{"B2"}, 1}};  // pipelined over 2 devices
    o.device_iterations = 2;
    o.gradient_accumulation = 2;
    o.offload_optimizer_state = offload;
    Session first(m.g, o);
    runtime::testing::train(first, m, 3);
    save_session(first, dir.file("half.ckpt"), {});
    Session resumed(m.g, o);
    EXPECT_EQ(load_session(resumed, dir.file("half.ckpt"), {}).step, 6);
    runtime::testing::train(resumed, m, 3);  // train() feeds runs 0, 1, 2 of its data each time
    Session reference(m.g, o);
    runtime::testing::train(reference, m, 3);
    runtime::testing::train(reference, m, 3);
    EXPECT_EQ(read(resumed, m.w1), read(reference, m.w1));
    EXPECT_EQ(read(resumed, m.w2), read(reference, m.w2));
    EXPECT_EQ(resumed.steps(), 12);
    EXPECT_NE(read(resumed, m.w1), read(first, m.w1));
  }
}

TEST(SessionCheckpoint, LoadsIntoOtherReplicationFactorsAndShardings) {
  TempDir dir;
  Everything saved(2, 2);
  Session s(saved.g, {});
  std::vector<float> trained = iota(7, 0.5f);
  s.write_variable(saved.w, std::as_bytes(std::span(trained)));
  save_session(s, dir.file("r2.ckpt"), {});
  for (auto [replicas, shard_over] : std::vector<std::pair<int64_t, int64_t>>{{4, 4}, {4, 2}, {4, 1}, {2, 1}}) {
    SCOPED_TRACE("R=" + std::to_string(replicas) + " shard_over=" + std::to_string(shard_over));
    Everything target(replicas, shard_over);
    Session t(target.g, {});
    load_session(t, dir.file("r2.ckpt"), {});
    EXPECT_EQ(read(t, target.w), trained);
    EXPECT_EQ(groups_of(t, target.grouped), groups_of(s, saved.grouped));  // 2 groups either way
  }
}

TEST(SessionCheckpoint, OneReplicaTakesRowsOnlyWhenTheyAgree) {
  TempDir dir;
  Everything saved(2, 2);
  Session s(saved.g, {});
  save_session(s, dir.file("r2.ckpt"), {});
  ir::Graph one;  // R=1: "g" has one group, the checkpoint two different ones
  one.add_variable("g", ir::DType::Float32, {3}, f32(iota(3, 0)));
  const ir::TensorId w = one.add_variable("w", ir::DType::Float32, {7}, f32(iota(7, 0)));
  const ir::RemoteBufferId b = one.add_remote_buffer(ir::DType::Int32, {2}, 2);
  one.add_remote_variable("r", ir::DType::Int32, {2}, std::vector<std::byte>(8), b, 0, std::nullopt,
                          ir::RetrievalMode::OnePerGroup);
  Session t(one, {});
  try {
    load_session(t, dir.file("r2.ckpt"), {});
    FAIL() << "loaded";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("g (2 different rows in the checkpoint, one per replica group, 1 in the session)"));
    EXPECT_THAT(e.what(), Not(HasSubstr("remote_buffer.0.slot.1 (")));  // equal rows (zeros) map to one
  }
  EXPECT_EQ(read(t, w), iota(7, 0));  // nothing was loaded
}

TEST(SessionCheckpoint, StrictAndPartialLoadsListWhatDoesNotFit) {
  TempDir dir;
  ir::Graph a;
  a.add_variable("kept", ir::DType::Float32, {2}, f32({1, 2}));
  a.add_variable("only_saved", ir::DType::Float32, {2}, f32({3, 4}));
  a.add_variable("resized", ir::DType::Float32, {2}, f32({5, 6}));
  Session sa(a, {});
  save_session(sa, dir.file("a.ckpt"), {});
  ir::Graph b;
  const ir::TensorId kept = b.add_variable("kept", ir::DType::Float32, {2}, f32({0, 0}));
  b.add_variable("only_session", ir::DType::Float32, {2}, f32({0, 0}));
  b.add_variable("resized", ir::DType::Float32, {3}, f32({0, 0, 0}));
  Session sb(b, {});
  auto message = [&](bool strict) {
    try {
      load_session(sb, dir.file("a.ckpt"), {strict, {}});
    } catch (const ir::Error& e) {
      EXPECT_EQ(e.code(), ir::ErrorCode::InvalidArgument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(true), "checkpoint '" + dir.file("a.ckpt") +
                               "' does not fit the session (missing from the checkpoint: only_session; not in the session: "
                               "only_saved; mismatched: resized (float32[2] in the checkpoint, float32[3] in the session))");
  EXPECT_EQ(message(false), "checkpoint '" + dir.file("a.ckpt") +
                                "' does not fit the session (mismatched: resized (float32[2] in the checkpoint, float32[3] in "
                                "the session))");
  EXPECT_EQ(read(sb, kept), (std::vector<float>{0, 0}));  // refused: nothing loaded

  ir::Graph c;
  const ir::TensorId kept_c = c.add_variable("kept", ir::DType::Float32, {2}, f32({0, 0}));
  c.add_variable("only_session", ir::DType::Float32, {2}, f32({0, 0}));
  Session sc(c, {});
  const LoadResult r = load_session(sc, dir.file("a.ckpt"), {false, {}});
  EXPECT_EQ(read(sc, kept_c), (std::vector<float>{1, 2}));
  EXPECT_EQ(r.skipped, (std::vector<std::string>{"only_session", "only_saved", "resized"}));
  try {
    load_session(sc, dir.file("a.ckpt"), {false, {"epoch"}});
    FAIL() << "loaded";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::NotFound);
    EXPECT_THAT(e.what(), HasSubstr("holds no counter 'epoch'"));
  }
}

TEST(SessionCheckpoint, ADamagedFileLeavesTheSessionUnchanged) {
  TempDir dir;
  Everything m(2, 2);
  Session s(m.g, {});
  save_session(s, dir.file("a.ckpt"), {});
  {
    std::fstream f(dir.file("a.ckpt"), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(0, std::ios::end);
    const auto size = static_cast<std::streamoff>(f.tellg());
    f.seekp(size - 10);  // inside the last frame
    f.put('\x5a');
  }
  std::vector<float> zeros(7, 0.0f);
  s.write_variable(m.w, std::as_bytes(std::span(zeros)));
  s.set_steps(5);
  try {
    load_session(s, dir.file("a.ckpt"), {});
    FAIL() << "loaded";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::BadFormat);
    EXPECT_THAT(e.what(), HasSubstr("tensor 'remote_buffer.0.slot.1'"));
  }
  EXPECT_EQ(read(s, m.w), zeros);
  EXPECT_EQ(s.steps(), 5);
}

TEST(SessionCheckpoint, SavingToAMissingDirectoryIsAnIoErrorNamingTheFile) {
  Everything m(2, 1);
  Session s(m.g, {});
  try {
    save_session(s, "/nonexistent-plexus-dir/a.ckpt", {});
    FAIL() << "saved";
  } catch (const ir::Error& e) {
    EXPECT_EQ(e.code(), ir::ErrorCode::Io);
    EXPECT_THAT(e.what(), HasSubstr("checkpoint '/nonexistent-plexus-dir/a.ckpt': cannot create the temporary file"));
  }
}

}  // namespace
}  // namespace plexus::session
