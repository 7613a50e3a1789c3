#include "core/streams/io_service.h"

#include <pthread.h>

#include <boost/asio/post.hpp>

#include <string>

namespace plexus::streams {

IoService::IoService(int threads) : guard_(boost::asio::make_work_guard(context_)) {
  for (int k = 0; k < std::max(threads, 1); ++k) {
    threads_.emplace_back([this, k] {
      const std::string name = "plx-io" + std::to_string(k);
      pthread_setname_np(pthread_self(), name.c_str());
      context_.run();
    });
  }
}

IoService::~IoService() {
  guard_.reset();  // run() returns once the posted work is done
  for (std::thread& t : threads_) t.join();
}

void IoService::post(std::function<void()> task) { boost::asio::post(context_, std::move(task)); }

}  // namespace plexus::streams
