// Element types of tensors. Values equal the C API's PLX_DTYPE_* constants.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace plexus::ir {

enum class DType : int32_t {
  Float32 = 1,
  Int32 = 2,
  UInt8 = 3,
};

/// Size of one element in bytes.
constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32:
    case DType::Int32:
      return 4;
    case DType::UInt8:
      return 1;
  }
  return 0;
}

/// "float32", "int32", "uint8"; "invalid" for anything else.
std::string_view dtype_name(DType t);

/// True when `raw` is one of the enum's values (checks C input before casting).
bool is_valid_dtype(int32_t raw);

}  // namespace plexus::ir
