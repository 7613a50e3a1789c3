// C API: the catalog of registered ops (name, input counts, attributes and their
// defaults), for bindings that expose every op by name (bindings/python's plexus.ops).
#include <nlohmann/json.hpp>

#include "abi/src/handles.h"
#include "core/ir/op_schema.h"

using namespace plexus;

namespace {

nlohmann::json attr_value_json(const ir::AttrValue& v) {
  return std::visit([](const auto& x) { return nlohmann::json(x); }, v);
}

nlohmann::json attr_json(const ir::AttrSpec& spec) {
  nlohmann::json a{{"name", spec.name}, {"kind", ir::attr_kind_name(spec.kind)}, {"required", !spec.default_value}};
  if (spec.default_value) a["default"] = attr_value_json(*spec.default_value);
  return a;
}

nlohmann::json op_json(const ir::OpSchema& def) {
  nlohmann::json attrs = nlohmann::json::array();
  for (const ir::AttrSpec& spec : def.attrs) attrs.push_back(attr_json(spec));
  return {{"name", def.name},
          {"min_inputs", def.min_inputs},
          {"max_inputs", def.max_inputs},
          {"attrs", std::move(attrs)},
          {"inplace", !def.inplace_inputs.empty()},
          {"differentiable", static_cast<bool>(def.grad)},
          {"communicates", def.communicates}};
}

}  // namespace

extern "C" {

PLX_API plx_status plx_runtime_get_ops(char* buffer, size_t capacity, size_t* out_size) {
  return abi::guarded([&] {
    if (capacity > 0) abi::require(buffer, "plx_runtime_get_ops", "buffer");
    const ir::OpSchemaRegistry& registry = ir::OpSchemaRegistry::instance();
    nlohmann::json ops = nlohmann::json::array();
    for (const std::string& name : registry.names()) ops.push_back(op_json(*registry.find(name)));
    abi::copy_text(nlohmann::json{{"ops", std::move(ops)}}.dump(), buffer, capacity, out_size);
  });
}

}  // extern "C"
