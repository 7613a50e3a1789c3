// Where the results of device-to-host streams go (PopTorch output modes; DESIGN.md
// "Semantics"): every step's value (all), only the last (final), every N-th device
// iteration's (every_n), or their sum (sum). Host arrays are
//   all      [iterations, micro_batches, R] + S
//   every_n  [iterations / N, micro_batches, R] + S
//   final    [R] + S        sum  [R] + S
// with leading dims of 1 left out.
#pragma once

#include <cstdint>

#include "core/ir/shape.h"

namespace plexus::runtime {

enum class OutputMode : int32_t { All = 0, Final = 1, EveryN = 2, Sum = 3 };  ///< = PLX_OUTPUT_*

struct OutputLayout {
  OutputMode mode = OutputMode::All;
  int64_t period = 1;         ///< N of every_n
  int64_t iterations = 1;     ///< device iterations of one run
  int64_t micro_batches = 1;  ///< per iteration (1 for update-step streams)
  int64_t replicas = 1;

  /// Host array shape for a stream of shape `shape`.
  ir::Shape host_shape(const ir::Shape& shape) const;
  /// Row of the host array receiving replica r's value of micro-batch m of iteration i, or
  /// -1 when this step's value is not returned.
  int64_t row(int64_t i, int64_t m, int64_t r) const;
  /// Values add into their row (sum) instead of overwriting it.
  bool accumulates() const { return mode == OutputMode::Sum; }
};

/// Leading dims of 1 dropped from `lead`, then `shape` appended.
ir::Shape with_leading_dims(std::initializer_list<int64_t> lead, const ir::Shape& shape);

}  // namespace plexus::runtime
