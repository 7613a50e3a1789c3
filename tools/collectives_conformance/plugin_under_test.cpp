#include "plugin_under_test.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

namespace conformance {
namespace {

struct Loaded {
  std::string path;
  void* handle = nullptr;  // never closed: the tests' threads may still be unwinding at exit
  plx_collectives_plugin_entry entry = nullptr;
  const plx_collectives_plugin* table = nullptr;
};

Loaded& loaded() {
  static Loaded instance;
  return instance;
}

std::string check_table(const plx_collectives_plugin* table) {
  if (table == nullptr) return "the entry point returned NULL";
  if (table->abi_version != PLX_COLLECTIVES_ABI_VERSION) {
    return "abi_version is " + std::to_string(table->abi_version) + ", expected " +
           std::to_string(PLX_COLLECTIVES_ABI_VERSION);
  }
  if (table->struct_size < sizeof(plx_collectives_plugin)) {
    return "struct_size is " + std::to_string(table->struct_size) + ", expected at least " +
           std::to_string(sizeof(plx_collectives_plugin));
  }
  return "";
}

}  // namespace

std::string load_plugin(const std::string& path) {
  Loaded& state = loaded();
  state.path = path;
  state.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (state.handle == nullptr) return "dlopen(" + path + ") failed: " + dlerror();
  void* symbol = dlsym(state.handle, PLX_COLLECTIVES_PLUGIN_SYMBOL);
  if (symbol == nullptr) {
    return path + " does not export " PLX_COLLECTIVES_PLUGIN_SYMBOL;
  }
  state.entry = reinterpret_cast<plx_collectives_plugin_entry>(symbol);
  state.table = state.entry();
  const std::string problem = check_table(state.table);
  return problem.empty() ? "" : path + ": " + problem;
}

const plx_collectives_plugin& plugin() { return *loaded().table; }

const std::string& plugin_path() { return loaded().path; }

plx_collectives_plugin_entry plugin_entry() {
  return reinterpret_cast<plx_collectives_plugin_entry>(
      dlsym(loaded().handle, PLX_COLLECTIVES_PLUGIN_SYMBOL));
}

}  // namespace conformance
