#include "core/data/text_windows.h"

#include <cstring>
#include <utility>

#include "core/ir/error.h"

namespace plexus::data {

TextWindows::TextWindows(const std::string& text, int64_t context, std::string name)
    : text_(text), context_(context), name_(std::move(name)) {
  if (context < 1) ir::fail(ir::ErrorCode::InvalidArgument, "text windows: context is " + std::to_string(context) + ", must be >= 1");
  const auto size = static_cast<int64_t>(text.size());
  if (size < context + 1) {
    ir::fail(ir::ErrorCode::InvalidArgument, "text windows: " + describe() + " has " + std::to_string(size) +
                                                 " bytes, fewer than one window of context + 1 = " +
                                                 std::to_string(context + 1));
  }
  windows_ = (size - 1) / context;
  tokens_ = {"tokens", ir::DType::Int32, context};
  targets_ = {"targets", ir::DType::Int32, context};
}

void TextWindows::write(LoaderRole role, int64_t index, std::byte* dst) const {
  const size_t first = static_cast<size_t>(index * context_) + (role == LoaderRole::Labels ? 1 : 0);
  for (int64_t i = 0; i < context_; ++i) {
    const int32_t token = static_cast<unsigned char>(text_[first + static_cast<size_t>(i)]);
    std::memcpy(dst + static_cast<size_t>(i) * sizeof token, &token, sizeof token);
  }
}

}  // namespace plexus::data
