// The layout of a caller's host array for one stream: the one place that says which
// (step, replica) value sits where (seed 000, "Data input shape"; PopTorch's output modes;
// docs/design.md "Semantics"). With S the stream's shape, R the replicas whose data the array
// holds (those this worker hosts), I = device_iterations, G = gradient_accumulation:
//   inputs            [I * G, R] + S       step k of replica r is value k * R + r
//   outputs  all      [I, M, R] + S        M = G (1 for a stream written by the update step)
//            every_n  [I / N, M, R] + S    every N-th iteration's values
//            final    [R] + S              the last value
//            sum      [R] + S              the sum of every value
// with leading dims of 1 left out. The session checks and binds arrays with it, the
// stream binding reads and writes through it, and the data loader lays its runs out by it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "core/ir/dtype.h"
#include "core/ir/shape.h"

namespace plexus::streams {

enum class OutputMode : int32_t { All = 0, Final = 1, EveryN = 2, Sum = 3 };  ///< = PLX_OUTPUT_*

/// The figures of a run that host arrays are laid out by (the session's options).
struct RunDims {
  int64_t device_iterations = 1;      ///< I, >= 1
  int64_t gradient_accumulation = 1;  ///< G, >= 1
  int64_t replicas = 1;               ///< R: replicas whose data an array holds, >= 1
  OutputMode output_mode = OutputMode::All;
  int64_t output_return_period = 1;   ///< N of every_n; divides I
  bool several_workers = false;       ///< R is this worker's share (messages say so)
};

/// One stream's host array layout. A value object; thread-safe to share.
class HostArrayLayout {
 public:
  /// A host-to-device stream of `dtype` values of shape `shape`.
  static HostArrayLayout input(const RunDims& dims, ir::DType dtype, ir::Shape shape);
  /// A device-to-host stream; `per_update`: written once per iteration (by the update step).
  static HostArrayLayout output(const RunDims& dims, bool per_update, ir::DType dtype, ir::Shape shape);

  /// The array's shape (see the table above).
  ir::Shape host_shape() const;
  /// Values per replica one run moves: I * G for inputs; I * M for outputs.
  int64_t items() const { return iterations_ * micro_batches_; }
  /// Bytes of one value (numel(S) x dtype size).
  size_t item_bytes() const { return item_bytes_; }
  /// Inputs: the value index of step `step` (< items()) of replica `replica` (< R).
  int64_t index(int64_t step, int64_t replica) const { return step * dims_.replicas + replica; }
  /// Inputs: the (step, replica) of value index `index` (the inverse of index()).
  std::pair<int64_t, int64_t> step_and_replica(int64_t index) const {
    return {index / dims_.replicas, index % dims_.replicas};
  }
  /// Inputs: byte offset of (step, replica)'s value in the array.
  size_t source_offset(int64_t step, int64_t replica) const {
    return static_cast<size_t>(index(step, replica)) * item_bytes_;
  }
  /// Outputs: the row (value index) that replica `replica`'s `item`-th value of the run
  /// (< items(); iteration item / M, micro-batch item % M) goes to; -1 when the output
  /// mode does not return it.
  int64_t output_row(int64_t item, int64_t replica) const;
  /// Outputs: byte offset of row `row`.
  size_t row_offset(int64_t row) const { return static_cast<size_t>(row) * item_bytes_; }
  /// Outputs: values add into their row (sum) instead of overwriting it.
  bool accumulates() const { return !input_ && dims_.output_mode == OutputMode::Sum; }

  /// Bytes of the array; throws ir::Error(InvalidArgument) naming `what` when the count
  /// overflows int64 or exceeds `limit` (the host's memory: such an array cannot exist).
  int64_t host_bytes(const std::string& what, int64_t limit) const;
  /// Checks a caller's array of `dtype` and `shape` for this stream; `what` names it
  /// ("input stream 'x'"). Throws ir::Error DTypeMismatch or ShapeMismatch naming `what`,
  /// both values, and for a shape the run's figures.
  void check(const std::string& what, ir::DType dtype, const ir::Shape& shape) const;

 private:
  HostArrayLayout(const RunDims& dims, bool input, int64_t iterations, int64_t micro_batches, ir::DType dtype,
                  ir::Shape shape);

  RunDims dims_;
  bool input_;
  int64_t iterations_;     ///< inputs: I * G steps; outputs: I
  int64_t micro_batches_;  ///< inputs: 1; outputs: M
  ir::DType dtype_;
  ir::Shape shape_;
  size_t item_bytes_;
};

/// Leading dims of 1 dropped from `lead`, then `shape` appended.
ir::Shape with_leading_dims(std::initializer_list<int64_t> lead, const ir::Shape& shape);

}  // namespace plexus::streams
