// Finding and loading plugin shared libraries (docs/plugins.md, "Where Plexus looks for
// plugins"): a plugin of kind K named N is libplexus-K-N.so, searched in
//   1. each folder of $PLEXUS_PLUGIN_PATH (colon-separated), the override;
//   2. <folder of libplexus.so>/plexus, where `cmake --install` puts the plugins;
//   3. <folder of libplexus.so> itself, where the build tree puts them.
// The folder of libplexus.so is that of the loaded library file (dladdr), so an install
// moved to any prefix finds its own plugins with no environment variable set. Errors name
// what was looked for and every place it was looked for.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace plexus::plugin_host {

/// One folder the loader searches, and why it is searched (shown in error messages).
struct PluginFolder {
  std::string path;  ///< absolute, or relative to the working directory
  std::string why;   ///< "PLEXUS_PLUGIN_PATH", "install folder" or "next to libplexus.so"
};

/// A loaded plugin library; unloaded (dlclose) when the last copy goes. Copies share the
/// handle; thread-safe to share and copy.
class PluginLibrary {
 public:
  /// Loads libplexus-<kind>-<name>.so from the first folder of search_path() holding it.
  /// `name` may hold letters, digits, '_' and '-' only. Throws ir::Error(Plugin) when the
  /// name is not valid, when no folder has the file (naming the file and every folder
  /// searched), or when the first file found does not load (its path and dlerror()).
  static PluginLibrary open(const std::string& kind, const std::string& name);

  /// As open(kind, name), searching `folders` in order instead of search_path().
  static PluginLibrary open(const std::string& kind, const std::string& name,
                            const std::vector<PluginFolder>& folders);

  /// Loads the plugin file at `path` itself, whatever its name and folder (a plugin under
  /// test, e.g. plexus-strategy-check --plugin PATH); `kind` ("strategy") only words the
  /// errors. Throws ir::Error(Plugin) naming the path when there is no such file or it does
  /// not load (dlerror()).
  static PluginLibrary open_file(const std::string& kind, const std::string& path);

  /// Address of an exported symbol; throws ir::Error(Plugin) naming the symbol and path.
  void* symbol(const std::string& name) const;
  /// The file loaded: the folder searched joined with libplexus-<kind>-<name>.so.
  const std::string& path() const { return path_; }

  /// The folders searched, in order: search_path(getenv("PLEXUS_PLUGIN_PATH"),
  /// library_folder()). Reads the environment at each call.
  static std::vector<PluginFolder> search_path();

  /// The search order for an override list `plugin_path` (colon-separated folders, empty
  /// entries skipped; NULL when unset) and the folder of libplexus.so `library_folder`
  /// (empty: unknown, then only the override is searched). Pure.
  static std::vector<PluginFolder> search_path(const char* plugin_path, const std::string& library_folder);

  /// The folder of the file holding this code: libplexus.so's (or, where the core is
  /// linked statically, the executable's), absolute with symbolic links resolved, from
  /// dladdr; empty if dladdr cannot tell.
  static std::string library_folder();

 private:
  std::shared_ptr<void> handle_;
  std::string path_;
};

}  // namespace plexus::plugin_host
