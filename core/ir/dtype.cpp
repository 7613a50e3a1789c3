#include "core/ir/dtype.h"

namespace plexus::ir {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Float32:
      return "float32";
    case DType::Int32:
      return "int32";
    case DType::UInt8:
      return "uint8";
    case DType::Float16:
      return "float16";
    case DType::Int8:
      return "int8";
    case DType::UInt32:
      return "uint32";
    case DType::Bool:
      return "bool";
  }
  return "invalid";
}

bool is_valid_dtype(int32_t raw) { return raw >= 1 && raw <= 7; }

}  // namespace plexus::ir
