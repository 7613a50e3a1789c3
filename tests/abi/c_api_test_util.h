// Helpers shared by the C-API tests: status/message assertions, RAII for handles.
#pragma once

#include <plexus/plexus.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

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

}  // namespace capi_test
