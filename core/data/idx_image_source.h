// IDX images and labels as a Loader's samples (seed 003's MNIST through
// poptorch.DataLoader): images uint8 [N, ...] normalised to float32 as torchvision's
// Normalize, labels uint8 [N] widened to int32.
#pragma once

#include <cstdint>
#include <string>

#include "core/data/idx_reader.h"
#include "core/data/sample_source.h"

namespace plexus::data {

/**
 * Sample i: images = float32 [image elements], x * (1 / (255 * std)) + (-mean / std) for
 * each uint8 pixel x, in float32 (the expression of samples/common/mnist_data.h, so both
 * give identical bytes); labels = int32 [1], the uint8 class.
 * `dataset` is borrowed and must outlive the source. Thread-safe once built.
 */
class IdxImageSource final : public SampleSource {
 public:
  /// Throws InvalidArgument ("loader options: std is ...", "loader options: mean is ...")
  /// for a std that is not finite and > 0 or a mean that is not finite, for images or
  /// labels that are not uint8 (naming the file and its dtype), and for a dataset with no
  /// samples.
  IdxImageSource(const IdxDataset& dataset, float mean, float std);

  int64_t num_samples() const override { return dataset_.num_samples(); }
  const SampleField& field(LoaderRole role) const override { return role == LoaderRole::Images ? images_ : labels_; }
  void write(LoaderRole role, int64_t index, std::byte* dst) const override;
  std::string describe() const override { return "the dataset (" + dataset_.images.path + ")"; }

 private:
  const IdxDataset& dataset_;
  float scale_ = 1.0f, shift_ = 0.0f;
  SampleField images_, labels_;
};

}  // namespace plexus::data
