#include "core/ir/op_schema.h"

#include <algorithm>

#include "core/ir/graph.h"

namespace plexus::ir {

void InferContext::fail(ErrorCode code, const std::string& rule) const {
  std::string types;
  for (size_t i = 0; i < inputs.size(); ++i) types += (i ? ", " : "") + inputs[i]->type_string();
  ir::fail(code, "op '" + op_name + "' with inputs (" + types + "): " + rule);
}

void InferContext::expect_dtype(size_t i, DType t) const {
  if (dtype(i) != t) {
    fail(ErrorCode::DTypeMismatch, "input " + std::to_string(i) + " must be " + std::string(dtype_name(t)));
  }
}

void InferContext::expect_numeric(size_t i) const {
  if (dtype(i) == DType::Bool) {
    fail(ErrorCode::DTypeMismatch,
         "input " + std::to_string(i) + " must be a number (float32, float16, int32, int8, uint8 or uint32), not bool");
  }
}

void InferContext::expect_float(size_t i) const {
  if (dtype(i) != DType::Float32 && dtype(i) != DType::Float16) {
    fail(ErrorCode::DTypeMismatch, "input " + std::to_string(i) + " must be float32 or float16");
  }
}

TensorId GradContext::add(std::string_view type, std::vector<TensorId> inputs, Attributes attrs) {
  return graph.add_op(type, std::move(inputs), std::move(attrs)).front();
}

Shape GradContext::shape(TensorId t) const { return graph.tensor(t).shape; }

DType GradContext::dtype(TensorId t) const { return graph.tensor(t).dtype; }

bool GradContext::is_requested(TensorId t) const {
  return std::find(requested.begin(), requested.end(), t) != requested.end();
}

OpSchemaRegistry& OpSchemaRegistry::instance() {
  static OpSchemaRegistry registry;
  return registry;
}

void OpSchemaRegistry::add(OpSchema schema) {
  std::string name = schema.name;
  if (!NameRegistry::add(name, std::move(schema))) ir::fail(ErrorCode::Internal, "op '" + name + "' is registered twice");
}

}  // namespace plexus::ir
