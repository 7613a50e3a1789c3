#include "core/ir/attributes.h"

#include <algorithm>

#include "core/ir/error.h"

namespace plexus::ir {

AttrKind attr_kind(const AttrValue& v) {
  switch (v.index()) {
    case 0:
      return AttrKind::Int;
    case 1:
      return AttrKind::Float;
    case 2:
      return AttrKind::Ints;
    default:
      return AttrKind::String;
  }
}

std::string attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::Int:
      return "int";
    case AttrKind::Float:
      return "float";
    case AttrKind::Ints:
      return "ints";
    case AttrKind::String:
      return "string";
  }
  return "invalid";
}

const AttrValue& Attributes::at(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) fail(ErrorCode::Internal, "attribute '" + name + "' is not set");
  return it->second;
}

int64_t Attributes::get_int(const std::string& name) const {
  const auto* v = std::get_if<int64_t>(&at(name));
  if (!v) fail(ErrorCode::Internal, "attribute '" + name + "' is not an int");
  return *v;
}

double Attributes::get_float(const std::string& name) const {
  const auto* v = std::get_if<double>(&at(name));
  if (!v) fail(ErrorCode::Internal, "attribute '" + name + "' is not a float");
  return *v;
}

const std::vector<int64_t>& Attributes::get_ints(const std::string& name) const {
  const auto* v = std::get_if<std::vector<int64_t>>(&at(name));
  if (!v) fail(ErrorCode::Internal, "attribute '" + name + "' is not an int list");
  return *v;
}

const std::string& Attributes::get_string(const std::string& name) const {
  const auto* v = std::get_if<std::string>(&at(name));
  if (!v) fail(ErrorCode::Internal, "attribute '" + name + "' is not a string");
  return *v;
}

void Attributes::validate(const std::string& op, const std::vector<AttrSpec>& specs) {
  for (auto& [name, value] : values_) {
    auto spec = std::find_if(specs.begin(), specs.end(), [&key = name](const AttrSpec& s) { return s.name == key; });
    if (spec == specs.end()) {
      std::string known;
      for (const auto& s : specs) known += (known.empty() ? "" : ", ") + s.name;
      fail(ErrorCode::InvalidArgument, "op '" + op + "' has no attribute '" + name + "' (it takes: " +
                                           (known.empty() ? "none" : known) + ")");
    }
    if (spec->kind == AttrKind::Float && attr_kind(value) == AttrKind::Int) {
      value = static_cast<double>(std::get<int64_t>(value));
    }
    if (attr_kind(value) != spec->kind) {
      fail(ErrorCode::InvalidArgument, "op '" + op + "': attribute '" + name + "' must be " +
                                           attr_kind_name(spec->kind) + ", got " +
                                           attr_kind_name(attr_kind(value)));
    }
  }
  for (const auto& s : specs) {
    if (has(s.name)) continue;
    if (!s.default_value) {
      fail(ErrorCode::InvalidArgument, "op '" + op + "': required attribute '" + s.name + "' (" +
                                           attr_kind_name(s.kind) + ") is missing");
    }
    values_[s.name] = *s.default_value;
  }
}

}  // namespace plexus::ir
