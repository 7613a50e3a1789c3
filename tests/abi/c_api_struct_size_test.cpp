// struct_size (plexus.h, "ABI rules"; abi/src/struct_size.h): for every growable public
// struct, a caller built against each older C API version (its struct_size is the struct
// as that version had it) works: an options struct's later fields are never read (they
// take their defaults), an out-struct's later fields are never written. Newer callers
// (struct_size beyond today's sizeof) work too, and a struct_size short of the first
// version, or any other that is not a version's, is refused naming the argument. The loader's options are tested the same way in
// c_api_loader_test.cpp (CApiLoader.BadOptionsAreRefused: a version 5 caller).
#include <plexus/plexus.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "tests/abi/c_api_test_util.h"

namespace {

using namespace capi_test;

// An IR of R replicas: h2d x [2] -> y = -x -> d2h, and a variable w [4].
IrPtr negate_ir(int64_t replicas, plx_stream* x, plx_stream* y, plx_tensor* w) {
  IrPtr ir = make_ir();
  EXPECT_EQ(plx_ir_set_replication_factor(ir.get(), replicas), PLX_OK) << plx_last_error();
  const int64_t shape[] = {2}, wshape[] = {4};
  const float values[] = {1, 2, 3, 4};
  plx_tensor xt = 0, yt = 0;
  size_t n = 0;
  EXPECT_EQ(plx_ir_add_h2d_stream(ir.get(), "x", PLX_DTYPE_FLOAT32, shape, 1, x, &xt), PLX_OK);
  EXPECT_EQ(plx_ir_add_op(ir.get(), "neg", &xt, 1, nullptr, 0, &yt, 1, &n), PLX_OK);
  EXPECT_EQ(plx_ir_add_d2h_stream(ir.get(), "y", yt, y), PLX_OK);
  EXPECT_EQ(plx_ir_add_variable(ir.get(), "w", PLX_DTYPE_FLOAT32, wshape, 1, values, sizeof values, w), PLX_OK);
  return ir;
}

// The status of plx_session_create with `o`; the session is destroyed at once.
plx_status create_status(const plx_ir* ir, const plx_session_options& o) {
  plx_session* raw = nullptr;
  const plx_status status = plx_session_create(ir, &o, &raw);
  plx_session_destroy(raw);
  return status;
}

// The JSON report of a session created with `o` (which must succeed); destroyed at once.
std::string report_of(const plx_ir* ir, const plx_session_options& o) {
  plx_session* raw = nullptr;
  EXPECT_EQ(plx_session_create(ir, &o, &raw), PLX_OK) << plx_last_error();
  const SessionPtr s(raw);
  char report[8192] = {};
  if (raw != nullptr) {
    EXPECT_EQ(plx_session_get_report(s.get(), report, sizeof report, nullptr), PLX_OK);
  }
  return report;
}

// plx_session_options: a caller of version v (struct_size = the offset of the next
// version's first field) creates its session although that next field holds a value
// plx_session_create refuses when it reads it; with the next version's struct_size the same
// struct is refused, so the cut is exactly at the caller's struct_size.
TEST(CApiStructSize, SessionOptionsOfEveryOlderVersion) {
  plx_stream x = 0, y = 0;
  plx_tensor w = 0;
  const IrPtr ir = negate_ir(2, &x, &y, &w);
  struct Version {
    int version;
    size_t struct_size;                   // the struct as that version had it
    size_t next_size;                     // ... and as the next version has it
    void (*poison_next)(plx_session_options&);  // a refused value in the next version's field
    plx_status refused;
  };
  const Version versions[] = {
      {1, offsetof(plx_session_options, collectives_plugin), offsetof(plx_session_options, gradient_accumulation),
       [](plx_session_options& o) { o.collective_timeout_ms = 0; }, PLX_ERR_INVALID_ARGUMENT},
      {2, offsetof(plx_session_options, gradient_accumulation), offsetof(plx_session_options, prefetch_depth),
       [](plx_session_options& o) { o.gradient_accumulation = 0; }, PLX_ERR_INVALID_ARGUMENT},
      {4, offsetof(plx_session_options, prefetch_depth), offsetof(plx_session_options, num_workers),
       [](plx_session_options& o) { o.prefetch_depth = -1; }, PLX_ERR_INVALID_ARGUMENT},
      {5, offsetof(plx_session_options, num_workers), offsetof(plx_session_options, weight_update_on_host),
       [](plx_session_options& o) { o.num_workers = 3; }, PLX_ERR_INVALID_ARGUMENT},  // 3 does not divide R = 2
  };
  for (const Version& v : versions) {
    SCOPED_TRACE("a version " + std::to_string(v.version) + " caller");
    plx_session_options o;
    plx_session_options_init(&o);
    v.poison_next(o);
    o.struct_size = v.struct_size;
    EXPECT_EQ(create_status(ir.get(), o), PLX_OK) << plx_last_error();
    o.struct_size = v.next_size;
    EXPECT_EQ(create_status(ir.get(), o), v.refused) << "the next version's field is read";
  }
  // Version 8: weight_update_on_host (version 9) keeps its default, 0.
  plx_session_options v8;
  plx_session_options_init(&v8);
  v8.struct_size = offsetof(plx_session_options, weight_update_on_host);
  v8.weight_update_on_host = 1;
  EXPECT_THAT(report_of(ir.get(), v8), HasSubstr("\"weight_update_on_host\": false"));
  // Version 9 (and 12): gradient_bucket_bytes (version 13) keeps its default, 25 MiB.
  plx_session_options v12;
  plx_session_options_init(&v12);
  v12.struct_size = offsetof(plx_session_options, gradient_bucket_bytes);
  v12.gradient_bucket_bytes = 7;
  EXPECT_THAT(report_of(ir.get(), v12), HasSubstr("\"gradient_bucket_bytes\": 26214400"));
}

TEST(CApiStructSize, ShortAndNewerOptionsStructs) {
  plx_stream x = 0, y = 0;
  plx_tensor w = 0;
  const IrPtr ir = negate_ir(1, &x, &y, &w);
  plx_session_options o;
  plx_session_options_init(&o);
  o.struct_size = offsetof(plx_session_options, threads_per_device);  // short of version 1
  EXPECT_PLX_ERROR(create_status(ir.get(), o), PLX_ERR_INVALID_ARGUMENT, "plx_session_create: options->struct_size is",
                   "plx_session_options_init");
  struct Newer {  // a caller built against a later version with one more field
    plx_session_options today;
    int64_t later_field;
  } newer;
  plx_session_options_init(&newer.today);
  newer.today.struct_size = sizeof newer;
  newer.later_field = -1;
  EXPECT_EQ(create_status(ir.get(), newer.today), PLX_OK) << plx_last_error();
}

// plx_variable_options: a version 2 caller (no shard_over) shards over the whole group; a
// version 3 caller's shard_over 3 does not divide R = 2 and is refused.
TEST(CApiStructSize, VariableOptionsOfVersion2) {
  IrPtr ir = make_ir();
  ASSERT_PLX_OK(plx_ir_set_replication_factor(ir.get(), 2));
  plx_variable_options o;
  plx_variable_options_init(&o);
  o.shard_over = 3;
  const int64_t shape[] = {4};
  const float values[] = {1, 2, 3, 4};
  plx_tensor var = 0, shard = 0;
  o.struct_size = offsetof(plx_variable_options, shard_over);
  ASSERT_PLX_OK(plx_ir_add_replica_sharded_variable(ir.get(), "v2", PLX_DTYPE_FLOAT32, shape, 1, values, sizeof values,
                                                    &o, &var, &shard));
  int64_t dims[1] = {};
  size_t rank = 0;
  ASSERT_PLX_OK(plx_ir_get_tensor_type(ir.get(), shard, nullptr, dims, 1, &rank));
  EXPECT_EQ(dims[0], 2) << "4 elements over the 2 replicas of the group";
  o.struct_size = sizeof o;
  EXPECT_PLX_ERROR(plx_ir_add_replica_sharded_variable(ir.get(), "v3", PLX_DTYPE_FLOAT32, shape, 1, values,
                                                       sizeof values, &o, &var, &shard),
                   PLX_ERR_INVALID_GROUPING);
  o.struct_size = offsetof(plx_variable_options, retrieval_mode);  // short of version 2
  EXPECT_PLX_ERROR(plx_ir_add_replica_sharded_variable(ir.get(), "short", PLX_DTYPE_FLOAT32, shape, 1, values,
                                                       sizeof values, &o, &var, &shard),
                   PLX_ERR_INVALID_ARGUMENT, "options->struct_size is", "plx_variable_options_init");
}

// An out-struct S inside a larger buffer whose bytes start as 0x5A: after a call with
// struct_size = `size`, the bytes at and after `size` are still 0x5A and struct_size is the
// caller's.
template <class S>
struct Guarded {
  union {
    S s;
    unsigned char bytes[sizeof(S) + 16];
  };
  explicit Guarded(size_t size) {
    std::memset(bytes, 0x5A, sizeof bytes);
    s.struct_size = size;
  }
  bool untouched_from(size_t offset) const {
    for (size_t i = offset; i < sizeof bytes; ++i) {
      if (bytes[i] != 0x5A) return false;
    }
    return true;
  }
};

struct Session {
  plx_stream x = 0, y = 0;
  plx_tensor w = 0;
  IrPtr ir = negate_ir(1, &x, &y, &w);
  SessionPtr session;
  Session() {
    plx_session* raw = nullptr;
    EXPECT_EQ(plx_session_create(ir.get(), nullptr, &raw), PLX_OK) << plx_last_error();
    session.reset(raw);
    const float in[2] = {1, 2};
    float out[2] = {};
    const int64_t shape[] = {2};
    const plx_host_array input{x, PLX_DTYPE_FLOAT32, const_cast<float*>(in), shape, 1};
    const plx_host_array output{y, PLX_DTYPE_FLOAT32, out, shape, 1};
    EXPECT_EQ(plx_session_run(session.get(), &input, 1, &output, 1), PLX_OK) << plx_last_error();
  }
};

// Found by the C API decoding fuzzer (tests/abi/fuzz): a struct_size ending inside a field
// made that field half the caller's bytes and half the default's; for a pointer
// (collectives_plugin here) a wild pointer that plx_session_create read. The struct_size of
// every version works (the end of its last field or its sizeof); any other short of today's
// sizeof is refused, naming the versions' sizes.
TEST(CApiStructSize, AStructSizeInsideAFieldOrBetweenVersionsIsRefused) {
  plx_stream x = 0, y = 0;
  plx_tensor w = 0;
  const IrPtr ir = negate_ir(1, &x, &y, &w);
  plx_session_options o;
  plx_session_options_init(&o);
  o.collectives_plugin = "local";
  const size_t inside_plugin = offsetof(plx_session_options, collectives_plugin) + 4;
  const size_t inside_timeout = offsetof(plx_session_options, collective_timeout_ms) + 2;
  const size_t between_fields = offsetof(plx_session_options, collective_timeout_ms);
  for (const size_t size : {inside_plugin, inside_timeout, between_fields, sizeof(plx_session_options) - 1}) {
    o.struct_size = size;
    EXPECT_PLX_ERROR(create_status(ir.get(), o), PLX_ERR_INVALID_ARGUMENT,
                     "plx_session_create: options->struct_size is " + std::to_string(size),
                     "not the size of a version of the struct (32, 48, 112, 128, 144, 152 or 160", "plx_session_options_init");
  }
  for (const size_t size : {offsetof(plx_session_options, threads_per_device) + sizeof(int32_t),
                            offsetof(plx_session_options, collectives_plugin)}) {
    o.struct_size = size;  // version 1, as the end of its last field and as its sizeof
    EXPECT_EQ(create_status(ir.get(), o), PLX_OK) << plx_last_error();
  }
  const Session m;
  Guarded<plx_memory_stats> inside_a_count(offsetof(plx_memory_stats, remote_buffer_bytes) + 4);
  EXPECT_PLX_ERROR(plx_session_get_memory_stats(m.session.get(), 0, &inside_a_count.s), PLX_ERR_INVALID_ARGUMENT,
                   "out_stats->struct_size is 52", "(48, 56 or 64 bytes");
  EXPECT_TRUE(inside_a_count.untouched_from(sizeof(size_t)));
}

// plx_memory_stats: version 1 and 3 callers get their fields, the later ones untouched.
TEST(CApiStructSize, MemoryStatsOfEveryOlderVersion) {
  const Session m;
  for (size_t size : {offsetof(plx_memory_stats, remote_buffer_bytes), offsetof(plx_memory_stats, offloaded_bytes),
                      sizeof(plx_memory_stats), sizeof(plx_memory_stats) + 8}) {
    SCOPED_TRACE("struct_size " + std::to_string(size));
    Guarded<plx_memory_stats> g(size);
    ASSERT_PLX_OK(plx_session_get_memory_stats(m.session.get(), 0, &g.s));
    EXPECT_EQ(g.s.struct_size, size);
    EXPECT_EQ(g.s.variable_bytes, 16) << "w: 4 floats";
    EXPECT_TRUE(g.untouched_from(std::min(size, sizeof(plx_memory_stats))));
    if (size > offsetof(plx_memory_stats, remote_buffer_bytes)) {
      EXPECT_EQ(g.s.remote_buffer_bytes, 0);
    }
  }
  Guarded<plx_memory_stats> short_of_v1(offsetof(plx_memory_stats, planned_peak_bytes));
  EXPECT_PLX_ERROR(plx_session_get_memory_stats(m.session.get(), 0, &short_of_v1.s), PLX_ERR_INVALID_ARGUMENT,
                   "out_stats->struct_size is 40", "at least 48");
  EXPECT_TRUE(short_of_v1.untouched_from(sizeof(size_t)));
}

// The structs of one version so far (stream stats, variable storage, replica info): their
// first struct_size works, a newer caller's trailing bytes are not written, one byte short
// is refused and leaves the struct alone.
template <class S, class Call>
void expect_single_version(const char* what, size_t first_size, Call call) {
  SCOPED_TRACE(what);
  for (size_t size : {first_size, sizeof(S) + 8}) {
    Guarded<S> g(size);
    ASSERT_PLX_OK(call(&g.s));
    EXPECT_EQ(g.s.struct_size, size);
    EXPECT_TRUE(g.untouched_from(std::min(size, sizeof(S))));
  }
  Guarded<S> short_one(first_size - 1);
  EXPECT_PLX_ERROR(call(&short_one.s), PLX_ERR_INVALID_ARGUMENT, "struct_size is " + std::to_string(first_size - 1));
  EXPECT_TRUE(short_one.untouched_from(sizeof(size_t)));
}

TEST(CApiStructSize, OutStructsOfOneVersion) {
  const Session m;
  expect_single_version<plx_stream_stats>("plx_stream_stats", sizeof(plx_stream_stats), [&](plx_stream_stats* s) {
    return plx_session_get_stream_stats(m.session.get(), s);
  });
  expect_single_version<plx_variable_storage>(
      "plx_variable_storage", sizeof(plx_variable_storage),
      [&](plx_variable_storage* s) { return plx_session_get_variable_storage(m.session.get(), m.w, s); });
  expect_single_version<plx_replica_info>("plx_replica_info", sizeof(plx_replica_info), [&](plx_replica_info* s) {
    return plx_session_get_replicas(m.session.get(), s);
  });
  plx_stream_stats stats{};
  stats.struct_size = sizeof stats;
  ASSERT_PLX_OK(plx_session_get_stream_stats(m.session.get(), &stats));
  EXPECT_EQ(stats.h2d_bytes, 8);
  EXPECT_EQ(stats.d2h_bytes, 8);
}

// plx_run_options and plx_checkpoint_options (one version each): the first struct_size and
// a newer caller's work; one byte short is refused naming the _init function.
TEST(CApiStructSize, OptionsStructsOfOneVersion) {
  const Session m;
  const float in[2] = {3, 4};
  const int64_t shape[] = {2};
  const plx_host_array input{m.x, PLX_DTYPE_FLOAT32, const_cast<float*>(in), shape, 1};
  struct NewerRun {
    plx_run_options today;
    int64_t later_field;
  } run;
  plx_run_options_init(&run.today);
  run.today.inputs = &input;
  run.today.num_inputs = 1;
  run.later_field = -1;
  for (size_t size : {sizeof(plx_run_options), sizeof(NewerRun)}) {
    run.today.struct_size = size;
    EXPECT_EQ(plx_session_run_with(m.session.get(), &run.today), PLX_OK) << plx_last_error();
  }
  run.today.struct_size = sizeof(plx_run_options) - 1;
  EXPECT_PLX_ERROR(plx_session_run_with(m.session.get(), &run.today), PLX_ERR_INVALID_ARGUMENT,
                   "options->struct_size is", "plx_run_options_init");

  const std::string path =
      (std::filesystem::temp_directory_path() / ("plexus_struct_size_" + std::to_string(::getpid()) + ".ckpt")).string();
  struct NewerCheckpoint {
    plx_checkpoint_options today;
    int64_t later_field;
  } ckpt;
  plx_checkpoint_options_init(&ckpt.today);
  ckpt.later_field = -1;
  for (size_t size : {sizeof(plx_checkpoint_options), sizeof(NewerCheckpoint)}) {
    ckpt.today.struct_size = size;
    EXPECT_EQ(plx_session_save_checkpoint(m.session.get(), path.c_str(), &ckpt.today), PLX_OK) << plx_last_error();
    EXPECT_EQ(plx_session_load_checkpoint(m.session.get(), path.c_str(), &ckpt.today), PLX_OK) << plx_last_error();
  }
  ckpt.today.struct_size = sizeof(plx_checkpoint_options) - 1;
  EXPECT_PLX_ERROR(plx_session_save_checkpoint(m.session.get(), path.c_str(), &ckpt.today), PLX_ERR_INVALID_ARGUMENT,
                   "options->struct_size is", "plx_checkpoint_options_init");
  std::filesystem::remove(path);
}

}  // namespace
