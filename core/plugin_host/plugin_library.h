// Finding and loading plugin shared libraries (DESIGN.md, "Plugins"): a plugin of kind K
// named N is libplexus-K-N.so, searched in $PLEXUS_PLUGIN_PATH (colon-separated), then in
// the folder of the library holding this code (libplexus.so), then in the install's plugin
// folder. Errors name what was looked for and every place it was looked for.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace plexus::runtime {

/// A loaded plugin library; unloaded when the last copy goes. Thread-safe to share.
class PluginLibrary {
 public:
  /// Loads libplexus-<kind>-<name>.so. `name` may hold letters, digits, '_' and '-' only.
  /// Throws ir::Error(Plugin) when no folder has it or it fails to load (with dlerror).
  static PluginLibrary open(const std::string& kind, const std::string& name);

  /// Address of an exported symbol; throws ir::Error(Plugin) naming the symbol and path.
  void* symbol(const std::string& name) const;
  const std::string& path() const { return path_; }

  /// The folders searched, in order, each with why it is searched (for messages and tests).
  static std::vector<std::pair<std::string, std::string>> search_path();

 private:
  std::shared_ptr<void> handle_;
  std::string path_;
};

}  // namespace plexus::runtime
