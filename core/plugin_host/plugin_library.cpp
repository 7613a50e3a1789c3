#include "core/plugin_host/plugin_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "core/ir/error.h"

#ifndef PLEXUS_INSTALL_PLUGIN_DIR
#error "PLEXUS_INSTALL_PLUGIN_DIR must be defined by the build"
#endif

namespace plexus::runtime {

namespace {

using ir::ErrorCode;

// Folder of the shared object (or executable) this function was linked into.
std::string own_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&own_folder), &info) == 0 || info.dli_fname == nullptr) return "";
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

bool valid_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

}  // namespace

std::vector<std::pair<std::string, std::string>> PluginLibrary::search_path() {
  std::vector<std::pair<std::string, std::string>> dirs;
  if (const char* env = std::getenv("PLEXUS_PLUGIN_PATH")) {
    std::string list = env;
    size_t start = 0;
    while (start <= list.size()) {
      const size_t end = std::min(list.find(':', start), list.size());
      if (end > start) dirs.emplace_back(list.substr(start, end - start), "PLEXUS_PLUGIN_PATH");
      start = end + 1;
    }
  }
  const std::string own = own_folder();
  if (!own.empty()) dirs.emplace_back(own, "next to libplexus.so");
  dirs.emplace_back(PLEXUS_INSTALL_PLUGIN_DIR, "install folder");
  return dirs;
}

PluginLibrary PluginLibrary::open(const std::string& kind, const std::string& name) {
  if (!valid_name(name)) {
    ir::fail(ErrorCode::Plugin, kind + " plugin name '" + name + "' is not valid (letters, digits, '_' and '-' only)");
  }
  const std::string file = "libplexus-" + kind + "-" + name + ".so";
  std::string looked;
  for (const auto& [dir, why] : search_path()) {
    const std::string path = (std::filesystem::path(dir) / file).string();
    looked += "\n  " + path + " (" + why + ")";
    if (!std::filesystem::exists(path)) continue;
    dlerror();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* err = dlerror();
      ir::fail(ErrorCode::Plugin, kind + " plugin '" + name + "': cannot load " + path + ": " + (err ? err : "unknown error"));
    }
    PluginLibrary lib;
    lib.handle_ = std::shared_ptr<void>(handle, [](void* h) { dlclose(h); });
    lib.path_ = path;
    return lib;
  }
  ir::fail(ErrorCode::Plugin, kind + " plugin '" + name + "' not found; looked for " + file + " in:" + looked);
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

}  // namespace plexus::runtime
