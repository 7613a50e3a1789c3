// Helpers shared by the C-API tests: status/message assertions, RAII for handles, IDX files in a temporary folder.
#pragma once

#include <plexus/plexus.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace capi_test {

using ::testing::HasSubstr;


// Values that no successful call would write, to see that failed calls leave
// out-parameters alone.
constexpr uint64_t kSentinelId = 0xDEADBEEFCAFEF00Dull;
constexpr size_t kSentinelCount = 0xABCDEF;

// Sets this thread's last error to a known, unrelated message, so a check never passes
// on the message of an earlier call.
inline void reset_last_error() {
  ASSERT_EQ(plx_dataset_get_data(nullptr, nullptr, nullptr, nullptr), PLX_ERR_INVALID_ARGUMENT);
  ASSERT_THAT(plx_last_error(), HasSubstr("plx_dataset_get_data"));
}

// EXPECT_PLX_ERROR(call, status, "part", ...): `call` returns `status` and
// plx_last_error() contains every part.
#define EXPECT_PLX_ERROR(call, status, ...)                                                                \
  do {                                                                                                     \
    capi_test::reset_last_error();                                                                         \
    const plx_status got_ = (call);                                                                        \
    const std::string message_ = plx_last_error();                                                         \
    EXPECT_EQ(got_, (status)) << "got " << plx_status_name(got_) << " (\"" << message_ << "\"), expected " \
                              << plx_status_name(status) << "\n  from: " #call;                            \
    for (const std::string& part_ : std::initializer_list<std::string>{__VA_ARGS__}) {                     \
      EXPECT_THAT(message_, HasSubstr(part_)) << "from: " #call;                                           \
    }                                                                                                      \
  } while (0)

#define ASSERT_PLX_OK(call)                                                                             \
  do {                                                                                                  \
    const plx_status got_ = (call);                                                                     \
    ASSERT_EQ(got_, PLX_OK) << plx_status_name(got_) << ": " << plx_last_error() << "\n  from: " #call; \
  } while (0)

struct IrDeleter {
  void operator()(plx_ir* p) const { plx_ir_destroy(p); }
};
struct SessionDeleter {
  void operator()(plx_session* p) const { plx_session_destroy(p); }
};
struct DatasetDeleter {
  void operator()(plx_dataset* p) const { plx_dataset_destroy(p); }
};
using IrPtr = std::unique_ptr<plx_ir, IrDeleter>;
using SessionPtr = std::unique_ptr<plx_session, SessionDeleter>;
using DatasetPtr = std::unique_ptr<plx_dataset, DatasetDeleter>;

inline IrPtr make_ir() {
  plx_ir* ir = nullptr;
  EXPECT_EQ(plx_ir_create(&ir), PLX_OK) << plx_last_error();
  return IrPtr(ir);
}

// A fixture with a fresh temporary folder per test, for IDX files written by the test.
class CApiDatasetFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() / ("plexus_abi_" + std::to_string(::getpid()) + "_" + info->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Writes an IDX file of unsigned bytes with big-endian dims.
  std::string write_idx(const std::string& name, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
    const std::string path = (dir_ / name).string();
    std::ofstream f(path, std::ios::binary);
    const char magic[4] = {0, 0, 0x08, static_cast<char>(dims.size())};
    f.write(magic, 4);
    for (uint32_t d : dims) {
      const char be[4] = {static_cast<char>(d >> 24), static_cast<char>(d >> 16), static_cast<char>(d >> 8),
                          static_cast<char>(d)};
      f.write(be, 4);
    }
    f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    return path;
  }

  std::filesystem::path dir_;
};

}  // namespace capi_test
