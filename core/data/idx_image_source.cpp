#include "core/data/idx_image_source.h"

#include <cmath>
#include <cstring>
#include <span>

#include "core/ir/error.h"
#include "core/ir/shape.h"

namespace plexus::data {

using ir::ErrorCode;
using ir::fail;

namespace {

void check_uint8(const IdxArray& array, const char* what) {
  if (array.dtype != ir::DType::UInt8) {
    fail(ErrorCode::InvalidArgument, std::string("loader: the dataset's ") + what + " (" + array.path + ") are " +
                                         std::string(ir::dtype_name(array.dtype)) + ", uint8 expected");
  }
}

}  // namespace

IdxImageSource::IdxImageSource(const IdxDataset& dataset, float mean, float std) : dataset_(dataset) {
  if (!std::isfinite(std) || !(std > 0.0f)) {
    fail(ErrorCode::InvalidArgument, "loader options: std is " + std::to_string(std) + ", must be finite and > 0");
  }
  if (!std::isfinite(mean)) fail(ErrorCode::InvalidArgument, "loader options: mean is " + std::to_string(mean) + ", must be finite");
  check_uint8(dataset.images, "images");
  check_uint8(dataset.labels, "labels");
  if (dataset.num_samples() < 1) fail(ErrorCode::InvalidArgument, "loader: " + describe() + " has no samples");
  scale_ = 1.0f / (255.0f * std);
  shift_ = -mean / std;
  images_ = {"images", ir::DType::Float32, ir::numel(std::span<const int64_t>(dataset.images.shape).subspan(1))};
  labels_ = {"labels", ir::DType::Int32, 1};
}

void IdxImageSource::write(LoaderRole role, int64_t index, std::byte* dst) const {
  if (role == LoaderRole::Labels) {
    const int32_t label = reinterpret_cast<const uint8_t*>(dataset_.labels.data.data())[index];
    std::memcpy(dst, &label, sizeof label);
    return;
  }
  const int64_t n = images_.elements;
  const uint8_t* src = reinterpret_cast<const uint8_t*>(dataset_.images.data.data()) + index * n;
  auto* out = reinterpret_cast<float*>(dst);
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(src[i]) * scale_ + shift_;
}

}  // namespace plexus::data
