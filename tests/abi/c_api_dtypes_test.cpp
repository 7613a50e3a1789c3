// The dtypes of API version 19 through the C API only: float16, int8, uint32 and bool
// variables written and read back bit for bit, a float16 variable updated on the device
// (add_: computed in float32, rounded once), and a checkpoint holding one variable of each
// dtype restoring every byte.
#include <plexus/plexus.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/abi/c_api_test_util.h"

namespace {

using namespace capi_test;

constexpr int64_t kShape[] = {4};

// Four elements of each new dtype, as bytes: float16 1.0, -2.5, 65504 (largest), 2^-24
// (smallest subnormal); int8 -128, -1, 0, 127; uint32 0, 1, 2^31, 2^32 - 1; bool 0, 1, 1, 0.
std::vector<uint8_t> sample(plx_dtype dtype) {
  std::vector<uint8_t> bytes;
  auto append = [&](const auto& values) {
    bytes.resize(sizeof values);
    std::memcpy(bytes.data(), &values, sizeof values);
  };
  if (dtype == PLX_DTYPE_FLOAT16) append(std::array<uint16_t, 4>{0x3c00, 0xc100, 0x7bff, 0x0001});
  if (dtype == PLX_DTYPE_INT8) append(std::array<int8_t, 4>{-128, -1, 0, 127});
  if (dtype == PLX_DTYPE_UINT32) append(std::array<uint32_t, 4>{0, 1, 0x80000000u, 0xffffffffu});
  if (dtype == PLX_DTYPE_BOOL) append(std::array<uint8_t, 4>{0, 1, 1, 0});
  return bytes;
}

constexpr plx_dtype kNewDtypes[] = {PLX_DTYPE_FLOAT16, PLX_DTYPE_INT8, PLX_DTYPE_UINT32, PLX_DTYPE_BOOL};

// One variable of each new dtype ("v4" ... "v7", initialised with sample()) and a session.
struct Variables {
  IrPtr ir = make_ir();
  std::vector<plx_tensor> tensors;
  SessionPtr session;
  Variables() {
    for (plx_dtype d : kNewDtypes) {
      const std::vector<uint8_t> data = sample(d);
      plx_tensor t = 0;
      const std::string name = "v" + std::to_string(d);
      EXPECT_EQ(plx_ir_add_variable(ir.get(), name.c_str(), d, kShape, 1, data.data(), data.size(), &t), PLX_OK)
          << plx_last_error();
      tensors.push_back(t);
    }
    plx_session* s = nullptr;
    EXPECT_EQ(plx_session_create(ir.get(), nullptr, &s), PLX_OK) << plx_last_error();
    session.reset(s);
  }
  std::vector<uint8_t> read(size_t i) const {
    std::vector<uint8_t> out(sample(kNewDtypes[i]).size());
    EXPECT_EQ(plx_session_read_variable(session.get(), tensors[i], out.data(), out.size()), PLX_OK) << plx_last_error();
    return out;
  }
};

TEST(CApiDtypes, NewDtypesHaveTheirTypeAndRoundTripBitForBit) {
  Variables v;
  for (size_t i = 0; i < v.tensors.size(); ++i) {
    SCOPED_TRACE(kNewDtypes[i]);
    plx_dtype dtype = 0;
    int64_t dims[PLX_MAX_RANK];
    size_t rank = 0;
    ASSERT_PLX_OK(plx_ir_get_tensor_type(v.ir.get(), v.tensors[i], &dtype, dims, PLX_MAX_RANK, &rank));
    EXPECT_EQ(dtype, kNewDtypes[i]);
    EXPECT_EQ(v.read(i), sample(kNewDtypes[i]));
    std::vector<uint8_t> changed = sample(kNewDtypes[i]);
    std::reverse(changed.begin(), changed.end());
    if (kNewDtypes[i] == PLX_DTYPE_BOOL) changed = {1, 1, 0, 1};
    ASSERT_PLX_OK(plx_session_write_variable(v.session.get(), v.tensors[i], changed.data(), changed.size()));
    EXPECT_EQ(v.read(i), changed);
  }
}

TEST(CApiDtypes, Float16VariableIsUpdatedInFloat32AndRoundedOnce) {
  IrPtr ir = make_ir();
  const uint16_t w0[4] = {0x3c00, 0x3c00, 0x7bff, 0x0001};  // 1, 1, 65504, 2^-24
  const uint16_t x0[4] = {0x1000, 0x1200, 0x5000, 0x0001};  // 2^-11, 3 * 2^-12, 32, 2^-24
  plx_tensor w = 0, x = 0, out = 0;
  ASSERT_PLX_OK(plx_ir_add_variable(ir.get(), "w", PLX_DTYPE_FLOAT16, kShape, 1, w0, sizeof w0, &w));
  ASSERT_PLX_OK(plx_ir_add_constant(ir.get(), PLX_DTYPE_FLOAT16, kShape, 1, x0, sizeof x0, &x));
  const plx_tensor inputs[] = {w, x};
  size_t n = 0;
  ASSERT_PLX_OK(plx_ir_add_op(ir.get(), "add_", inputs, 2, nullptr, 0, &out, 1, &n));
  plx_session* s = nullptr;
  ASSERT_PLX_OK(plx_session_create(ir.get(), nullptr, &s));
  SessionPtr session(s);
  ASSERT_PLX_OK(plx_session_run(session.get(), nullptr, 0, nullptr, 0));
  uint16_t got[4];
  ASSERT_PLX_OK(plx_session_read_variable(session.get(), w, got, sizeof got));
  // 1 + 2^-11 is a tie: even 1.0; 1 + 1.5 * 2^-11 rounds up to 1 + 2^-10; 65504 + 32 = 65536
  // overflows to inf; 2^-24 + 2^-24 = 2^-23 (a subnormal).
  EXPECT_EQ(std::vector<uint16_t>(got, got + 4), (std::vector<uint16_t>{0x3c00, 0x3c01, 0x7c00, 0x0002}));
}

TEST(CApiDtypes, CheckpointRestoresEveryNewDtype) {
  Variables v;
  const std::string file = (std::filesystem::temp_directory_path() /
                            ("plexus-capi-dtypes-" + std::to_string(::getpid()) + ".ckpt")).string();
  ASSERT_PLX_OK(plx_session_save_checkpoint(v.session.get(), file.c_str(), nullptr));
  for (size_t i = 0; i < v.tensors.size(); ++i) {
    const std::vector<uint8_t> zeros(sample(kNewDtypes[i]).size(), 0);
    ASSERT_PLX_OK(plx_session_write_variable(v.session.get(), v.tensors[i], zeros.data(), zeros.size()));
    EXPECT_EQ(v.read(i), zeros);
  }
  ASSERT_PLX_OK(plx_session_load_checkpoint(v.session.get(), file.c_str(), nullptr));
  for (size_t i = 0; i < v.tensors.size(); ++i) EXPECT_EQ(v.read(i), sample(kNewDtypes[i])) << kNewDtypes[i];
  std::filesystem::remove(file);
}

TEST(CApiDtypes, AnUnknownDtypeIsRefusedNamingIt) {
  IrPtr ir = make_ir();
  const uint8_t data[4] = {};
  plx_tensor t = kSentinelId;
  EXPECT_PLX_ERROR(plx_ir_add_variable(ir.get(), "w", 8, kShape, 1, data, sizeof data, &t), PLX_ERR_INVALID_ARGUMENT,
                   "dtype 8 is not a PLX_DTYPE_* value");
  EXPECT_EQ(t, kSentinelId);
}

}  // namespace
