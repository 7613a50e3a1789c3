#include "core/plugin_host/cluster.h"

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

namespace plexus::plugin_host {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& source, const std::string& what) {
  throw std::invalid_argument("cluster definition " + source + ": " + what);
}

// The member `key` of object `j` (`path` names it in errors); fails when it is missing.
const json& member(const json& j, const char* key, const std::string& path, const std::string& source) {
  if (!j.is_object()) bad(source, path + " is not a JSON object");
  const auto it = j.find(key);
  if (it == j.end()) bad(source, "no \"" + std::string(key) + "\" in " + path);
  return *it;
}

std::vector<std::string> worker_list(const json& j, const std::string& path, const std::string& source) {
  if (!j.is_array() || j.empty()) bad(source, path + " must be a non-empty list of \"host:port\" strings");
  std::vector<std::string> workers;
  for (const json& w : j) {
    if (!w.is_string() || w.get<std::string>().find(':') == std::string::npos) {
      bad(source, path + " holds " + w.dump() + ", not a \"host:port\" string");
    }
    workers.push_back(w.get<std::string>());
  }
  return workers;
}

int64_t worker_index(const json& j, size_t workers, const std::string& path, const std::string& source) {
  if (!j.is_number_integer() || j.get<int64_t>() < 0 || j.get<int64_t>() >= static_cast<int64_t>(workers)) {
    bad(source, path + " is " + j.dump() + ", not a worker in [0, " + std::to_string(workers) + ")");
  }
  return j.get<int64_t>();
}

ClusterDefinition from_plexus(const json& j, const std::string& source) {
  ClusterDefinition c;
  c.source = source;
  c.workers = worker_list(member(j, "workers", "the definition", source), "\"workers\"", source);
  c.index = worker_index(member(j, "index", "the definition", source), c.workers.size(), "\"index\"", source);
  if (const auto it = j.find("rendezvous"); it != j.end()) {
    if (!it->is_string() || it->get<std::string>().empty()) bad(source, "\"rendezvous\" must be a folder path");
    c.rendezvous = it->get<std::string>();
  }
  return c;
}

// TF_CONFIG (TensorFlow's MultiWorkerMirroredStrategy and seed 002's IPU variant): the
// "worker" task list of "cluster", and "task" of type "worker".
ClusterDefinition from_tf_config(const json& j, const std::string& source) {
  ClusterDefinition c;
  c.source = source;
  const json& cluster = member(j, "cluster", "the definition", source);
  c.workers = worker_list(member(cluster, "worker", "\"cluster\"", source), "\"cluster\".\"worker\"", source);
  const json& task = member(j, "task", "the definition", source);
  const json& type = member(task, "type", "\"task\"", source);
  if (type != "worker") bad(source, "\"task\".\"type\" is " + type.dump() + "; Plexus runs \"worker\" tasks only");
  c.index = worker_index(member(task, "index", "\"task\"", source), c.workers.size(), "\"task\".\"index\"", source);
  return c;
}

}  // namespace

ClusterDefinition parse_cluster(const std::string& text, const std::string& source) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) bad(source, "not valid JSON: '" + text + "'");
  return source == "TF_CONFIG" ? from_tf_config(j, source) : from_plexus(j, source);
}

std::optional<ClusterDefinition> cluster_from_environment() {
  for (const char* name : {"PLEXUS_CLUSTER", "TF_CONFIG"}) {
    if (const char* text = std::getenv(name)) return parse_cluster(text, name);
  }
  return std::nullopt;
}

ClusterFields::ClusterFields(std::optional<ClusterDefinition> cluster) : cluster_(std::move(cluster)) {
  if (!cluster_) return;
  for (const std::string& worker : cluster_->workers) addresses_.push_back(worker.c_str());
}

void ClusterFields::fill(plx_comm_config& config) const {
  config.worker_addresses = cluster_ ? addresses_.data() : nullptr;
  config.num_worker_addresses = static_cast<int64_t>(addresses_.size());
  config.worker_index = cluster_ ? cluster_->index : 0;
  config.rendezvous = cluster_ && !cluster_->rendezvous.empty() ? cluster_->rendezvous.c_str() : nullptr;
  config.cluster_source = cluster_ ? cluster_->source.c_str() : nullptr;
}

}  // namespace plexus::plugin_host
