// MNIST / Fashion-MNIST for the samples: loads the IDX files through the Plexus C API
// (plx::Dataset), shuffles by seed, and fills host arrays with normalised images
// ((x / 255 - mean) / std, torchvision's Normalize((0.1307,), (0.3081,))) and int32 labels.
#pragma once

#include <plexus/plexus.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace samples {

inline constexpr float kMnistMean = 0.1307f;
inline constexpr float kMnistStd = 0.3081f;

/// Folder of a dataset under the samples' data dir: mnist -> mnist, fashion -> fashion-mnist.
inline std::string dataset_folder(const std::string& data_dir, const std::string& dataset) {
  if (dataset == "mnist") return data_dir + "/mnist";
  if (dataset == "fashion") return data_dir + "/fashion-mnist";
  throw std::invalid_argument("--dataset must be 'mnist' or 'fashion', got '" + dataset + "'");
}

/// `folder/name`, or `folder/name.gz` when only the gzipped file exists.
inline std::string idx_path(const std::string& folder, const std::string& name) {
  const std::string raw = folder + "/" + name;
  if (!std::filesystem::exists(raw) && std::filesystem::exists(raw + ".gz")) return raw + ".gz";
  return raw;
}

/// One split (train or test) of an IDX image dataset.
class ImageSplit {
 public:
  ImageSplit(const std::string& folder, bool train)
      : data_(idx_path(folder, train ? "train-images-idx3-ubyte" : "t10k-images-idx3-ubyte"),
              idx_path(folder, train ? "train-labels-idx1-ubyte" : "t10k-labels-idx1-ubyte")) {
    if (data_.image_dtype() != PLX_DTYPE_UINT8 || data_.label_dtype() != PLX_DTYPE_UINT8) {
      throw std::runtime_error("dataset in " + folder + " is not uint8 images and labels");
    }
    image_shape_ = data_.image_shape();
    image_size_ = plx::numel(image_shape_);
    order_.resize(static_cast<size_t>(data_.size()));
    std::iota(order_.begin(), order_.end(), 0);
  }

  int64_t size() const { return data_.size(); }
  /// The underlying dataset (for a plx::Loader over it).
  const plx::Dataset& dataset() const { return data_; }
  const plx::Shape& image_shape() const { return image_shape_; }
  int64_t image_size() const { return image_size_; }

  /// New sample order for an epoch (std::shuffle with a seeded mt19937_64).
  void shuffle(uint64_t seed) {
    std::iota(order_.begin(), order_.end(), 0);
    std::mt19937_64 rng(seed);
    std::shuffle(order_.begin(), order_.end(), rng);
  }

  /// Writes `count` samples starting at position `first` of the current order into
  /// `images` (count x image_size normalised floats) and `labels` (count int32).
  void fill(int64_t first, int64_t count, float* images, int32_t* labels) const {
    const auto* pixels = static_cast<const uint8_t*>(data_.images());
    const auto* classes = static_cast<const uint8_t*>(data_.labels());
    constexpr float scale = 1.0f / (255.0f * kMnistStd), shift = -kMnistMean / kMnistStd;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t s = order_[static_cast<size_t>(first + i)];
      const uint8_t* src = pixels + s * image_size_;
      float* dst = images + i * image_size_;
      for (int64_t p = 0; p < image_size_; ++p) dst[p] = static_cast<float>(src[p]) * scale + shift;
      labels[i] = classes[s];
    }
  }

 private:
  plx::Dataset data_;
  plx::Shape image_shape_;
  int64_t image_size_ = 0;
  std::vector<int64_t> order_;
};

}  // namespace samples
