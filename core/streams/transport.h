// How bytes reach a device and come back (docs/design.md "Streaming layer": the transport is an
// interface; in-process copies by default, a network transport to a device server process
// is the path for devices on another host). The stream pump only talks to this interface,
// so a transport can be added without touching the executor.
#pragma once

#include <cstddef>
#include <memory>

namespace plexus::streams {

/// Thread-safety: implementations must allow concurrent calls on different buffers.
class Transport {
 public:
  virtual ~Transport() = default;
  /// Copies `bytes` bytes of host memory into a device-side buffer.
  virtual void to_device(std::byte* device, const std::byte* host, size_t bytes) = 0;
  /// Copies `bytes` bytes of a device-side buffer into host memory.
  virtual void to_host(std::byte* host, const std::byte* device, size_t bytes) = 0;
  virtual const char* name() const = 0;
};

/// Devices in this process: memory copies (to the devices with streaming_copy).
std::unique_ptr<Transport> make_in_process_transport();

}  // namespace plexus::streams
