// Typed op attributes (ints, floats, strings, int lists), validated against each op's
// declared attribute specs when the op is added, so kernels read them without checks.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace plexus::ir {

/// Kinds of attribute value. Values equal the C API's PLX_ATTR_* constants.
enum class AttrKind : int32_t { Int = 1, Float = 2, Ints = 3, String = 4 };

using AttrValue = std::variant<int64_t, double, std::vector<int64_t>, std::string>;

/// The kind of a value.
AttrKind attr_kind(const AttrValue& v);
std::string attr_kind_name(AttrKind k);

/// Declaration of one attribute an op accepts. No default means required.
struct AttrSpec {
  std::string name;
  AttrKind kind;
  std::optional<AttrValue> default_value;
};

/// Name -> value map. Getters throw Internal when the attribute is absent or of another
/// kind: after validation (see validate()) that can only be a bug in an op definition.
class Attributes {
 public:
  void set(const std::string& name, AttrValue value) { values_[name] = std::move(value); }
  bool has(const std::string& name) const { return values_.count(name) != 0; }

  int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;
  const std::vector<int64_t>& get_ints(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;

  const std::map<std::string, AttrValue>& values() const { return values_; }

  /// Checks names and kinds against `specs` (an Int given for a Float is converted),
  /// fills defaults, and throws InvalidArgument naming `op` and the attribute otherwise.
  void validate(const std::string& op, const std::vector<AttrSpec>& specs);

 private:
  const AttrValue& at(const std::string& name) const;
  std::map<std::string, AttrValue> values_;
};

}  // namespace plexus::ir
