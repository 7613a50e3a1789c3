#include "core/runtime/output_mode.h"

namespace plexus::runtime {

ir::Shape with_leading_dims(std::initializer_list<int64_t> lead, const ir::Shape& shape) {
  ir::Shape out;
  out.reserve(lead.size() + shape.size());
  for (int64_t d : lead) {
    if (d != 1) out.push_back(d);
  }
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

ir::Shape OutputLayout::host_shape(const ir::Shape& shape) const {
  switch (mode) {
    case OutputMode::All:
      return with_leading_dims({iterations, micro_batches, replicas}, shape);
    case OutputMode::EveryN:
      return with_leading_dims({iterations / period, micro_batches, replicas}, shape);
    case OutputMode::Final:
    case OutputMode::Sum:
      break;
  }
  return with_leading_dims({replicas}, shape);
}

int64_t OutputLayout::row(int64_t i, int64_t m, int64_t r) const {
  switch (mode) {
    case OutputMode::All:
      return (i * micro_batches + m) * replicas + r;
    case OutputMode::EveryN:
      return (i + 1) % period == 0 ? (((i + 1) / period - 1) * micro_batches + m) * replicas + r : -1;
    case OutputMode::Final:
      return i == iterations - 1 && m == micro_batches - 1 ? r : -1;
    case OutputMode::Sum:
      break;
  }
  return r;
}

}  // namespace plexus::runtime
