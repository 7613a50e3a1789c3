// What a Loader serves: N samples, each with one field per stream it fills (the inputs and
// the labels of a training step). The Loader owns the order, the cutting into runs, the
// sharding by worker and the threads (core/data/loader.h); a source only says how many
// samples there are and writes sample i of a field. Sources: IDX images and labels
// (core/data/idx_image_source.h, seed 003's MNIST), windows of a byte text
// (core/data/text_windows.h, issue 20's character model).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/ir/dtype.h"

namespace plexus::data {

/// The stream a fill is for: the model's inputs (images, tokens) or its labels (classes,
/// next tokens).
enum class LoaderRole { Images, Labels };

/// One field of every sample: its dtype and its elements (a fill of batch_size samples
/// is batch_size x elements values, row-major).
struct SampleField {
  std::string name;  ///< for messages: "images", "labels", "tokens", "targets"
  ir::DType dtype = ir::DType::Float32;
  int64_t elements = 1;  ///< per sample, >= 1
  size_t bytes() const { return static_cast<size_t>(elements) * ir::dtype_size(dtype); }
};

/**
 * A dataset a Loader can serve. Implementations are immutable once built: write() is
 * called from several loader threads at once and must be safe for that.
 */
class SampleSource {
 public:
  virtual ~SampleSource() = default;

  /// Samples, >= 1 (a source with none refuses to be built).
  virtual int64_t num_samples() const = 0;
  /// The field served to `role`.
  virtual const SampleField& field(LoaderRole role) const = 0;
  /// Writes field `role` of sample `index` (in [0, num_samples())) to `dst`
  /// (field(role).bytes() bytes).
  virtual void write(LoaderRole role, int64_t index, std::byte* dst) const = 0;
  /// Names the data for messages, e.g. "the dataset (data/mnist/train-images-idx3-ubyte)".
  virtual std::string describe() const = 0;
};

}  // namespace plexus::data
