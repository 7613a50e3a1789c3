// The Gloo plugin's rendezvous store (plugins/collectives_gloo/kv_store.h): worker 0 serves
// it, every worker reaches it as a gloo::rendezvous::Store; a get waits for the key, and a
// server that never answers or a key never set ends in an error naming the store and key.
#include "kv_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

namespace plexus::collectives::gloo_plugin {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

// A loopback port nobody listens on now (bound, read, released).
std::string free_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return std::to_string(acceptor.local_endpoint().port());
}

// The port of this process's store (one per process, as in a worker), started on first use.
const std::string& served_port() {
  static const std::string port = [] {
    std::string p = free_port();
    serve_kv_store("127.0.0.1", p);
    return p;
  }();
  return port;
}

std::vector<char> bytes(const std::string& s) { return {s.begin(), s.end()}; }

// The message of the std::runtime_error `body` throws.
template <typename Body>
std::string error_of(Body body) {
  try {
    body();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(KvStore, ASetValueIsReadByAnotherClient) {
  const std::string& port = served_port();
  KvStoreClient writer("127.0.0.1", port, 5000ms), reader("127.0.0.1", port, 5000ms);
  writer.set("rank/0", bytes("address of worker 0"));
  writer.set("empty", {});
  EXPECT_EQ(reader.get("rank/0"), bytes("address of worker 0"));
  EXPECT_EQ(reader.get("empty"), std::vector<char>{});
  writer.set("rank/0", bytes("replaced"));
  EXPECT_EQ(reader.get("rank/0"), bytes("replaced"));
  // Serving again in the same process is a no-op (the first server stays).
  serve_kv_store("127.0.0.1", free_port());
  EXPECT_EQ(reader.get("rank/0"), bytes("replaced"));
}

TEST(KvStore, AGetWaitsUntilAnotherWorkerSetsTheKey) {
  const std::string& port = served_port();
  KvStoreClient early("127.0.0.1", port, 5000ms), late("127.0.0.1", port, 5000ms);
  std::thread setter([&] {
    std::this_thread::sleep_for(200ms);
    late.set("wait/rank/1", bytes("worker 1"));
  });
  const auto start = std::chrono::steady_clock::now();
  early.wait({"wait/rank/1"}, 5000ms);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 150ms);
  EXPECT_EQ(early.get("wait/rank/1"), bytes("worker 1"));
  setter.join();
}

TEST(KvStore, AKeyNeverSetTimesOutNamingTheStoreAndTheKey) {
  const std::string& port = served_port();
  KvStoreClient client("127.0.0.1", port, 300ms);
  const auto start = std::chrono::steady_clock::now();
  const std::string message = error_of([&] { client.get("never/rank/7"); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_THAT(message, HasSubstr("rendezvous store at 127.0.0.1:" + port));
  EXPECT_THAT(message, HasSubstr("'never/rank/7'"));
  EXPECT_THAT(message, HasSubstr("timed out after 300 ms"));
  client.set("never/rank/7", bytes("late"));  // the client reconnects after a timeout
  EXPECT_EQ(client.get("never/rank/7"), bytes("late"));
}

TEST(KvStore, NoServerIsAnErrorNamingWorker0sAddress) {
  const std::string port = free_port();  // nobody serves here
  KvStoreClient client("127.0.0.1", port, 400ms);
  const std::string message = error_of([&] { client.set("k", bytes("v")); });
  EXPECT_THAT(message, HasSubstr("could not reach the rendezvous store of worker 0 at 127.0.0.1:" + port));
}

}  // namespace
}  // namespace plexus::collectives::gloo_plugin
