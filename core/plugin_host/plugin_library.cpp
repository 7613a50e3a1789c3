#include "core/plugin_host/plugin_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "core/ir/error.h"

namespace plexus::plugin_host {

namespace {

using ir::ErrorCode;
namespace fs = std::filesystem;

bool valid_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// dlopen()s `path` or throws "<who>: cannot load <path>: <dlerror()'s reason>".
std::shared_ptr<void> load(const std::string& who, const std::string& path) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    ir::fail(ErrorCode::Plugin, who + ": cannot load " + path + ": " + (err ? err : "unknown error"));
  }
  return std::shared_ptr<void>(handle, [](void* h) { dlclose(h); });
}

}  // namespace

std::string PluginLibrary::library_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&PluginLibrary::library_folder), &info) == 0 || info.dli_fname == nullptr) return "";
  // Resolving links gives the folder of the real file, so a libplexus.so reached through
  // a link elsewhere still finds the plugins installed beside it.
  std::error_code error;
  const fs::path absolute = fs::absolute(info.dli_fname, error);
  if (error) return "";
  const fs::path file = fs::weakly_canonical(absolute, error);
  return error ? "" : file.parent_path().string();
}

std::vector<PluginFolder> PluginLibrary::search_path(const char* plugin_path, const std::string& library_folder) {
  std::vector<PluginFolder> folders;
  if (plugin_path != nullptr) {
    const std::string list = plugin_path;
    size_t start = 0;
    while (start <= list.size()) {
      const size_t end = std::min(list.find(':', start), list.size());
      if (end > start) folders.push_back({list.substr(start, end - start), "PLEXUS_PLUGIN_PATH"});
      start = end + 1;
    }
  }
  if (!library_folder.empty()) {
    folders.push_back({(fs::path(library_folder) / "plexus").string(), "install folder"});
    folders.push_back({library_folder, "next to libplexus.so"});
  }
  return folders;
}

std::vector<PluginFolder> PluginLibrary::search_path() {
  return search_path(std::getenv("PLEXUS_PLUGIN_PATH"), library_folder());
}

PluginLibrary PluginLibrary::open(const std::string& kind, const std::string& name) {
  return open(kind, name, search_path());
}

PluginLibrary PluginLibrary::open(const std::string& kind, const std::string& name,
                                  const std::vector<PluginFolder>& folders) {
  if (!valid_name(name)) {
    ir::fail(ErrorCode::Plugin, kind + " plugin name '" + name + "' is not valid (letters, digits, '_' and '-' only)");
  }
  const std::string file = "libplexus-" + kind + "-" + name + ".so";
  std::string looked;
  for (const PluginFolder& folder : folders) {
    const std::string path = (fs::path(folder.path) / file).string();
    looked += "\n  " + path + " (" + folder.why + ")";
    if (!fs::exists(path)) continue;
    PluginLibrary lib;
    lib.handle_ = load(kind + " plugin '" + name + "'", path);
    lib.path_ = path;
    return lib;
  }
  if (folders.empty()) looked = " (no folder: PLEXUS_PLUGIN_PATH is unset and the folder of libplexus.so is unknown)";
  ir::fail(ErrorCode::Plugin, kind + " plugin '" + name + "' not found; looked for " + file + " in:" + looked);
}

PluginLibrary PluginLibrary::open_file(const std::string& kind, const std::string& path) {
  std::error_code error;
  if (!fs::is_regular_file(path, error)) {
    ir::fail(ErrorCode::Plugin, kind + " plugin " + path + ": " + (fs::exists(path, error) ? "not a file" : "no such file"));
  }
  PluginLibrary lib;
  lib.handle_ = load(kind + " plugin", path);
  lib.path_ = path;
  return lib;
}

void* PluginLibrary::symbol(const std::string& name) const {
  dlerror();
  void* address = dlsym(handle_.get(), name.c_str());
  if (address == nullptr) {
    const char* err = dlerror();
    ir::fail(ErrorCode::Plugin, "plugin " + path_ + " does not export the symbol '" + name + "'" +
                                    (err ? std::string(" (") + err + ")" : std::string()));
  }
  return address;
}

}  // namespace plexus::plugin_host
