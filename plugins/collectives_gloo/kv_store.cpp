#include "kv_store.h"

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>
#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <thread>

namespace plexus::collectives::gloo_plugin {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

void append_u32(std::vector<char>& out, size_t n) {
  const auto v = static_cast<uint32_t>(n);
  for (int byte = 0; byte < 4; ++byte) out.push_back(static_cast<char>((v >> (8 * byte)) & 0xff));
}

uint32_t read_u32(const char* in) {
  uint32_t v = 0;
  for (int byte = 0; byte < 4; ++byte) v |= static_cast<uint32_t>(static_cast<unsigned char>(in[byte])) << (8 * byte);
  return v;
}

// Keys and values are addresses and small blobs; anything larger is a stray client.
constexpr uint32_t kMaxField = 16u << 20;

class Server;

// One client connection of the server: reads requests one after the other.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Server& server) : socket_(std::move(socket)), server_(server) {}
  void start() { read_op(); }
  // Sends `value` as the answer of this session's pending get.
  void answer(const std::vector<char>& value);

 private:
  void read_op();
  void read_field(std::string* out, std::function<void()> then);
  void handle(char op);

  tcp::socket socket_;
  Server& server_;
  char op_ = 0;
  char length_[4] = {};
  std::string key_;
  std::string value_;
  std::vector<char> reply_;
};

class Server {
 public:
  Server(const std::string& host, const std::string& port) : acceptor_(io_) {
    tcp::resolver resolver(io_);
    const tcp::endpoint endpoint = *resolver.resolve(host, port, tcp::resolver::passive).begin();
    acceptor_.open(endpoint.protocol());
    acceptor_.set_option(tcp::acceptor::reuse_address(true));
    acceptor_.bind(endpoint);
    acceptor_.listen();
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~Server() {
    io_.stop();
    if (thread_.joinable()) thread_.join();
  }

  void set(const std::string& key, const std::string& value) {
    values_[key] = std::vector<char>(value.begin(), value.end());
    auto [first, last] = waiters_.equal_range(key);
    for (auto it = first; it != last; ++it) it->second->answer(values_[key]);
    waiters_.erase(first, last);
  }
  void get(const std::string& key, const std::shared_ptr<Session>& session) {
    if (auto it = values_.find(key); it != values_.end()) {
      session->answer(it->second);
    } else {
      waiters_.emplace(key, session);
    }
  }

 private:
  void accept() {
    acceptor_.async_accept([this](boost::system::error_code error, tcp::socket socket) {
      if (error) return;
      std::make_shared<Session>(std::move(socket), *this)->start();
      accept();
    });
  }

  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::map<std::string, std::vector<char>> values_;
  std::multimap<std::string, std::shared_ptr<Session>> waiters_;
  std::thread thread_;
};

void Session::read_op() {
  asio::async_read(socket_, asio::buffer(&op_, 1), [self = shared_from_this()](boost::system::error_code error, size_t) {
    if (error) return;  // the client closed: forget it
    self->read_field(&self->key_, [self] {
      if (self->op_ != 'S') return self->handle(self->op_);
      self->read_field(&self->value_, [self] { self->handle('S'); });
    });
  });
}

void Session::read_field(std::string* out, std::function<void()> then) {
  asio::async_read(socket_, asio::buffer(length_), [self = shared_from_this(), out, then](boost::system::error_code error, size_t) {
    const uint32_t n = read_u32(self->length_);
    if (error || n > kMaxField) return;
    out->assign(n, '\0');
    asio::async_read(self->socket_, asio::buffer(out->data(), n), [self, then](boost::system::error_code e, size_t) {
      if (!e) then();
    });
  });
}

void Session::handle(char op) {
  if (op == 'S') {
    server_.set(key_, value_);
    reply_.assign(1, 1);
    asio::async_write(socket_, asio::buffer(reply_), [self = shared_from_this()](boost::system::error_code e, size_t) {
      if (!e) self->read_op();
    });
  } else if (op == 'G') {
    server_.get(key_, shared_from_this());
  }  // anything else: not our protocol; drop the connection
}

void Session::answer(const std::vector<char>& value) {
  reply_.clear();
  append_u32(reply_, value.size());
  reply_.insert(reply_.end(), value.begin(), value.end());
  asio::async_write(socket_, asio::buffer(reply_), [self = shared_from_this()](boost::system::error_code e, size_t) {
    if (!e) self->read_op();
  });
}

}  // namespace

