#include "core/ir/tensor.h"

namespace plexus::ir {

std::string TensorInfo::type_string() const { return std::string(dtype_name(dtype)) + shape_string(shape); }

}  // namespace plexus::ir
