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
  Float16 = 4,  ///< IEEE 754 binary16; kernels compute in float32 (docs/ops.md)
  Int8 = 5,
  UInt32 = 6,
  Bool = 7,     ///< one byte holding 0 or 1 (a nonzero byte reads as true)
};

/// Size of one element in bytes.
constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32:
    case DType::Int32:
    case DType::UInt32:
      return 4;
    case DType::Float16:
      return 2;
    case DType::UInt8:
    case DType::Int8:
    case DType::Bool:
      return 1;
  }
  return 0;
}

/// "float32", "int32", "uint8", "float16", "int8", "uint32", "bool"; "invalid" for
/// anything else.
std::string_view dtype_name(DType t);

/// True when `raw` is one of the enum's values (checks C input before casting).
bool is_valid_dtype(int32_t raw);

/// Every dtype, in enum order (for loops over them: checkpoint names, tests).
inline constexpr DType kAllDTypes[] = {DType::Float32, DType::Int32,  DType::UInt8, DType::Float16,
                                       DType::Int8,    DType::UInt32, DType::Bool};

}  // namespace plexus::ir
