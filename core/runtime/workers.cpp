#include "core/runtime/workers.h"

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/ir/error.h"

namespace plexus::runtime {
namespace {

// The value of `name`, or `fallback` when unset; a non-number is an error naming it.
int64_t env_number(const char* name, int64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr) return fallback;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') {
    ir::fail(ir::ErrorCode::InvalidArgument,
             std::string("environment variable ") + name + " is '" + text + "', not a number");
  }
  return value;
}

}  // namespace

std::optional<plugin_host::ClusterDefinition> cluster_definition() {
  try {
    return plugin_host::cluster_from_environment();
  } catch (const std::invalid_argument& e) {
    ir::fail(ir::ErrorCode::InvalidArgument, e.what());
  }
}

WorkerPlace workers_from_environment() {
  if (const auto cluster = cluster_definition()) {
    return WorkerPlace{static_cast<int64_t>(cluster->workers.size()), cluster->index};
  }
  const bool open_mpi = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr;
  const char* size_name = open_mpi ? "OMPI_COMM_WORLD_SIZE" : "PMI_SIZE";
  const char* rank_name = open_mpi ? "OMPI_COMM_WORLD_RANK" : "PMI_RANK";
  const WorkerPlace place{env_number(size_name, 1), env_number(rank_name, 0)};
  if (place.count < 1 || place.index < 0 || place.index >= place.count) {
    ir::fail(ir::ErrorCode::InvalidArgument, std::string("the launcher's environment says rank ") +
                                                 std::to_string(place.index) + " of " + std::to_string(place.count) +
                                                 " (" + rank_name + ", " + size_name + "): not a valid worker");
  }
  return place;
}

}  // namespace plexus::runtime