void serve_kv_store(const std::string& host, const std::string& port) {
  static std::mutex mutex;
  static std::unique_ptr<Server> server;  // until exit: later jobs' communicators use it too
  std::lock_guard lock(mutex);
  if (server) return;
  try {
    server = std::make_unique<Server>(host, port);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot serve the rendezvous store on " + host + ":" + port + ": " + e.what());
  }
}

struct KvStoreClient::Connection {
  asio::io_context io;
  tcp::socket socket{io};
};

KvStoreClient::KvStoreClient(std::string host, std::string port, std::chrono::milliseconds timeout)
    : host_(std::move(host)), port_(std::move(port)), timeout_(timeout) {}

KvStoreClient::~KvStoreClient() = default;

namespace {

// Runs `io` until `done` or `deadline`; false on the deadline (the pending operation is
// then cancelled by closing the socket and drained).
bool run_until(asio::io_context& io, tcp::socket& socket, const bool& done, Clock::time_point deadline) {
  io.restart();
  while (!done && Clock::now() < deadline) io.run_one_until(deadline);
  if (done) return true;
  boost::system::error_code ignored;
  socket.close(ignored);
  io.restart();
  io.run();
  return false;
}

// Connects to host:port, retrying until `deadline` (the server may not listen yet).
void connect(asio::io_context& io, tcp::socket& socket, const std::string& host, const std::string& port,
             Clock::time_point deadline) {
  tcp::resolver resolver(io);
  std::string last_error = "no attempt";
  while (Clock::now() < deadline) {
    boost::system::error_code error;
    const auto endpoints = resolver.resolve(host, port, error);
    if (!error) {
      bool done = false;
      asio::async_connect(socket, endpoints, [&](boost::system::error_code e, const tcp::endpoint&) {
        error = e;
        done = true;
      });
      if (run_until(io, socket, done, deadline) && !error) return;
    }
    last_error = error.message();
    socket = tcp::socket(io);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  throw std::runtime_error("could not reach the rendezvous store of worker 0 at " + host + ":" + port + " (" +
                           last_error + ")");
}

}  // namespace

std::vector<char> KvStoreClient::request(const std::string& what, const std::vector<char>& message,
                                         bool reply_is_value, std::chrono::milliseconds timeout) {
  std::lock_guard lock(mutex_);
  const Clock::time_point deadline = Clock::now() + timeout;
  if (!connection_) {
    auto c = std::make_unique<Connection>();
    connect(c->io, c->socket, host_, port_, deadline);
    connection_ = std::move(c);
  }
  Connection& c = *connection_;
  std::vector<char> reply(reply_is_value ? 4 : 1);
  boost::system::error_code error;
  bool done = false;
  asio::async_write(c.socket, asio::buffer(message), [&](boost::system::error_code e, size_t) {
    if (e) {
      error = e;
      done = true;
      return;
    }
    asio::async_read(c.socket, asio::buffer(reply), [&](boost::system::error_code e2, size_t) {
      if (e2 || !reply_is_value) {
        error = e2;
        done = true;
        return;
      }
      reply.resize(4 + read_u32(reply.data()));
      asio::async_read(c.socket, asio::buffer(reply.data() + 4, reply.size() - 4), [&](boost::system::error_code e3, size_t) {
        error = e3;
        done = true;
      });
    });
  });
  const bool finished = run_until(c.io, c.socket, done, deadline);
  if (!finished || error) {
    connection_.reset();
    throw std::runtime_error("rendezvous store at " + host_ + ":" + port_ + ": " + what + ": " +
                             (finished ? error.message()
                                       : "timed out after " + std::to_string(timeout.count()) + " ms"));
  }
  if (!reply_is_value) return {};
  return std::vector<char>(reply.begin() + 4, reply.end());
}

void KvStoreClient::set(const std::string& key, const std::vector<char>& data) {
  std::vector<char> message{'S'};
  append_u32(message, key.size());
  message.insert(message.end(), key.begin(), key.end());
  append_u32(message, data.size());
  message.insert(message.end(), data.begin(), data.end());
  request("setting '" + key + "'", message, false, timeout_);
}

std::vector<char> KvStoreClient::fetch(const std::string& key, std::chrono::milliseconds timeout) {
  std::vector<char> message{'G'};
  append_u32(message, key.size());
  message.insert(message.end(), key.begin(), key.end());
  return request("waiting for '" + key + "' (set by a worker that has not arrived)", message, true, timeout);
}

std::vector<char> KvStoreClient::get(const std::string& key) { return fetch(key, timeout_); }

void KvStoreClient::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void KvStoreClient::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  for (const std::string& key : keys) fetch(key, timeout);
}

}  // namespace plexus::collectives::gloo_plugin
