// The rendezvous key-value store of a Gloo job (issue 18; PyTorch's TCPStore is the same
// idea): worker 0 serves it on the port of its entry in the cluster definition, and every
// worker (worker 0 too) reaches it as a gloo::rendezvous::Store, through which Gloo's
// connectFullMesh exchanges the workers' listening addresses. Boost.Asio, one connection
// per client, plain TCP.
//
// Protocol (one request at a time per connection, integers little-endian u32):
//   set: 'S' keylen key valuelen value   -> 1 byte (1)
//   get: 'G' keylen key                  -> valuelen value, once the key is set
#ifndef PLEXUS_COLLECTIVES_GLOO_KV_STORE_H
#define PLEXUS_COLLECTIVES_GLOO_KV_STORE_H

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace plexus::collectives::gloo_plugin {

/**
 * Starts serving the store on `host`:`port` (worker 0's own address: only that interface)
 * unless this process already serves it; the server lives until the process exits.
 * Throws std::runtime_error naming the address when it cannot listen. Thread-safe.
 */
void serve_kv_store(const std::string& host, const std::string& port);

/** A client of the store served by worker 0; one connection, used by one thread at a time
 *  (a mutex serialises the calls). */
class KvStoreClient final : public ::gloo::rendezvous::Store {
 public:
  /** Connects lazily to `host`:`port`; every call gives up after `timeout` (connecting
   *  retries meanwhile: worker 0 may start later) with std::runtime_error naming the
   *  server and the key. */
  KvStoreClient(std::string host, std::string port, std::chrono::milliseconds timeout);
  ~KvStoreClient() override;

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  struct Connection;
  // The value of `key`, waiting up to `timeout` for a worker to set it.
  std::vector<char> fetch(const std::string& key, std::chrono::milliseconds timeout);
  std::vector<char> request(const std::string& what, const std::vector<char>& message, bool reply_is_value,
                            std::chrono::milliseconds timeout);

  std::string host_;
  std::string port_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::unique_ptr<Connection> connection_;
};

}  // namespace plexus::collectives::gloo_plugin

#endif  // PLEXUS_COLLECTIVES_GLOO_KV_STORE_H
