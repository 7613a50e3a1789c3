#include "job.h"

#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <atomic>
#include <mutex>
#include <string>

#include "collectives_common/validation.h"
#include "kv_store.h"

namespace plexus::collectives::gloo_plugin {
namespace {

// One TCP device per process and host (its loop thread serves every context).
std::shared_ptr<::gloo::transport::Device> device_for(const std::string& host) {
  static std::mutex mutex;
  static std::shared_ptr<::gloo::transport::Device> device;
  static std::string device_host;
  std::lock_guard lock(mutex);
  if (!device || device_host != host) {
    ::gloo::transport::tcp::attr attr;
    attr.hostname = host;
    device = ::gloo::transport::tcp::CreateDevice(attr);
    device_host = host;
  }
  return device;
}

// The store the workers meet through, waiting up to `timeout` per key.
std::unique_ptr<::gloo::rendezvous::Store> store_for(const Job& job, std::chrono::milliseconds timeout) {
  if (job.size() == 1) return std::make_unique<::gloo::rendezvous::HashStore>();
  if (!job.rendezvous.empty()) return std::make_unique<::gloo::rendezvous::FileStore>(job.rendezvous);
  const Address server = split_address(job.workers[0]);
  if (job.rank == 0) serve_kv_store(server.host, server.port);
  return std::make_unique<KvStoreClient>(server.host, server.port, timeout);
}

std::string where_they_meet(const Job& job) {
  if (job.size() == 1) return "one worker";
  if (!job.rendezvous.empty()) return "the rendezvous folder " + job.rendezvous;
  return "worker 0's store at " + job.workers[0];
}

}  // namespace

Address split_address(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  std::string host = host_port.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return {host, colon == std::string::npos ? "" : host_port.substr(colon + 1)};
}

std::string Job::describe(int worker) const {
  std::string text = "worker " + std::to_string(worker) + " of " + std::to_string(size());
  if (!source.empty()) text += " in " + source + " (" + workers[static_cast<size_t>(worker)] + ")";
  return text;
}

Outcome job_of_config(const plx_comm_config& config, Job* out) {
  if (carries_cluster(config) && config.num_worker_addresses > 0) {
    const auto count = static_cast<size_t>(config.num_worker_addresses);
    *out = Job{{config.worker_addresses, config.worker_addresses + count},
               static_cast<int>(config.worker_index),
               config.rendezvous != nullptr ? config.rendezvous : "",
               config.cluster_source};
    return Outcome::ok();
  }
  if (config.local_replicas == config.replication_factor) {
    *out = Job{{"127.0.0.1:0"}, 0, "", ""};
    return Outcome::ok();
  }
  const std::string job = "comm_create: this process hosts " + std::to_string(config.local_replicas) + " of " +
                          std::to_string(config.replication_factor) + " replicas, a job of several workers, ";
  if (!carries_cluster(config)) {
    return Outcome::error(PLX_ERR_INVALID_ARGUMENT,
                          job + "but config->struct_size is " + std::to_string(config.struct_size) +
                              " (plugin ABI 1) and ends before the cluster definition (the workers' addresses, from "
                              "PLEXUS_CLUSTER or TF_CONFIG); the gloo plugin needs a Plexus passing plugin ABI 1.1's "
                              "config (" + std::to_string(kCommConfigSizeV1_1) + " bytes)");
  }
  return Outcome::error(PLX_ERR_UNSUPPORTED, job + "but the config carries no cluster definition (the workers' "
                                                 "addresses): start every worker with PLEXUS_CLUSTER or TF_CONFIG set");
}

Outcome connect_job(const Job& job, std::chrono::milliseconds timeout, std::chrono::milliseconds connect_timeout,
                    std::shared_ptr<::gloo::Context>* out) {
  static std::atomic<uint64_t> communicators{0};
  const std::string prefix = "plexus/communicator/" + std::to_string(communicators++);
  try {
    const std::unique_ptr<::gloo::rendezvous::Store> store = store_for(job, connect_timeout);
    ::gloo::rendezvous::PrefixStore scoped(prefix, *store);
    auto context = std::make_shared<::gloo::rendezvous::Context>(job.rank, job.size());
    context->setTimeout(connect_timeout);
    auto device = device_for(split_address(job.workers[static_cast<size_t>(job.rank)]).host);
    context->connectFullMesh(scoped, device);
    context->setTimeout(timeout);
    *out = std::move(context);
    return Outcome::ok();
  } catch (const std::exception& e) {
    const std::string what = e.what();
    const bool timed_out = what.find("imed out") != std::string::npos;
    return Outcome::error(timed_out ? PLX_ERR_TIMEOUT : PLX_ERR_RUNTIME,
                          "comm_create: " + job.describe(job.rank) + " could not meet the other workers through " +
                              where_they_meet(job) + " (every worker creates its sessions' communicators in the same order): " +
                              what);
  }
}

void linger(std::shared_ptr<::gloo::Context> context, std::chrono::milliseconds grace) {
  using Clock = std::chrono::steady_clock;
  static std::mutex mutex;
  static std::vector<std::pair<Clock::time_point, std::shared_ptr<::gloo::Context>>> lingering;
  std::vector<std::shared_ptr<::gloo::Context>> expired;  // closed outside the lock
  std::lock_guard lock(mutex);
  const Clock::time_point now = Clock::now();
  std::erase_if(lingering, [&](auto& entry) {
    if (entry.first > now) return false;
    expired.push_back(std::move(entry.second));
    return true;
  });
  lingering.emplace_back(now + grace, std::move(context));
}

}  // namespace plexus::collectives::gloo_plugin
