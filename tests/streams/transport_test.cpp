// The in-process transport (core/streams/transport.cpp): bytes reach the device buffer
// and come back unchanged, for sizes on both sides of the streaming-copy threshold, and
// concurrent calls on different buffers do not interfere.
#include "core/streams/transport.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <thread>
#include <vector>

#include "core/streams/streaming_copy.h"

namespace plexus::streams {
namespace {

std::vector<std::byte> pattern(size_t bytes, unsigned seed) {
  std::vector<std::byte> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<std::byte>((i * 131 + seed) & 0xff);
  return v;
}

TEST(InProcessTransport, IsNamed) { EXPECT_STREQ(make_in_process_transport()->name(), "in-process"); }

TEST(InProcessTransport, RoundTripsEverySizeExactly) {
  auto transport = make_in_process_transport();
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{4096} + 3, kStreamingCopyMinBytes - 1,
                       kStreamingCopyMinBytes + 17}) {
    const std::vector<std::byte> host = pattern(bytes, 7);
    std::vector<std::byte> device(bytes + 2, std::byte{0xAB});  // a guard byte on each side
    transport->to_device(device.data() + 1, host.data(), bytes);
    EXPECT_EQ(device.front(), std::byte{0xAB}) << bytes;
    EXPECT_EQ(device.back(), std::byte{0xAB}) << bytes;
    std::vector<std::byte> back(bytes);
    transport->to_host(back.data(), device.data() + 1, bytes);
    EXPECT_EQ(back, host) << bytes;
  }
}

TEST(InProcessTransport, ConcurrentCallsOnDifferentBuffersDoNotInterfere) {
  auto transport = make_in_process_transport();
  constexpr size_t kBytes = 1 << 20;
  const std::vector<std::byte> a = pattern(kBytes, 1), b = pattern(kBytes, 2);
  std::vector<std::byte> da(kBytes), db(kBytes);
  std::thread t1([&] {
    for (int i = 0; i < 20; ++i) transport->to_device(da.data(), a.data(), kBytes);
  });
  std::thread t2([&] {
    for (int i = 0; i < 20; ++i) transport->to_device(db.data(), b.data(), kBytes);
  });
  t1.join();
  t2.join();
  EXPECT_EQ(da, a);
  EXPECT_EQ(db, b);
}

}  // namespace
}  // namespace plexus::streams
