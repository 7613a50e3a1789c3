#include "core/streams/host_array_layout.h"

#include "core/ir/error.h"

namespace plexus::streams {

ir::Shape with_leading_dims(std::initializer_list<int64_t> lead, const ir::Shape& shape) {
  ir::Shape out;
  out.reserve(lead.size() + shape.size());
  for (int64_t d : lead) {
    if (d != 1) out.push_back(d);
  }
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

HostArrayLayout::HostArrayLayout(const RunDims& dims, bool input, int64_t iterations, int64_t micro_batches,
                                 ir::DType dtype, ir::Shape shape)
    : dims_(dims),
      input_(input),
      iterations_(iterations),
      micro_batches_(micro_batches),
      dtype_(dtype),
      shape_(std::move(shape)),
      item_bytes_(static_cast<size_t>(ir::numel(shape_)) * ir::dtype_size(dtype)) {}

HostArrayLayout HostArrayLayout::input(const RunDims& dims, ir::DType dtype, ir::Shape shape) {
  return HostArrayLayout(dims, true, dims.device_iterations * dims.gradient_accumulation, 1, dtype, std::move(shape));
}

HostArrayLayout HostArrayLayout::output(const RunDims& dims, bool per_update, ir::DType dtype, ir::Shape shape) {
  return HostArrayLayout(dims, false, dims.device_iterations, per_update ? 1 : dims.gradient_accumulation, dtype,
                         std::move(shape));
}

ir::Shape HostArrayLayout::host_shape() const {
  const int64_t r = dims_.replicas;
  if (input_) return with_leading_dims({iterations_, r}, shape_);
  switch (dims_.output_mode) {
    case OutputMode::All:
      return with_leading_dims({iterations_, micro_batches_, r}, shape_);
    case OutputMode::EveryN:
      return with_leading_dims({iterations_ / dims_.output_return_period, micro_batches_, r}, shape_);
    case OutputMode::Final:
    case OutputMode::Sum:
      break;
  }
  return with_leading_dims({r}, shape_);
}

int64_t HostArrayLayout::output_row(int64_t item, int64_t replica) const {
  const int64_t i = item / micro_batches_, m = item % micro_batches_, n = dims_.output_return_period;
  switch (dims_.output_mode) {
    case OutputMode::All:
      return index(item, replica);
    case OutputMode::EveryN:
      return (i + 1) % n == 0 ? index(((i + 1) / n - 1) * micro_batches_ + m, replica) : -1;
    case OutputMode::Final:
      return i == iterations_ - 1 && m == micro_batches_ - 1 ? replica : -1;
    case OutputMode::Sum:
      break;
  }
  return replica;
}

int64_t HostArrayLayout::host_bytes(const std::string& what, int64_t limit) const {
  const ir::Shape shape = host_shape();
  const auto explain = [&] {
    return what + ": its host array would be " + ir::shape_string(shape) + " " + std::string(ir::dtype_name(dtype_)) +
           " (device_iterations=" + std::to_string(dims_.device_iterations) +
           ", gradient_accumulation=" + std::to_string(dims_.gradient_accumulation) + ")";
  };
  auto bytes = static_cast<int64_t>(ir::dtype_size(dtype_));
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(bytes, d, &bytes)) {
      ir::fail(ir::ErrorCode::InvalidArgument, explain() + ", more bytes than int64 counts");
    }
  }
  if (bytes > limit) {
    ir::fail(ir::ErrorCode::InvalidArgument,
             explain() + ", " + std::to_string(bytes) + " bytes, more than this host's memory (" +
                 std::to_string(limit) + " bytes)");
  }
  return bytes;
}

void HostArrayLayout::check(const std::string& what, ir::DType dtype, const ir::Shape& shape) const {
  if (dtype != dtype_) {
    ir::fail(ir::ErrorCode::DTypeMismatch, what + ": host array is " + std::string(ir::dtype_name(dtype)) +
                                               ", expected " + std::string(ir::dtype_name(dtype_)));
  }
  const ir::Shape expected = host_shape();
  if (shape == expected) return;
  ir::fail(ir::ErrorCode::ShapeMismatch,
           what + ": host array has shape " + ir::shape_string(shape) + ", expected " + ir::shape_string(expected) +
               " (device_iterations=" + std::to_string(dims_.device_iterations) +
               ", gradient_accumulation=" + std::to_string(dims_.gradient_accumulation) +
               (dims_.several_workers ? ", replicas hosted by this worker=" : ", replication_factor=") +
               std::to_string(dims_.replicas) + ", stream shape " + ir::shape_string(shape_) +
               "; leading dims of 1 left out)");
}

}  // namespace plexus::streams
