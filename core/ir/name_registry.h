// A map from names to definitions: what the process-wide registries filled during static
// initialisation share (the op schemas, core/ir/op_schema.h, and the kernels,
// core/ops/kernel_def.h, each keyed by op type).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace plexus::ir {

/// Definitions of type T by name. Filling it is not thread-safe; lookups of one filled
/// before main() starts (a static registration) are.
template <class T>
class NameRegistry {
 public:
  /// Adds `def` under `name`; false, and no change, when the name has one already.
  bool add(std::string name, T def) { return defs_.emplace(std::move(name), std::move(def)).second; }

  /// The definition under `name`, or nullptr.
  const T* find(std::string_view name) const {
    auto it = defs_.find(name);
    return it == defs_.end() ? nullptr : &it->second;
  }

  /// Every name, sorted.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    out.reserve(defs_.size());
    for (const auto& entry : defs_) out.push_back(entry.first);
    return out;
  }

 private:
  std::map<std::string, T, std::less<>> defs_;
};

}  // namespace plexus::ir
